package adk_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// BenchmarkRunnerTurn runs the comparison's runner turn (see
// BenchmarkVsADK's turn workload) on this module's service alone, one
// turn per iteration, on the seeded session of 200 events among 20,000
// others' (seeded once per run, at synchronous=OFF), for profiling and
// allocation counts; read-ns/op is the turn's whole-session read:
//
//	cd adk && go test -run '^$' -bench RunnerTurn -benchtime 200x -benchmem -cpuprofile turn.prof
func BenchmarkRunnerTurn(b *testing.B) {
	ctx := context.Background()
	for _, sync := range []string{"FULL", "NORMAL"} {
		for _, via := range []struct {
			name string
			open benchkit.Opener
		}{{"adapter", openAdapter}, {"facet", openFacet}} {
			b.Run("sync="+sync+"/via="+via.name, func(b *testing.B) {
				sub := benchkit.Dir(b)
				seed, err := via.open(ctx, sub, "OFF")
				if err != nil {
					b.Fatal(err)
				}
				if err := benchkit.SeedTurn(ctx, seed); err != nil {
					b.Fatal(err)
				}
				if err := seed.Close(); err != nil {
					b.Fatal(err)
				}
				t, err := via.open(ctx, sub, sync)
				if err != nil {
					b.Fatal(err)
				}
				defer t.Close()
				var read time.Duration
				turn := 0
				b.ReportAllocs()
				for b.Loop() {
					d, err := benchkit.Turn(ctx, t, "t0", benchkit.TurnEvents, turn)
					if err != nil {
						b.Fatal(err)
					}
					read += d
					turn++
				}
				b.ReportMetric(float64(read.Nanoseconds())/float64(b.N), "read-ns/op")
			})
		}
	}
}
