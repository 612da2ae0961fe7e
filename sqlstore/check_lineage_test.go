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

// TestCheckConversationForkWithMissingParent: doctor's documents check
// fails a conversation fork whose lineage parent is gone, and passes the
// store before the damage and after its parent's ordinary delete.
func TestCheckConversationForkWithMissingParent(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "sessions.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Conversations()
	for _, id := range []string{"p", "q"} {
		conv := store.NewConversation(id)
		conv.Messages = []store.Message{store.UserMessage("a"), store.UserMessage("b")}
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: id, At: 0, NewID: id + "-fork"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, "q"); err != nil { // its fork now reads a retired history
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, byName, _ := checkResults(t, path, check.Options{}); byName["documents"].Status != check.OK {
		t.Fatalf("documents of a sound store with forks: %+v", byName["documents"])
	}
	if _, err := openSQL(t, path, false).Exec(`DELETE FROM conversations WHERE id = 'p'`); err != nil {
		t.Fatal(err)
	}
	rep, byName, _ := checkResults(t, path, check.Options{})
	d := byName["documents"]
	if !rep.Failed() || d.Status != check.Fail || !strings.Contains(d.Detail, "conversations p-fork") || !strings.Contains(d.Detail, "(lineage)") {
		t.Fatalf("documents after the parent went: %+v", d)
	}
}
