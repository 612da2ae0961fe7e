package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// idleMinuteDrift counts the agent_sessions rows whose updated_min is not
// their updated_at_ms in whole minutes (migration 30).
func idleMinuteDrift(t *testing.T, db *sql.DB) (drift, rows int) {
	t.Helper()
	if err := db.QueryRow(`SELECT count(*) FILTER (WHERE updated_min <> updated_at_ms / 60000), count(*) FROM agent_sessions`).Scan(&drift, &rows); err != nil {
		t.Fatal(err)
	}
	return drift, rows
}

// TestIdleMinuteKept: every write that moves an agent session's update
// time (create, append, fork, rewind, at times across minutes, and
// before 1970) leaves updated_min at updated_at_ms / 60000, the column the
// idle sweep's index is on (migration 30); and migrating a version 29
// file fills it for the sessions it holds.
func TestIdleMinuteKept(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "idle.db")
	clock := storetest.NewClock()
	st := openWithClock(t, path, clock)
	as := st.AgentSessions()
	br, ok := as.(store.AgentBranches)
	if !ok {
		t.Fatal("agent sessions have no branches")
	}
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		clock.Advance(25 * time.Second)
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	if _, err := br.Fork(ctx, store.ForkRequest{Key: key, At: 3, Session: "f"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if _, err := br.Rewind(ctx, store.RewindRequest{Key: key, To: 2}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)") // the store's background work may hold the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if drift, rows := idleMinuteDrift(t, db); drift != 0 || rows < 3 {
		t.Fatalf("%d of %d agent sessions have updated_min apart from their update time", drift, rows)
	}
	// A time before 1970: SQL's integer division truncates as Go's does.
	if _, err := db.Exec(`UPDATE agent_sessions SET updated_at_ms = -90001 WHERE session_id = 'f'`); err != nil {
		t.Fatal(err)
	}
	var min int64
	if err := db.QueryRow(`SELECT updated_min FROM agent_sessions WHERE session_id = 'f'`).Scan(&min); err != nil || min != -90001/60000 {
		t.Fatalf("updated_min = %d (%v), want %d", min, err, -90001/60000)
	}
	st.Close()

	p, mdb, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	if _, err := p.DownTo(ctx, 29); err != nil {
		t.Fatalf("down to 29: %v", err)
	}
	if _, err := mdb.Exec(`UPDATE agent_sessions SET updated_at_ms = updated_at_ms + 7 * 60000`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 30); err != nil {
		t.Fatalf("up to 30: %v", err)
	}
	if drift, rows := idleMinuteDrift(t, mdb); drift != 0 || rows < 3 {
		t.Fatalf("after migrating: %d of %d agent sessions have updated_min apart from their update time", drift, rows)
	}
}
