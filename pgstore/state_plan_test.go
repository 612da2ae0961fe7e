package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// analyzedNode is a node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan, with
// the rows it read.
type analyzedNode struct {
	NodeType string         `json:"Node Type"`
	Relation string         `json:"Relation Name"`
	Rows     float64        `json:"Actual Rows"`
	Loops    float64        `json:"Actual Loops"`
	Filtered float64        `json:"Rows Removed by Filter"`
	Plans    []analyzedNode `json:"Plans"`
}

// rowsOf sums the rows the plan's scans of relation read: those they
// returned and those their filters removed, over all their loops.
func (n analyzedNode) rowsOf(relation string) float64 {
	var sum float64
	if n.Relation == relation {
		sum += (n.Rows + n.Filtered) * n.Loops
	}
	for _, c := range n.Plans {
		sum += c.rowsOf(relation)
	}
	return sum
}

// A session's current state is its keys' heads in agent_state_log
// (migration 40). Reading it skips from key to key: the rows read grow
// with the number of keys, not with the length of the log. The session
// here has 4 keys and 300 logged values of one of them, beside 50,000
// logged values of another session; the read of its state must touch a
// few rows per key (a scan of the session's log range would read the 300,
// a scan of the table all of them), with and without statistics.
func TestSessionStateReadSkipsTheLog(t *testing.T) {
	ctx := context.Background()
	loc := pgtest.NewStore(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()
	key := store.SessionKey{App: "app", User: "u", Session: "long"}
	initial := map[string]json.RawMessage{"a": json.RawMessage(`1`), "b": json.RawMessage(`2`), "c": json.RawMessage(`3`)}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key, State: store.ScopedState{Session: initial}}); err != nil {
		t.Fatal(err)
	}
	const appends = 300
	for i := range appends {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: json.RawMessage(`{}`)},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.State.Session) != 4 || string(got.State.Session["turn"]) != fmt.Sprint(appends-1) {
		t.Fatalf("session state %s, want a, b, c and turn = %d", got.State.Session, appends-1)
	}
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pk int64
	if err := conn.QueryRow(ctx, `SELECT pk FROM agent_sessions WHERE session_id = 'long'`).Scan(&pk); err != nil {
		t.Fatal(err)
	}
	// Other sessions' logs: a table of this size is read by index, as a
	// production one is (a table of a few pages is scanned whole, which
	// costs less).
	other := store.SessionKey{App: "app", User: "u", Session: "other"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: other}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO agent_state_log (session_pk, key, seq, value, tenant)
		SELECT pk, 'k' || (g % 50), g, '1', '' FROM agent_sessions, generate_series(1, 50000) AS g WHERE session_id = 'other'`); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+pgstore.Rebind(sqlcore.Statements["stScopesGet"]),
			"app", "u", pk, "").Scan(&plan); err != nil {
			t.Fatal(err)
		}
		var out []struct {
			Plan analyzedNode `json:"Plan"`
		}
		if err := json.Unmarshal(plan, &out); err != nil || len(out) != 1 {
			t.Fatalf("%s: plan %s: %v", stage, plan, err)
		}
		// Per key: its first entry (the skip), and its head; and the
		// step that finds no key after the last.
		if rows := out[0].Plan.rowsOf("agent_state_log"); rows > 3*4+3 {
			t.Errorf("%s: reading the state of 4 keys read %.0f rows of agent_state_log, want at most %d:\n%s", stage, rows, 3*4+3, plan)
		}
	}
	check("without statistics")
	if _, err := conn.Exec(ctx, "ANALYZE agent_state_log, agent_sessions"); err != nil {
		t.Fatal(err)
	}
	check("after ANALYZE")
}
