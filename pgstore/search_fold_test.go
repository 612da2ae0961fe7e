package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// schemaCount returns a function that counts the rows a query selects in
// the schema at loc, on a connection of its own (not a store's, whose
// Close would fold the search queue).
func schemaCount(t *testing.T, loc string) func(q string) int64 {
	return func(q string) int64 {
		t.Helper()
		n, err := harness.Count(context.Background(), loc, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
}

// TestSearchFoldAndOff: on PostgreSQL an appended event is queued, not
// indexed, in its transaction, is found once by the next search (which
// folds the queue), and a deleted one is not found; WithSearchIndex(false)
// queues nothing, empties the index and makes Search answer
// store.ErrSearchDisabled; WithSearchIndex(true) indexes what is stored.
func TestSearchFoldAndOff(t *testing.T) {
	ctx := context.Background()
	loc := pgtest.NewStore(t)
	count := schemaCount(t, loc) // a connection of its own, not a store: a store's Close folds
	st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	ev := store.AgentEvent{Data: []byte(`{"author":"user","content":{"parts":[{"text":"pgfoldtoken one"}]}}`)}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
		t.Fatal(err)
	}
	if q, d := count(`SELECT count(*) FROM search_pending`), count(`SELECT count(*) FROM search_docs`); q != 1 || d != 0 {
		t.Fatalf("after the append: %d queued, %d documents; want 1, 0", q, d)
	}
	hits := func(st *pgstore.Store, want int) {
		t.Helper()
		res, err := st.Search(ctx, store.SearchQuery{Query: "pgfoldtoken"})
		if err != nil || len(res.Hits) != want {
			t.Fatalf("search: %d hits, %v; want %d", len(res.Hits), err, want)
		}
	}
	hits(st, 1)
	if q, d := count(`SELECT count(*) FROM search_pending`), count(`SELECT count(*) FROM search_docs`); q != 0 || d != 1 {
		t.Fatalf("after the search: %d queued, %d documents; want 0, 1", q, d)
	}
	hits(st, 1)
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage("pgfoldtoken message")); err != nil {
		t.Fatal(err)
	}
	hits(st, 2)
	if _, err := st.Conversations().PopMessage(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	hits(st, 1)
	st.Close()

	st, err = pgstore.Open(ctx, loc, pgstore.WithSearchIndex(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
		t.Fatal(err)
	}
	if q, d := count(`SELECT count(*) FROM search_pending`), count(`SELECT count(*) FROM search_docs`); q != 0 || d != 0 {
		t.Fatalf("index off: %d queued, %d documents; want 0, 0", q, d)
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "pgfoldtoken"}); !errors.Is(err, store.ErrSearchDisabled) {
		t.Fatalf("search with the index off: %v, want ErrSearchDisabled", err)
	}
	st.Close()

	st, err = pgstore.Open(ctx, loc, pgstore.WithSearchIndex(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hits(st, 2)
	rep, err := st.CheckSearchIndex(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
}

// TestLazyWriteSkipsSyncCommit pins that a write of derived data (the
// search fold's, sqlcore.LazyWriter) runs with synchronous_commit off
// for its own transaction only: a write after it sees the server's
// setting again.
func TestLazyWriteSkipsSyncCommit(t *testing.T) {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgtest.NewStore(t), pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	before, err := st.SyncCommitSeen(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := st.SyncCommitSeen(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if lazy != "off" {
		t.Errorf("a lazy write sees synchronous_commit %q", lazy)
	}
	after, err := st.SyncCommitSeen(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("synchronous_commit %q after a lazy write, %q before", after, before)
	}
}

// TestCloseFoldsWithoutIndexer: a store without the background indexer
// (a command-line tool's) folds what it queued when it closes; a
// read-only store cannot fold: before that Close its search matches the
// items not yet folded directly, after it reads them from the index:
// both times it finds the new event and not the deleted message,
// exactly.
func TestCloseFoldsWithoutIndexer(t *testing.T) {
	ctx := context.Background()
	loc := pgtest.NewStore(t)
	count := schemaCount(t, loc)
	st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c", store.UserMessage("pgclosetoken gone")); err != nil {
		t.Fatal(err)
	}
	if res, err := st.Search(ctx, store.SearchQuery{Query: "pgclosetoken"}); err != nil || len(res.Hits) != 1 { // folds
		t.Fatalf("before the delete: %d hits, %v; want 1", len(res.Hits), err)
	}
	if _, err := st.Conversations().PopMessage(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	ev := store.AgentEvent{Data: []byte(`{"author":"user","content":{"parts":[{"text":"pgclosetoken new"}]}}`)}
	if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM search_pending`); n != 2 {
		t.Fatalf("queued before Close: %d, want 2 (the deleted message, the new event)", n)
	}
	search := func(want int, kind store.SearchKind, pending int) {
		t.Helper()
		ro, err := pgstore.Open(ctx, loc, pgstore.WithReadOnly(true))
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		res, err := ro.Search(ctx, store.SearchQuery{Query: "pgclosetoken"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != want || (want == 1 && res.Hits[0].Kind != kind) || res.Pending != pending {
			t.Fatalf("read-only search: %+v; want %d hit(s) of kind %q, pending %d", res, want, kind, pending)
		}
	}
	search(1, store.SearchEvent, 0)
	if n := count(`SELECT count(*) FROM search_pending`); n != 2 {
		t.Fatalf("queued after the read-only store's Close: %d, want 2", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM search_pending`); n != 0 {
		t.Fatalf("queued after Close: %d, want 0", n)
	}
	search(1, store.SearchEvent, 0)
}
