package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// evOpen opens a store on a fresh file and fills it with sessions, events
// and state, so that the planner has something to choose from.
func evOpen(t *testing.T, sessions, events int) (*Store, string) {
	t.Helper()
	path := FreshDBPath(t, "events.db")
	ctx := context.Background()
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	as := st.AgentSessions()
	for i := range sessions {
		k := store.SessionKey{App: "app", User: "u" + strconv.Itoa(i%4), Session: "s" + strconv.Itoa(i)}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k,
			State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}}); err != nil {
			t.Fatal(err)
		}
		for j := range events {
			ev := store.AgentEvent{InvocationID: "inv-" + strconv.Itoa(j/10), Data: json.RawMessage(`{"j":` + strconv.Itoa(j) + `}`)}
			if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: ev,
				Delta: store.ScopedState{User: map[string]json.RawMessage{"n": json.RawMessage(strconv.Itoa(j))}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st, path
}

// evRawDB opens the file read-only, beside the store.
func evRawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, "file:"+escapePath(path)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func evQueryPlan(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestAgentEventQueriesUseIndexes checks with EXPLAIN QUERY PLAN that the
// reads of recent events, of time windows, of pages and of sessions search
// an index instead of scanning a table, before and after ANALYZE has
// gathered statistics, and that none of them sorts.
func TestAgentEventQueriesUseIndexes(t *testing.T) {
	st, path := evOpen(t, 12, 60)
	cases := []struct {
		name  string
		query string
		args  []any
		index string // the plan must name this index ("" = any search)
	}{
		{"recent events", evRecentSQL, []any{1, 100}, "agent_events_seq (session_pk=?)"},
		// The ADK adapter's reads select the data alone, on the same index.
		{"recent events' data", evRecentDataSQL, []any{1, 100}, "agent_events_seq (session_pk=?)"},
		{"recent events' data after a time", evRecentAfterDataSQL, []any{1, 0, 0, 0, 100}, "agent_events_seq (session_pk=?)"},
		{"recent events' data up to a fork point", evRecentUpToDataSQL, []any{1, 5, 100}, "agent_events_seq (session_pk=? AND seq<?)"},
		// A time window and an invocation walk the session's log on the
		// (session, seq) index: no index of their own is maintained on
		// every append (migration 6).
		{"recent events after a time", evRecentAfterSQL, []any{1, 0, 0, 0, 100}, "agent_events_seq (session_pk=?)"},
		// A fork reads its ancestors' logs up to its fork point, and the
		// lineage, the deltas and the compaction records on indexes.
		{"recent events up to a fork point", evRecentUpToSQL, []any{1, 5, 100}, "agent_events_seq (session_pk=? AND seq<?)"},
		{"event page up to a fork point", evPageUpToSQL, []any{1, 2, 5, 100}, "agent_events_seq (session_pk=? AND seq>? AND seq<?)"},
		{"session by key with lineage", asGetLineageSQL, []any{"app", "u1", "s1", ""}, "agent_sessions_key (tenant=? AND app=? AND user_id=? AND session_id=?)"},
		{"forks of a row", lnChildrenSQL, []any{1}, "agent_sessions_lineage (lineage_parent=?)"},
		{"superseded runs of a row", lnHoldersSQL, []any{1}, "agent_sessions_superseded (superseded_of=?)"},
		{"next key of the state log", lnNextKeySQL, []any{1, "a"}, "PRIMARY KEY (session_pk=? AND key>?)"},
		{"a key's value at a position", lnKeyAtSQL, []any{1, "a", 5}, "PRIMARY KEY (session_pk=? AND key=? AND seq<?)"},
		{"latest compaction record", lnSummarySQL, []any{1, 5}, "agent_events_compactions (session_pk=? AND seq<?)"},
		{"compaction records of a row", lnCompactionsSQL, []any{1}, "agent_events_compactions (session_pk=?)"},
		{"event page", evPageSQL, []any{1, 10, 100}, "agent_events_seq (session_pk=? AND seq>?)"},
		{"event page of an invocation", evPageInvocationSQL, []any{1, "inv-2", 0, 100}, "agent_events_seq (session_pk=? AND seq>?)"},
		{"event by id", evByIDSQL, []any{1, "x"}, "agent_events_id (session_pk=? AND event_id=?)"},
		{"session by key", asGetSQL, []any{"app", "u1", "s1", "acme"}, "agent_sessions_key (tenant=? AND app=? AND user_id=? AND session_id=?)"},
		{"list an app", asListAppSQL, []any{"app", "u1", "s1", "", 10}, "agent_sessions_key"},
		{"list a user", asListUserSQL, []any{"app", "u1", "s1", "", 10}, "agent_sessions_key (tenant=? AND app=? AND user_id=? AND session_id>?)"},
		// One statement for a session's three scopes, one for a page's:
		// every branch searches its table's primary key.
		{"scopes of a session (app)", stScopesGetSQL, []any{"app", "u1", 1, ""}, "PRIMARY KEY (tenant=? AND app=?)"},
		{"scopes of a session (user)", stScopesGetSQL, []any{"app", "u1", 1, ""}, "PRIMARY KEY (tenant=? AND app=? AND user_id=?)"},
		// The session scope: its heads in the state log (migration 40),
		// found by skipping from key to key.
		{"scopes of a session (session)", stScopesGetSQL, []any{"app", "u1", 1, ""}, "PRIMARY KEY (session_pk=? AND key=? AND seq=?)"},
		{"scopes of a session (next key)", stScopesGetSQL, []any{"app", "u1", 1, ""}, "PRIMARY KEY (session_pk=? AND key>?)"},
		{"scopes of a page (users)", pageScopesSQL, []any{"app", "", "app", "", `["u1","u2"]`, `[1,2]`}, "PRIMARY KEY (tenant=? AND app=? AND user_id=?)"},
		{"scopes of a page (sessions)", pageScopesSQL, []any{"app", "", "app", "", `["u1","u2"]`, `[1,2]`}, "PRIMARY KEY (session_pk=? AND key=? AND seq=?)"},
		{"scopes of a page (next key)", pageScopesSQL, []any{"app", "", "app", "", `["u1","u2"]`, `[1,2]`}, "PRIMARY KEY (session_pk=? AND key>?)"},
		// A page of one user's sessions reads their state through a range
		// of the session key, without lists.
		{"scopes of a user's page (user)", stUserPageSQL, []any{"app", "u1", "s1", "s9", ""}, "PRIMARY KEY (tenant=? AND app=? AND user_id=?)"},
		{"scopes of a user's page (range)", stUserPageSQL, []any{"app", "u1", "s1", "s9", ""}, "agent_sessions_key (tenant=? AND app=? AND user_id=? AND session_id>? AND session_id<?)"},
		{"scopes of a user's page (sessions)", stUserPageSQL, []any{"app", "u1", "s1", "s9", ""}, "PRIMARY KEY (session_pk=? AND key=? AND seq=?)"},
		{"scopes of a user's page (next key)", stUserPageSQL, []any{"app", "u1", "s1", "s9", ""}, "PRIMARY KEY (session_pk=? AND key>?)"},
		// The names of the scopes are listed by skipping through indexes.
		{"next application (sessions)", nextAppSQL, []any{"a", ""}, "agent_sessions_key (tenant=? AND app>?)"},
		{"next application (app state)", nextAppSQL, []any{"a", ""}, "PRIMARY KEY (tenant=? AND app>?)"},
		{"next user (sessions)", nextUserSQL, []any{"app", "u", ""}, "agent_sessions_key (tenant=? AND app=? AND user_id>?)"},
		{"next user (user state)", nextUserSQL, []any{"app", "u", ""}, "PRIMARY KEY (tenant=? AND app=? AND user_id>?)"},
		// What the cascade of a session delete looks up.
		{"cascade to events", `SELECT 1 FROM agent_events WHERE session_pk = ?`, []any{1}, "(session_pk=?)"},
		{"cascade to the state log", `SELECT 1 FROM agent_state_log WHERE session_pk = ?`, []any{1}, "(session_pk=?)"},
	}
	// The state reads name their tables by aliases (h, l, s).
	aliasScan := regexp.MustCompile(`(?m)^\s*SCAN (h|l|s)\b`)
	check := func(stage string) {
		db := evRawDB(t, path)
		for _, c := range cases {
			plan := evQueryPlan(t, db, c.query, c.args...)
			if strings.Contains(plan, "SCAN agent_") || aliasScan.MatchString(plan) {
				t.Errorf("%s: %s scans a table:\n%s", stage, c.name, plan)
			}
			if strings.Contains(plan, "TEMP B-TREE") {
				t.Errorf("%s: %s sorts in a temporary b-tree:\n%s", stage, c.name, plan)
			}
			if c.index != "" && !strings.Contains(plan, c.index) {
				t.Errorf("%s: %s does not use %q:\n%s", stage, c.name, c.index, plan)
			}
		}
	}
	check("without statistics")
	if err := st.write(context.Background(), func(tx *wtx) error {
		_, err := tx.exec("ANALYZE")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	check("after ANALYZE")
}

// TestAgentSessionDeleteLeavesNoRows checks the cascade at the row level:
// no event and no session-state row of a deleted session remains, and
// foreign keys hold.
func TestAgentSessionDeleteLeavesNoRows(t *testing.T) {
	st, path := evOpen(t, 3, 40)
	ctx := context.Background()
	db := evRawDB(t, path)
	var pk int64
	if err := db.QueryRow(`SELECT pk FROM agent_sessions WHERE app = 'app' AND user_id = 'u1' AND session_id = 's1'`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM agent_events WHERE session_pk = ?`, pk); n != 40 {
		t.Fatalf("%d events before delete", n)
	}
	if err := st.AgentSessions().DeleteSession(ctx, store.SessionKey{App: "app", User: "u1", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM agent_events WHERE session_pk = ?`, pk); n != 0 {
		t.Fatalf("%d orphan events after delete", n)
	}
	if n := count(`SELECT count(*) FROM agent_state_log WHERE session_pk = ?`, pk); n != 0 {
		t.Fatalf("%d orphan session state rows after delete", n)
	}
	if n := count(`SELECT count(*) FROM agent_events`); n != 80 {
		t.Fatalf("%d events of the other sessions remain, want 80", n)
	}
	if n := count(`SELECT count(*) FROM agent_user_state WHERE app = 'app' AND user_id = 'u1'`); n != 1 {
		t.Fatalf("user state of the deleted session's user: %d rows, want 1 (it outlives sessions)", n)
	}
	rows, err := db.Query(`PRAGMA foreign_key_check`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("foreign_key_check reports violations")
	}
}

// TestAgentEventDataStoredAsText checks that event payloads and state
// values are stored as JSON text (readable by SQLite's JSON functions),
// not as blobs.
func TestAgentEventDataStoredAsText(t *testing.T) {
	_, path := evOpen(t, 1, 3)
	db := evRawDB(t, path)
	var typ string
	var j int
	if err := db.QueryRow(`SELECT typeof(data), data->>'j' FROM agent_events ORDER BY seq DESC LIMIT 1`).Scan(&typ, &j); err != nil {
		t.Fatal(err)
	}
	if typ != "text" || j != 2 {
		t.Fatalf("event data stored as %s, j = %d", typ, j)
	}
	if err := db.QueryRow(`SELECT typeof(value) FROM agent_user_state LIMIT 1`).Scan(&typ); err != nil {
		t.Fatal(err)
	}
	if typ != "text" {
		t.Fatalf("state value stored as %s", typ)
	}
}
