package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestTenantView: what code written against Store does through a
// TenantView lands in the tenant's rows only: the whole store (the default
// tenant) and another tenant do not see it, the tenant's handle does, and
// counts, search and retention (holds) are the tenant's; the schema
// version and backend are the whole store's.
func TestTenantView(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	acme, err := st.Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.Tenant("other")
	if err != nil {
		t.Fatal(err)
	}
	var v store.Store = store.TenantView{Store: st, Tenant: acme}
	if _, err := v.Governance().Create(ctx, store.CreateRequest{ID: "g1", AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := v.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
		t.Fatal(err)
	}
	if err := v.Retention().Hold(ctx, store.SessionRef{Facet: store.HoldConversations, ID: "c1"}, "test"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]interface {
		Governance() store.Governance
		Conversations() store.Conversations
		AgentSessions() store.AgentSessions
	}{"the whole store": st, "another tenant": other} {
		if _, err := s.Governance().Get(ctx, "g1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s sees the governed session: %v", name, err)
		}
		if ok, err := s.Conversations().Exists(ctx, "c1"); ok || err != nil {
			t.Errorf("%s sees the conversation: %v %v", name, ok, err)
		}
		if _, err := s.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s sees the agent session: %v", name, err)
		}
	}
	if _, err := acme.Governance().Get(ctx, "g1"); err != nil {
		t.Errorf("the tenant's handle: %v", err)
	}
	if holds, err := st.Retention().Holds(ctx); err != nil || len(holds) != 0 {
		t.Errorf("the whole store's holds: %v %v", holds, err)
	}
	if holds, err := v.Retention().Holds(ctx); err != nil || len(holds) != 1 {
		t.Errorf("the view's holds: %v %v", holds, err)
	}
	c, err := store.TenantView{Store: st, Tenant: acme}.Counts(ctx)
	if err != nil || c.Governed.Total != 1 || c.Conversations.Total != 1 {
		t.Errorf("the view's counts: %+v %v", c, err)
	}
	oc, err := store.TenantView{Store: st, Tenant: other}.Counts(ctx)
	if err != nil || oc.Governed.Total != 0 || oc.Conversations.Total != 0 {
		t.Errorf("another tenant's counts: %+v %v", oc, err)
	}
	if cur, _, err := v.SchemaVersion(ctx); err != nil || cur == 0 || v.Backend() != st.Backend() {
		t.Errorf("schema version %d, %v; backend %s", cur, err, v.Backend())
	}
}
