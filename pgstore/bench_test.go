package pgstore_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// Benchmarks of the governed write path on PostgreSQL, the same shapes as
// sqlstore's (compare the two):
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench 'Use|Get|List' -benchtime 2s
//
// sync=on is PostgreSQL's default (synchronous_commit=on: every
// acknowledged call is flushed to the WAL on disk); sync=off may lose the
// last commits when the server crashes, never corrupts (the analogue of
// sqlstore's SyncNormal).

func benchStore(b *testing.B, syncCommit string) (*pgstore.Store, string) {
	b.Helper()
	loc := newSchema(b) + "&synchronous_commit=" + syncCommit
	st, err := pgstore.Open(context.Background(), loc, pgstore.WithMaxConns(32))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	sess, err := st.Governance().Create(context.Background(), store.CreateRequest{
		AgentID: "bench", AuthorizedTools: []string{"read_file", "list_dir"},
		CallBudget: 1 << 50, TimeLimit: 24 * time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	return st, sess.ID
}

func BenchmarkUse(b *testing.B) {
	for _, sync := range []string{"on", "off"} {
		b.Run("sync="+sync+"/callers=1", func(b *testing.B) {
			st, id := benchStore(b, sync)
			req := store.UseRequest{SessionID: id, AgentID: "bench", Tools: []string{"read_file"}}
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.Governance().Use(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, callers := range []int{8, 32} {
			b.Run(fmt.Sprintf("sync=%s/callers=%d", sync, callers), func(b *testing.B) {
				st, id := benchStore(b, sync)
				req := store.UseRequest{SessionID: id, AgentID: "bench", Tools: []string{"read_file"}}
				benchParallel(b, callers, func(ctx context.Context) error {
					_, err := st.Governance().Use(ctx, req)
					return err
				})
			})
		}
	}
}

// BenchmarkUseManySessions: callers each spend their own session, the
// shape of a fleet (no row contention; PostgreSQL's commits overlap).
func BenchmarkUseManySessions(b *testing.B) {
	for _, callers := range []int{8, 32} {
		b.Run(fmt.Sprintf("sync=on/callers=%d", callers), func(b *testing.B) {
			st, _ := benchStore(b, "on")
			ids := make([]string, callers)
			for i := range ids {
				s, err := st.Governance().Create(context.Background(), store.CreateRequest{
					AgentID: "bench", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 50, TimeLimit: 24 * time.Hour,
				})
				if err != nil {
					b.Fatal(err)
				}
				ids[i] = s.ID
			}
			var next atomic.Int64
			benchParallel(b, callers, func(ctx context.Context) error {
				id := ids[next.Add(1)%int64(callers)]
				_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read_file"}})
				return err
			})
		})
	}
}

// benchParallel runs fn from exactly callers goroutines and reports
// p50/p99 latency.
func benchParallel(b *testing.B, callers int, fn func(context.Context) error) {
	b.Helper()
	var next atomic.Int64
	n := int64(b.N)
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ResetTimer()
	for i := range callers {
		wg.Go(func() {
			for next.Add(1) <= n {
				t0 := time.Now()
				if err := fn(ctx); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
}

func BenchmarkGet(b *testing.B) {
	st, id := benchStore(b, "on")
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := st.Governance().Get(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListPage lists a page of 100 of 10,000 sessions by keyset from
// the middle of the id range.
func BenchmarkListPage(b *testing.B) {
	st, _ := benchStore(b, "off")
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 10000; i += 8 {
				_, err := st.Governance().Create(ctx, store.CreateRequest{
					ID: fmt.Sprintf("s-%05d", i), AgentID: "bench", CallBudget: 1, TimeLimit: time.Hour,
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	for b.Loop() {
		p, err := st.Governance().List(ctx, store.ListFilter{After: "s-05000", Limit: 100})
		if err != nil || len(p.Items) != 100 {
			b.Fatalf("%d items, %v", len(p.Items), err)
		}
	}
}
