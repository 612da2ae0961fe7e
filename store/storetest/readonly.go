package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// CheckReadOnly asserts that st, a store opened read-only, refuses a write
// of every facet with an error matching store.ErrReadOnly (and
// store.ErrStorage), and still answers reads. governedID and
// conversationID name a governed session and a conversation that exist in
// the database (a write to a missing one could be refused as not found
// before it reaches the database).
func CheckReadOnly(t *testing.T, st store.Store, governedID, conversationID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Governance().Get(ctx, governedID); err != nil {
		t.Fatalf("read of a read-only store: %v", err)
	}
	if _, err := st.Conversations().Info(ctx, conversationID); err != nil {
		t.Fatalf("read of a read-only store: %v", err)
	}
	writes := []struct {
		name string
		fn   func() error
	}{
		{"Governance.Create", func() error {
			_, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "ro-agent", CallBudget: 1})
			return err
		}},
		{"Governance.Use", func() error {
			_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: governedID, Tools: []string{}})
			if err == nil {
				// An empty batch may be answered without a write;
				// a real call must not be.
				_, err = st.Governance().Use(ctx, store.UseRequest{SessionID: governedID, Tools: []string{"ro_tool"}})
			}
			return err
		}},
		{"Governance.Close", func() error { _, err := st.Governance().Close(ctx, governedID); return err }},
		{"Governance.CloseAllForAgent", func() error {
			_, err := st.Governance().CloseAllForAgent(ctx, "ro-agent")
			return err
		}},
		{"Governance.Cleanup", func() error { _, err := st.Governance().Cleanup(ctx); return err }},
		{"Conversations.Save", func() error {
			_, err := st.Conversations().Save(ctx, store.NewConversation("ro-conversation"))
			return err
		}},
		{"Conversations.AppendMessages", func() error {
			_, err := st.Conversations().AppendMessages(ctx, conversationID, store.UserMessage("x"))
			return err
		}},
		{"Conversations.Delete", func() error { return st.Conversations().Delete(ctx, conversationID) }},
		{"Runtime.Insert", func() error {
			_, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat})
			return err
		}},
		{"AgentSessions.CreateSession", func() error {
			_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "ro", User: "u", Session: "s"}})
			return err
		}},
	}
	for _, w := range writes {
		err := w.fn()
		if !errors.Is(err, store.ErrReadOnly) || !errors.Is(err, store.ErrStorage) {
			t.Errorf("%s on a read-only store: err = %v, want store.ErrReadOnly", w.name, err)
		}
	}
	if err := st.HealthCheck(ctx); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("HealthCheck of a read-only store: err = %v, want store.ErrReadOnly", err)
	}
}
