package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// fsyncRate measures the disk's fsync rate F in dir the way sessionctl
// bench does: a 4 KiB write and an fsync of one file, in a loop, for d.
func fsyncRate(b *testing.B, dir string, d time.Duration) float64 {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		if _, err := f.WriteAt(buf, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkGroupCommitVsFsync is the disk's limit of issue 15: W writers
// append events (about 1 KiB each, with a one-key state delta) to
// sessions of their own at synchronous=FULL, and the throughput is
// compared with the fsync rate F of the same directory, measured right
// before and after (their mean). Metrics: appends/s, F, appends/s ÷ F
// (the goal with 4 writers: at least 3.5), and appends per commit (every
// commit is one fsync of the WAL):
//
//	go test ./sqlstore -run '^$' -bench GroupCommitVsFsync -benchtime 3s
func BenchmarkGroupCommitVsFsync(b *testing.B) {
	data, _ := json.Marshal(map[string]any{"author": "model", "content": map[string]any{"role": "model",
		"parts": []any{map[string]any{"text": strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)}}}})
	for _, writers := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			dir := b.TempDir()
			if d := os.Getenv("BENCH_DIR"); d != "" {
				dir = d
			}
			var commits atomic.Int64
			st, err := sqlstore.Open(context.Background(), filepath.Join(b.TempDir(), "gc.db"),
				sqlstore.WithFaults(func(q string) error {
					if q == "COMMIT" {
						commits.Add(1)
					}
					return nil
				}))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			as := st.AgentSessions()
			ctx := context.Background()
			keys := make([]store.SessionKey, writers)
			for i := range keys {
				keys[i] = store.SessionKey{App: "bench", User: "u", Session: fmt.Sprintf("w%d", i)}
				if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: keys[i]}); err != nil {
					b.Fatal(err)
				}
			}
			f1 := fsyncRate(b, dir, time.Second)
			commits.Store(0)
			var next atomic.Int64
			n := int64(b.N)
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					for i := 0; next.Add(1) <= n; i++ {
						_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: keys[w],
							Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: data},
							Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}}})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			rate := float64(b.N) / b.Elapsed().Seconds()
			f := (f1 + fsyncRate(b, dir, time.Second)) / 2
			b.ReportMetric(rate, "appends/s")
			b.ReportMetric(f, "fsync/s")
			b.ReportMetric(rate/f, "x-fsync")
			if c := commits.Load(); c > 0 {
				b.ReportMetric(float64(b.N)/float64(c), "appends/commit")
			}
		})
	}
}
