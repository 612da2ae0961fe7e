package sqlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// Benchmarks of the governed write path. Compare Use with the raw baseline
// (a prepared one-row UPDATE in its own transaction on the same kind of
// file) to see what the checks cost:
//
//	go test ./sqlstore -run '^$' -bench 'Use|Raw' -benchtime 2s

func benchStore(b *testing.B, sync Synchronous) (*Store, string) {
	b.Helper()
	st, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), WithSynchronous(sync))
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
	for _, sync := range []Synchronous{SyncFull, SyncNormal} {
		b.Run("sync="+string(sync)+"/callers=1", func(b *testing.B) {
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

// benchParallel runs fn from exactly callers goroutines (b.RunParallel
// ties goroutines to GOMAXPROCS) and reports p50/p99 latency.
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

// BenchmarkRawUpdate is the baseline: one prepared single-row UPDATE per
// BEGIN IMMEDIATE … COMMIT on one connection, with the store's pragmas.
func BenchmarkRawUpdate(b *testing.B) {
	for _, sync := range []Synchronous{SyncFull, SyncNormal} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			cfg := defaultConfig()
			cfg.sync = sync
			db, err := sqlx.Open(driverName, writeDSN(filepath.Join(b.TempDir(), "raw.db"), &cfg))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT;
				INSERT INTO t VALUES (1, 0)`); err != nil {
				b.Fatal(err)
			}
			conn, err := db.Connx(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			begin, _ := conn.PrepareContext(ctx, "BEGIN IMMEDIATE")
			upd, _ := conn.PrepareContext(ctx, "UPDATE t SET n = n + 1 WHERE id = 1")
			commit, _ := conn.PrepareContext(ctx, "COMMIT")
			b.ResetTimer()
			for b.Loop() {
				if _, err := begin.Exec(); err != nil {
					b.Fatal(err)
				}
				if _, err := upd.Exec(); err != nil {
					b.Fatal(err)
				}
				if _, err := commit.Exec(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	st, id := benchStore(b, SyncFull)
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
	st, _ := benchStore(b, SyncNormal)
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
