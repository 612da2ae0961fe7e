package sqlstore

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// syncLevel returns the write connection's synchronous level as seen by a
// write request (1 NORMAL, 2 FULL), lazy or not.
func syncLevel(t *testing.T, w *writer, lazy bool) int {
	t.Helper()
	var level int
	fn := func(tx *wtx) error { return tx.scan("PRAGMA synchronous", nil, &level) }
	var err error
	if lazy {
		err = w.doLazy(context.Background(), fn)
	} else {
		err = w.do(context.Background(), fn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return level
}

// TestLazyWriteCommitsWithoutFsync pins that at FULL a lazy write (the
// search fold's) runs at NORMAL, and that the next durable write is at
// FULL again; at NORMAL both are at NORMAL.
func TestLazyWriteCommitsWithoutFsync(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "l.db"), WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, c := range []struct {
		lazy bool
		want int
	}{{false, 2}, {true, 1}, {true, 1}, {false, 2}, {true, 1}, {false, 2}} {
		if got := syncLevel(t, st.w, c.lazy); got != c.want {
			t.Errorf("write %d (lazy %v): synchronous %d, want %d", i, c.lazy, got, c.want)
		}
	}
	normal, err := Open(ctx, filepath.Join(t.TempDir(), "n.db"), WithSynchronous(SyncNormal), WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer normal.Close()
	for _, lazy := range []bool{true, false} {
		if got := syncLevel(t, normal.w, lazy); got != 1 {
			t.Errorf("NORMAL store, lazy %v: synchronous %d", lazy, got)
		}
	}
}

// TestLazyBatchTakesNoDurableRequest pins that at FULL a transaction
// begun by a lazy request takes no durable one (which would then commit
// without its fsync), while a durable transaction may take lazy ones; at
// NORMAL they share transactions.
func TestLazyBatchTakesNoDurableRequest(t *testing.T) {
	w := &writer{maxBatch: 8, lazyNormal: true}
	lazy := func() *writeReq { return &writeReq{lazy: true, done: make(chan struct{})} }
	durable := func() *writeReq { return &writeReq{done: make(chan struct{})} }
	l1, d1, l2 := lazy(), durable(), lazy()
	w.queue = []*writeReq{l1, l2, d1, lazy()}
	if got := w.take(nil); len(got) != 2 || got[0] != l1 || got[1] != l2 {
		t.Fatalf("lazy batch took %d requests", len(got))
	}
	if len(w.queue) != 2 || w.queue[0] != d1 {
		t.Fatalf("%d requests left queued", len(w.queue))
	}
	if got := w.take(nil); len(got) != 2 || got[0] != d1 || !got[1].lazy {
		t.Fatalf("durable batch took %d requests", len(got))
	}
	// At NORMAL (no lazy level), requests share transactions as before.
	normal := &writer{maxBatch: 8}
	normal.queue = []*writeReq{lazy(), durable(), lazy()}
	if got := normal.take(nil); len(got) != 3 {
		t.Fatalf("at NORMAL a lazy batch took %d of 3 requests", len(got))
	}
}

// TestSearchFoldIsLazy pins that the search fold writes lazily (at
// NORMAL in a FULL store), and an append after it is durable again.
func TestSearchFoldIsLazy(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "f.db"), WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	as := st.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	append1 := func() {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{Data: json.RawMessage(`{"author":"user","content":{"parts":[{"text":"lazy fold"}]}}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	append1()
	if st.w.lowered {
		t.Fatal("an append left the writer at NORMAL")
	}
	r, err := st.Search(ctx, store.SearchQuery{Query: "lazy fold"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hits) != 1 {
		t.Fatalf("%d hits", len(r.Hits))
	}
	if !st.w.lowered {
		t.Error("the search's fold did not write lazily")
	}
	append1()
	if st.w.lowered {
		t.Error("the append after a fold ran at NORMAL")
	}
}

// TestFoldRunsOnlyItsKindsStatements pins that a fold batch of agent
// events runs the event documents' INSERT and not those of the other
// kinds (messages, traces, artifacts, runs), which would find nothing.
func TestFoldRunsOnlyItsKindsStatements(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	inserts := map[string]int{}
	st, err := Open(ctx, filepath.Join(t.TempDir(), "k.db"), WithBackgroundIndexer(false),
		func(c *config) {
			c.faults = func(q string) error {
				if i := strings.Index(q, "INSERT INTO search_docs"); i >= 0 {
					if j := strings.Index(q, "SELECT '"); j >= 0 {
						kind := q[j+8:]
						mu.Lock()
						inserts[kind[:strings.IndexByte(kind, '\'')]]++
						mu.Unlock()
					}
				}
				return nil
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	as := st.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{Data: json.RawMessage(`{"author":"user","content":{"parts":[{"text":"kinds of a batch"}]}}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := st.Search(ctx, store.SearchQuery{Query: "kinds of a batch"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := maps.Clone(inserts)
	mu.Unlock()
	if len(r.Hits) != 3 || got["event"] != 1 || len(got) != 1 {
		t.Fatalf("%d hits; fold INSERTs run per kind: %v", len(r.Hits), got)
	}
}

// TestIndexerRenewsLeaseAtHalfTTL pins that the background indexer writes
// its lease when it takes it and then only once half of it has run, not
// in every fold batch.
func TestIndexerRenewsLeaseAtHalfTTL(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC).UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	start := clock.Load()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "h.db"), WithBackgroundIndexer(false), WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	as := st.AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	folded := make(chan int64, 16)
	ix := st.core.StartIndexer(sqlcore.IndexerConfig{Interval: time.Millisecond, LeaseTTL: 10 * time.Second,
		OnFold: func(n int64) { folded <- n }})
	defer ix.Stop()
	leaseAfterFold := func() int64 {
		t.Helper()
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{Data: json.RawMessage(`{"author":"user","content":{"parts":[{"text":"lease"}]}}`)}}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-folded:
		case <-time.After(time.Minute):
			t.Fatal("the indexer folded nothing")
		}
		var until int64
		if err := st.reads.QueryRowContext(ctx, `SELECT expires_at_ms FROM sweep_lease WHERE name = 'search_index'`).Scan(&until); err != nil {
			t.Fatal(err)
		}
		return until
	}
	if got := leaseAfterFold(); got != start+10_000 {
		t.Fatalf("lease until %d, want %d", got-start, 10_000)
	}
	clock.Add(4_000)
	if got := leaseAfterFold(); got != start+10_000 {
		t.Errorf("4 s later: lease until %d, want it unchanged (%d)", got-start, 10_000)
	}
	clock.Add(2_000)
	if got := leaseAfterFold(); got != start+16_000 {
		t.Errorf("6 s later: lease until %d, want renewed to %d", got-start, 16_000)
	}
}
