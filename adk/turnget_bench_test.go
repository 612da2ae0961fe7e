package adk_test

import (
	"context"
	"testing"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// BenchmarkTurnGet reads the runner turn's whole session (the seeded
// session of 200 events plus 100 turns' 200, about 400 events, among
// 20,000 others') through the service without its read cache, one read
// per iteration: the cost of the turn's get after a write, which no cache
// serves, alone, for CPU profiles and allocation counts:
//
//	cd adk && go test -run '^$' -bench TurnGet -benchtime 2000x -benchmem -cpuprofile get.prof
func BenchmarkTurnGet(b *testing.B) {
	ctx := context.Background()
	sub := benchkit.Dir(b)
	seed, err := openAdapter(ctx, sub, "OFF")
	if err != nil {
		b.Fatal(err)
	}
	if err := benchkit.SeedTurn(ctx, seed); err != nil {
		b.Fatal(err)
	}
	for turn := range 100 { // the session a runner reads at the comparison's last turns
		if _, err := benchkit.Turn(ctx, seed, "t0", benchkit.TurnEvents, turn); err != nil {
			b.Fatal(err)
		}
	}
	if err := seed.Close(); err != nil {
		b.Fatal(err)
	}
	t, err := openAdapterNoCache(ctx, sub, "NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	want := benchkit.TurnEvents + 200
	b.ReportAllocs()
	for b.Loop() {
		_, n, err := t.Read(ctx, "bench", "u", "t0")
		if err != nil {
			b.Fatal(err)
		}
		if n != want {
			b.Fatalf("read %d events, want %d", n, want)
		}
	}
}
