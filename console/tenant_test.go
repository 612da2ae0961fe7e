package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestTenantConsole: a console started with a tenant shows that tenant's
// agent sessions only (the default tenant holds the same key with other
// values), serves none of the pages that are not tenant-scoped, and
// refuses a malformed tenant name.
func TestTenantConsole(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts, err := st.Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	for marker, as := range map[string]store.AgentSessions{"marker-default": st.AgentSessions(), "marker-acme": ts.AgentSessions()} {
		v := json.RawMessage(`"` + marker + `"`)
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
			State: store.ScopedState{App: map[string]json.RawMessage{"owner": v}, Session: map[string]json.RawMessage{"owner": v}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: "e1", Data: json.RawMessage(`{"said":"` + marker + `-event"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "default-only", User: "u", Session: "s"}}); err != nil {
		t.Fatal(err)
	}
	// A conversation and a runtime session (with an upload) in each.
	for marker, f := range map[string]struct {
		c  store.Conversations
		rt store.Runtime
	}{"marker-default": {st.Conversations(), st.Runtime()}, "marker-acme": {ts.Conversations(), ts.Runtime()}} {
		id := "conv-" + marker[len("marker-"):][:1] // no marker in ids: a 404 page names the id
		conv := store.NewConversation(id)
		conv.Messages = []store.Message{store.UserMessage(marker + "-message")}
		if _, err := f.c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		rid := "rt-" + marker[len("marker-"):][:1]
		if _, err := f.rt.Insert(ctx, store.NewRuntimeSession{ID: rid, AgentAlias: "agent-" + marker, WorkspaceDir: "/ws", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.rt.PutUpload(ctx, store.PutUploadRequest{SessionID: rid, RefID: "r1", WorkspacePath: "w", Content: []byte(marker + "-upload")}); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := console.New(st, console.Options{Tenant: "no spaces"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("New with a malformed tenant: %v, want ErrInvalidInput", err)
	}
	h, err := console.New(st, console.Options{Prefix: prefix, Tenant: "acme", Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, path := range []string{
		"/agents", "/agents?app=support", "/agents?app=support&user=ada",
		"/agents/session?app=support&user=ada&session=s1", "/agents/session?app=support&user=ada&session=s1&format=json",
		"/conversations", "/conversations/conv-a", "/conversations/conv-a/messages/0",
		"/conversations/conv-a/messages.json", "/runtime", "/runtime/rt-a", "/runtime/rt-a/uploads/r1",
	} {
		resp, body := get(t, srv, prefix+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		if strings.Contains(body, "marker-default") || strings.Contains(body, "default-only") {
			t.Errorf("%s shows the default tenant's rows:\n%s", path, body)
		}
		if path != "/conversations" && path != "/runtime" && !strings.HasPrefix(path, "/agents?") && path != "/agents" && !strings.Contains(body, "marker-acme") {
			t.Errorf("%s does not show the tenant's session:\n%s", path, body)
		}
	}
	for _, path := range []string{"/agents/session?app=default-only&user=u&session=s", "/conversations/conv-d",
		"/conversations/conv-d/messages.json", "/runtime/rt-d", "/runtime/rt-d/uploads/r1"} {
		if resp, body := get(t, srv, prefix+path); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "marker-default") {
			t.Errorf("the default tenant's %s: %d, want 404", path, resp.StatusCode)
		}
	}
	for path, ids := range map[string][2]string{"/conversations": {"conv-a", "conv-d"}, "/runtime": {"rt-a", "rt-d"}} {
		if _, body := get(t, srv, prefix+path); !strings.Contains(body, ">"+ids[0]+"<") || strings.Contains(body, ids[1]) {
			t.Errorf("%s does not list the tenant's rows only:\n%s", path, body)
		}
	}
	if resp, _ := get(t, srv, prefix+"/"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != prefix+"/agents" {
		t.Errorf("/: %d to %q, want a redirect to the agent sessions", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Governed sessions, their spend and the audit trail through the
	// handle: the tenant's only.
	gd, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "bot", AuthorizedTools: []string{"t"}, CallBudget: 3, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ga, err := ts.Governance().Create(ctx, store.CreateRequest{AgentID: "bot", AuthorizedTools: []string{"t"}, CallBudget: 3, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/governed", "/governed/" + ga.ID, "/audit?agent=bot"} {
		resp, body := get(t, srv, prefix+path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, ga.ID) || strings.Contains(body, gd.ID) {
			t.Errorf("%s: %d, want the tenant's governed session %s only:\n%s", path, resp.StatusCode, ga.ID, body)
		}
	}
	if resp, _ := get(t, srv, prefix+"/governed/"+gd.ID); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the default tenant's governed session: %d, want 404", resp.StatusCode)
	}
	for _, path := range []string{"/search?q=said", "/export",
		"/retention", "/metrics", "/go?id=s1", "/live/agents/events?app=support&user=ada&session=s1",
		"/live/conversations/conv-a/messages"} {
		if resp, body := get(t, srv, prefix+path); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "marker-") {
			t.Errorf("%s: %d, want 404 in a tenant's console", path, resp.StatusCode)
		}
	}
	if resp, body := get(t, srv, prefix+"/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", resp.StatusCode, body)
	}
}
