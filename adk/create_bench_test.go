package adk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// BenchmarkCreateNormal creates sessions through the service at
// synchronous=NORMAL, one per iteration (no state, as the comparison's
// create workload), for CPU profiles and allocation counts of a create:
//
//	cd adk && go test -run '^$' -bench CreateNormal -benchtime 3000x -benchmem -cpuprofile create.prof
func BenchmarkCreateNormal(b *testing.B) {
	ctx := context.Background()
	t, err := openAdapter(ctx, benchkit.Dir(b), "NORMAL")
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		if err := t.Create(ctx, "bench", "u", fmt.Sprintf("s%07d", i), nil); err != nil {
			b.Fatal(err)
		}
	}
}
