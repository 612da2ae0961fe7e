package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchmarkAgentWritersIndexer appends agent events (a 1 KiB text part
// and a one-key session delta, as a runner's) from 4 goroutines, each to
// a session of its own, with the background search indexer running
// (indexer=on, the default) and without it (indexer=off), at FULL and
// NORMAL. The indexer folds the appended events into the full-text index
// in write transactions of the same single writer, so with it the
// appends share the writer with the folds. Beside the time per append it
// reports the process's CPU time per append (user and system, getrusage),
// taken until the indexer has folded every appended event (indexer=on) or
// the last append (indexer=off): the difference of the two is the fold's
// CPU per event, a figure much less sensitive to the machine's load than
// the times:
//
//	go test ./sqlstore -run '^$' -bench AgentWritersIndexer -benchtime 2000x
func BenchmarkAgentWritersIndexer(b *testing.B) {
	ctx := context.Background()
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 23)
	for _, level := range []Synchronous{SyncFull, SyncNormal} {
		for _, indexer := range []bool{true, false} {
			name := "sync=" + string(level) + "/indexer=off"
			if indexer {
				name = "sync=" + string(level) + "/indexer=on"
			}
			b.Run(name, func(b *testing.B) {
				var folded atomic.Int64
				all := make(chan struct{}, 1)
				want := atomic.Int64{}
				opts := []Option{WithSynchronous(level), WithBackgroundIndexer(indexer)}
				if indexer {
					opts = append(opts, func(c *config) {
						c.indexer.OnFold = func(n int64) {
							if folded.Add(n) >= want.Load() {
								select {
								case all <- struct{}{}:
								default:
								}
							}
						}
					})
				}
				st, err := Open(ctx, filepath.Join(b.TempDir(), "w.db"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				as := st.AgentSessions()
				const writers = 4
				for w := range writers {
					key := store.SessionKey{App: "a", User: "u", Session: "s" + strconv.Itoa(w)}
					if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
						b.Fatal(err)
					}
				}
				data, err := json.Marshal(map[string]any{"author": "user",
					"content": map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}})
				if err != nil {
					b.Fatal(err)
				}
				want.Store(int64(b.N))
				b.ResetTimer()
				cpu0 := benchCPU()
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						key := store.SessionKey{App: "a", User: "u", Session: "s" + strconv.Itoa(w)}
						for i := w; i < b.N; i += writers {
							if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
								Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: data},
								Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(strconv.Itoa(i))}}}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if indexer {
					select {
					case <-all:
					case <-time.After(10 * time.Minute):
						b.Fatalf("folded %d of %d events", folded.Load(), b.N)
					}
				}
				b.ReportMetric(float64((benchCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/append")
			})
		}
	}
}
