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
	if resp, body := get(t, srv, prefix+"/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Tenant <strong>acme</strong>") {
		t.Errorf("/: %d, want the tenant's overview:\n%s", resp.StatusCode, body)
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
	// Search and the go-to box: the tenant's items only.
	if resp, body := get(t, srv, prefix+"/search?q=marker"); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "-acme-message") || strings.Contains(body, "-default-") {
		t.Errorf("/search: %d, want the tenant's hits only:\n%s", resp.StatusCode, body)
	}
	if resp, _ := get(t, srv, prefix+"/go?id=conv-a"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != prefix+"/conversations/conv-a" {
		t.Errorf("/go?id=conv-a: %d to %q, want a redirect to the tenant's conversation", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, id := range []string{"conv-d", "rt-d", "default-only"} {
		if resp, body := get(t, srv, prefix+"/go?id="+id); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "marker-") {
			t.Errorf("/go?id=%s (the default tenant's): %d, want 404", id, resp.StatusCode)
		}
	}
	for _, path := range []string{"/export",
		"/retention", "/live/agents/events?app=support&user=ada&session=s1",
		"/live/conversations/conv-a/messages"} {
		if resp, body := get(t, srv, prefix+path); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "marker-") {
			t.Errorf("%s: %d, want 404 in a tenant's console", path, resp.StatusCode)
		}
	}
	if resp, body := get(t, srv, prefix+"/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", resp.StatusCode, body)
	}
}

