package adk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/sqltest"
)

// BenchmarkWritesNormal times a create and an append of a runner event
// (benchkit.Event's shapes, as the comparison's append workloads) at
// synchronous=NORMAL, one per iteration, through the adapter
// (via=adapter), the adapter on a store with its search index off
// (via=noindex: what the append costs without the indexer's folds) and the floor
// (via=floor: the same rows and nothing else, see floorTarget), each on a
// fresh copy of the migrated template. For CPU profiles and allocation
// counts of the Go code between the floor and the adapter:
//
//	cd adk && go test -run '^$' -bench 'WritesNormal/op=append/via=adapter$' -benchtime 5000x -benchmem -cpuprofile append.prof
func BenchmarkWritesNormal(b *testing.B) {
	ctx := context.Background()
	vias := []struct {
		name string
		open benchkit.Opener
	}{
		{"adapter", openAdapter},
		{"noindex", openAdapterNoIndex},
		{"floor", openFloor},
	}
	for _, op := range []string{"create", "append"} {
		for _, via := range vias {
			b.Run("op="+op+"/via="+via.name, func(b *testing.B) {
				dir := b.TempDir()
				sqltest.Seed(b, filepath.Join(dir, "sessions.db"))
				t, err := via.open(ctx, dir, "NORMAL")
				if err != nil {
					b.Fatal(err)
				}
				defer t.Close()
				var h any
				if op == "append" {
					if err := t.Create(ctx, "bench", "u", "a", nil); err != nil {
						b.Fatal(err)
					}
					if h, err = t.Handle(ctx, "bench", "u", "a"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if op == "create" {
						err = t.Create(ctx, "bench", "u", fmt.Sprintf("s%07d", i), nil)
					} else {
						err = t.Append(ctx, h, benchkit.Event(i))
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFloorEncode times the encoding the floor does inside its timed
// part for an append (floorTarget.Append: the event's document and its
// delta's values, benchkit.Event's shapes), to subtract from its time
// where the floor of the database writes alone is wanted:
//
//	cd adk && go test -run '^$' -bench FloorEncode -benchmem
func BenchmarkFloorEncode(b *testing.B) {
	evs := make([]*session.Event, 64)
	for i := range evs {
		evs[i] = benchkit.Event(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ev := evs[i%len(evs)]
		i++
		data, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		d, err := encodeFloorDelta(ev.Actions.StateDelta)
		if err != nil {
			b.Fatal(err)
		}
		if len(data) == 0 || len(d.app)+len(d.user)+len(d.session) != len(ev.Actions.StateDelta) {
			b.Fatal("nothing encoded")
		}
	}
}
