package pgstore_test

import (
	"context"
	"testing"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// TestMigrationSearchDocTenant: migration 26 files the search documents
// that a store-wide reindex had moved to the default tenant (as the
// triggers before it did) back under their conversation's or agent
// session's tenant.
func TestMigrationSearchDocTenant(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st := open(t, loc)
	ts, err := st.Tenant("t1")
	if err != nil {
		t.Fatal(err)
	}
	conv := store.NewConversation("c-t1")
	conv.Messages = []store.Message{store.UserMessage("a misfiled needle")}
	if _, err := ts.Conversations().Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	if _, err := ts.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	ev := store.AgentEvent{ID: "e1", Data: []byte(`{"content":{"parts":[{"text":"a misfiled needle event"}]}}`)}
	if _, err := ts.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
		t.Fatal(err)
	}
	// The documents are folded in after the writes (migration 27); a
	// check folds what is queued.
	if _, err := st.CheckSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()

	p, db, pool, err := pgstore.NewMigrationProvider(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	count := func(when, tenant string, want int) {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM search_docs WHERE tenant = $1`, tenant).Scan(&n); err != nil || n != want {
			t.Fatalf("%s: %d documents of tenant %q, %v; want %d", when, n, tenant, err, want)
		}
	}
	count("as written", "t1", 2)
	if _, err := p.DownTo(ctx, 25); err != nil {
		t.Fatalf("down to 25: %v", err)
	}
	// What a store-wide reindex under version 25's triggers did.
	if _, err := db.ExecContext(ctx, `UPDATE search_docs SET tenant = ''`); err != nil {
		t.Fatal(err)
	}
	count("misfiled", "t1", 0)
	if _, err := p.UpTo(ctx, 26); err != nil {
		t.Fatalf("up to 26: %v", err)
	}
	count("after migration 26", "t1", 2)
	count("after migration 26", "", 0)
}