// TestTenantConsoleOverviewAndMetrics: a tenant's console serves its
// overview and /metrics counted over its rows only (the default tenant
// and another tenant hold more of everything), while the store's own
// console counts every tenant; the tenant's overview offers no export.
func TestTenantConsoleOverviewAndMetrics(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type scope struct {
		gov             store.Governance
		conv            store.Conversations
		rt              store.Runtime
		name            string
		sessions, calls int
		tokens          int64
		cost            float64
	}
	scopes := []scope{{gov: st.Governance(), conv: st.Conversations(), rt: st.Runtime(), name: "default", sessions: 2, calls: 3, tokens: 1000, cost: 5}}
	for _, s := range []scope{{name: "acme", sessions: 1, calls: 1, tokens: 123, cost: 0.25}, {name: "globex", sessions: 3, calls: 2, tokens: 777, cost: 7}} {
		ts, err := st.Tenant(s.name)
		if err != nil {
			t.Fatal(err)
		}
		s.gov, s.conv, s.rt = ts.Governance(), ts.Conversations(), ts.Runtime()
		scopes = append(scopes, s)
	}
	for _, s := range scopes {
		for i := range s.sessions {
			g, err := s.gov.Create(ctx, store.CreateRequest{AgentID: "bot-" + s.name, AuthorizedTools: []string{"t"}, CallBudget: 10, TimeLimit: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				for range s.calls {
					if _, err := s.gov.Use(ctx, store.UseRequest{SessionID: g.ID, Tools: []string{"t"}}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		conv := store.NewConversation("conv-" + s.name)
		conv.TotalUsage = store.TokenUsage{TotalTokens: s.tokens}
		conv.TotalCost = s.cost
		conv.Messages = []store.Message{store.UserMessage("hello from " + s.name)}
		if _, err := s.conv.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := s.rt.Insert(ctx, store.NewRuntimeSession{ID: "rt-" + s.name, AgentAlias: "agent-" + s.name, WorkspaceDir: "/ws", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatal(err)
		}
	}
	serve := func(opt console.Options) *httptest.Server {
		t.Helper()
		opt.Prefix, opt.Clock = prefix, clock.Now
		h, err := console.New(st, opt)
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle(prefix+"/", h)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv
	}
	type overview struct {
		Tenant string `json:"tenant"`
		Stats  struct {
			Governed struct {
				Total int64 `json:"total"`
				Calls int64 `json:"calls_made"`
			} `json:"governed"`
			Conversations struct {
				Total       int64  `json:"total"`
				TotalTokens int64  `json:"total_tokens"`
				Cost        string `json:"total_cost"`
			} `json:"conversations"`
			Runtime struct {
				Total   int64            `json:"total"`
				ByAgent map[string]int64 `json:"by_agent"`
			} `json:"runtime"`
		} `json:"stats"`
		Top []struct {
			ID        string `json:"id"`
			TotalCost string `json:"total_cost"`
		} `json:"top_conversations_by_cost"`
	}
	read := func(srv *httptest.Server) overview {
		t.Helper()
		resp, body := get(t, srv, prefix+"/?format=json")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("overview: %d %s", resp.StatusCode, body)
		}
		var o overview
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			t.Fatalf("overview JSON: %v\n%s", err, body)
		}
		return o
	}

	acme := serve(console.Options{Tenant: "acme"})
	o := read(acme)
	if o.Tenant != "acme" || o.Stats.Governed.Total != 1 || o.Stats.Governed.Calls != 1 ||
		o.Stats.Conversations.Total != 1 || o.Stats.Conversations.TotalTokens != 123 || o.Stats.Conversations.Cost != "0.25 USD" ||
		o.Stats.Runtime.Total != 1 || len(o.Stats.Runtime.ByAgent) != 1 || o.Stats.Runtime.ByAgent["agent-acme"] != 1 ||
		len(o.Top) != 1 || o.Top[0].ID != "conv-acme" || o.Top[0].TotalCost != "0.25 USD" {
		t.Errorf("tenant acme's overview: %+v", o)
	}
	_, page := get(t, acme, prefix+"/")
	for _, other := range []string{"globex", "default", "download>"} {
		if strings.Contains(page, other) {
			t.Errorf("tenant acme's overview shows %q:\n%s", other, page)
		}
	}
	resp, metrics := get(t, acme, prefix+"/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics of tenant acme: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`sessionstore_governed_sessions{status="active"} 1`, "sessionstore_governed_calls_made 1",
		`sessionstore_conversations{state="active"} 1`, "sessionstore_conversation_tokens 123",
		`sessionstore_runtime_sessions{agent="agent-acme"} 1`, "sessionstore_scrape_success 1",
		`sessionstore_audit_decisions{kind="use",outcome="ok"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics of tenant acme lacks %q:\n%s", want, metrics)
		}
	}
	for _, other := range []string{"agent-globex", "agent-default"} {
		if strings.Contains(metrics, other) {
			t.Errorf("/metrics of tenant acme shows %q", other)
		}
	}

	// The store's own console: the default tenant's rows, those its
	// lists show (docs/console/scope.md).
	all := read(serve(console.Options{}))
	if all.Tenant != "" || all.Stats.Governed.Total != 2 || all.Stats.Governed.Calls != 3 || all.Stats.Conversations.Total != 1 ||
		all.Stats.Conversations.TotalTokens != 1000 || len(all.Top) != 1 || all.Top[0].ID != "conv-default" {
		t.Errorf("the store's overview: %+v", all)
	}
}

// TestTenantConsoleSaysReadOnly: a tenant's console over a store opened
// read-only says so in its footer, as the operator's console does (the
// tenant's view of the store must not hide it).
func TestTenantConsoleSaysReadOnly(t *testing.T) {
	st, f, _ := seeded(t, sqliteBackend)
	for _, opt := range []console.Options{{}, {Tenant: "acme"}} {
		srv := newServer(t, st, f, opt)
		_, body := get(t, srv, prefix+"/")
		if !strings.Contains(body, "sqlite · read-only") {
			t.Errorf("console of tenant %q: the footer does not say read-only", opt.Tenant)
		}
	}
}

// TestTenantConsoleUnknownTenant: the console of a tenant that owns no
// row says so on its overview (a mistyped name looked like an empty
// tenant); a tenant with rows gets no such note.
func TestTenantConsoleUnknownTenant(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ts, err := st.Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	for tenant, unknown := range map[string]bool{"acme": false, "acmee": true} {
		h, err := console.New(st, console.Options{Tenant: tenant})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if said := strings.Contains(rec.Body.String(), `id="unknown-tenant"`); rec.Code != http.StatusOK || said != unknown {
			t.Errorf("tenant %s: %d, says unknown %v, want %v", tenant, rec.Code, said, unknown)
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/?format=json", nil))
		if said := strings.Contains(rec.Body.String(), `"unknown_tenant": true`); said != unknown {
			t.Errorf("tenant %s: the JSON says unknown %v, want %v", tenant, said, unknown)
		}
	}
}
