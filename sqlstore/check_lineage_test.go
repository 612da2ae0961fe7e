package sqlstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestCheckForkWithMissingParent: doctor's documents check fails a fork
// whose lineage parent row is gone (the events up to its fork point with
// it), and passes the same store before the damage.
func TestCheckForkWithMissingParent(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "sessions.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	as := st.AgentSessions()
	key := store.SessionKey{App: "a", User: "u", Session: "parent"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 2, Session: "fork"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, byName, _ := checkResults(t, path, check.Options{}); byName["documents"].Status != check.OK {
		t.Fatalf("documents of a sound store with a fork: %+v", byName["documents"])
	}
	// The store never removes a row a fork reads; a tool that deletes rows
	// by hand can.
	if _, err := openSQL(t, path, false).Exec(`DELETE FROM agent_sessions WHERE session_id = 'parent'`); err != nil {
		t.Fatal(err)
	}
	rep, byName, _ := checkResults(t, path, check.Options{})
	d := byName["documents"]
	if !rep.Failed() || d.Status != check.Fail || !strings.Contains(d.Detail, "agent_sessions a/u/fork row") || !strings.Contains(d.Detail, "(lineage)") {
		t.Fatalf("documents after the parent row went: %+v", d)
	}
}
