package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestMigrationStateHeads: migration 40 moves each session's current
// state from agent_session_state into agent_state_log, as the heads of
// its keys, with the values as stored. A session's state reads the same
// before and after, plaintext and sealed (the sealed values keep their
// associated data, so they open without the key being involved), its
// down step gives the table back, and the state at a position (a rewind)
// still reads the log without the heads.
func TestMigrationStateHeads(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "heads.db")
	keys := testProvider(t)
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(keys))
	if err != nil {
		t.Fatal(err)
	}
	agents := st.AgentSessions()
	sealedKey := store.SessionKey{App: "app", User: "u", Session: "sealed"}
	if _, err := agents.CreateSession(ctx, store.CreateAgentSessionRequest{Key: sealedKey,
		State: store.ScopedState{Session: map[string]json.RawMessage{"init": json.RawMessage(`"i"`)}}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := agents.AppendEvent(ctx, store.AppendEventRequest{Key: sealedKey,
			Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: json.RawMessage(`{}`)},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]json.RawMessage{"init": json.RawMessage(`"i"`), "turn": json.RawMessage(`3`)}
	check := func(stage string, s *sqlstore.Store, key store.SessionKey, want map[string]json.RawMessage) {
		t.Helper()
		got, err := s.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key})
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		if !maps.EqualFunc(got.State.Session, want, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
			t.Errorf("%s: %s's session state %s, want %s", stage, key.Session, got.State.Session, want)
		}
	}
	check("at 40", st, sealedKey, want)
	st.Close()

	p, db, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := p.DownTo(ctx, 39); err != nil {
		t.Fatalf("down to 39: %v", err)
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM agent_session_state`); n != 2 {
		t.Errorf("down to 39: %d rows of agent_session_state, want the 2 heads", n)
	}
	if n := count(`SELECT count(*) FROM agent_state_log`); n != 3 {
		t.Errorf("down to 39: %d rows of agent_state_log, want the 3 logged values", n)
	}
	// A session as version 39 wrote it: its current state in
	// agent_session_state only (a key set without an event has no log).
	if _, err := db.Exec(`INSERT INTO agent_sessions (app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms)
		VALUES ('app', 'u', 'old', 2, 1, 1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO agent_events (session_pk, seq, event_id, ts_us, data)
		SELECT pk, 1, 'o1', 1, '{}' FROM agent_sessions WHERE session_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO agent_state_log (session_pk, key, seq, value)
		SELECT pk, 'a', 1, '1' FROM agent_sessions WHERE session_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO agent_session_state (session_pk, key, value)
		SELECT pk, k, v FROM agent_sessions, (SELECT 'a' AS k, '1' AS v UNION ALL SELECT 'b', '"set alone"')
		WHERE session_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 40); err != nil {
		t.Fatalf("up to 40: %v", err)
	}
	if n := count(`SELECT count(*) FROM sqlite_schema WHERE name = 'agent_session_state'`); n != 0 {
		t.Errorf("up to 40: agent_session_state is still there")
	}
	if n := count(`SELECT count(*) FROM agent_state_log WHERE seq = 9223372036854775807`); n != 4 {
		t.Errorf("up to 40: %d heads, want 4", n)
	}
	db.Close()

	st, err = sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(keys))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	check("down and up", st, sealedKey, want)
	oldKey := store.SessionKey{App: "app", User: "u", Session: "old"}
	check("written at 39", st, oldKey, map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`"set alone"`)})
	// The state at a position reads the log, never a head: rewinding the
	// sealed session to its first event gives that event's state.
	if _, err := st.AgentSessions().(store.AgentBranches).Rewind(ctx, store.RewindRequest{Key: sealedKey, To: 1}); err != nil {
		t.Fatal(err)
	}
	check("rewound to 1", st, sealedKey, map[string]json.RawMessage{"init": json.RawMessage(`"i"`), "turn": json.RawMessage(`1`)})
	// Every key's head is one row after the rewind too: the superseded
	// run's logged values moved, the heads did not.
	var heads, logged int
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE seq = 9223372036854775807), count(*) FILTER (WHERE seq < 9223372036854775807)
		FROM agent_state_log WHERE session_pk = (SELECT pk FROM agent_sessions WHERE session_id = 'sealed' AND retired = 0)`).Scan(&heads, &logged); err != nil {
		t.Fatal(err)
	}
	if heads != 2 || logged != 1 {
		t.Errorf("after the rewind the session holds %d heads and %d logged values, want 2 and 1", heads, logged)
	}
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE seq = 9223372036854775807), count(*) FILTER (WHERE seq < 9223372036854775807)
		FROM agent_state_log WHERE session_pk = (SELECT pk FROM agent_sessions WHERE session_id = 'sealed' AND retired = 2)`).Scan(&heads, &logged); err != nil {
		t.Fatal(err)
	}
	if heads != 0 || logged != 2 {
		t.Errorf("after the rewind its superseded run holds %d heads and %d logged values, want 0 and 2", heads, logged)
	}
}
