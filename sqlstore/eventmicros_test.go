package sqlstore_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestEventMillisMigrateToMicros: a database written before migration 6
// stored event timestamps in milliseconds (ts_ms); opening it with this
// binary scales them, so that every event reads back at the same instant
// (and time windows still select it exactly), and new events keep their
// microseconds.
func TestEventMillisMigrateToMicros(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	p, db, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 4); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	before := time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
	for _, q := range []string{
		`INSERT INTO agent_sessions (pk, app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms)
			VALUES (1, 'app', 'u', 's', 3, 2, 0, 0)`,
		`INSERT INTO agent_events (session_pk, seq, event_id, invocation_id, ts_ms, data)
			VALUES (1, 1, 'a', 'inv', ` + strconv.FormatInt(at.UnixMilli(), 10) + `, '{}')`,
		`INSERT INTO agent_events (session_pk, seq, event_id, invocation_id, ts_ms, data)
			VALUES (1, 2, 'b', 'inv', ` + strconv.FormatInt(before.UnixMilli(), 10) + `, '{}')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	got, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || !got.Events[0].Timestamp.Equal(at) || !got.Events[1].Timestamp.Equal(before) {
		t.Fatalf("migrated events %+v, want timestamps %v and %v", got.Events, at, before)
	}
	win, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, After: at})
	if err != nil || len(win.Events) != 1 || win.Events[0].ID != "a" {
		t.Fatalf("window at %v: %+v, %v", at, win.Events, err)
	}
	fine := at.Add(time.Second + 123*time.Microsecond)
	res, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
		Event: store.AgentEvent{ID: "c", Timestamp: fine, Data: []byte(`{}`)}})
	if err != nil || !res.Event.Timestamp.Equal(fine) {
		t.Fatalf("append after migration: %+v, %v", res.Event, err)
	}
}
