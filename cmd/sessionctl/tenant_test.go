package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// tenantFixture writes the same agent-session key into the default tenant
// and into tenant "acme", each with state naming its owner.
func (e *testEnv) tenantFixture() store.SessionKey {
	t := e.t
	t.Helper()
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	ts, err := st.(store.Tenanter).Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	for owner, as := range map[string]store.AgentSessions{"default": st.AgentSessions(), "acme": ts.AgentSessions()} {
		v := json.RawMessage(`"` + owner + `"`)
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
			State: store.ScopedState{App: map[string]json.RawMessage{"owner": v}, Session: map[string]json.RawMessage{"owner": v}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
			Event: store.AgentEvent{ID: "e1", Data: json.RawMessage(`{"said":"` + owner + `"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	return key
}

// TestTenantFlag: --tenant works on the tenant's agent sessions only, the
// default tenant's stay out of sight and untouched, and the commands that
// are not tenant-scoped refuse the flag.
func TestTenantFlag(t *testing.T) { bothBackends(t, testTenantFlag) }

func testTenantFlag(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.tenantFixture()

	show := e.run("agents", "show", "support", "ada", "s1", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(show, `"acme"`) || strings.Contains(show, `"default"`) {
		t.Fatalf("agents show --tenant acme:\n%s", show)
	}
	show = e.run("--tenant=acme", "agents", "events", "support", "ada", "s1", "--json").want(t, 0).stdout
	if !strings.Contains(show, `acme`) || strings.Contains(show, `default`) {
		t.Fatalf("agents events --tenant acme:\n%s", show)
	}
	show = e.run("agents", "show", "support", "ada", "s1", "--json").want(t, 0).stdout
	if !strings.Contains(show, `"default"`) || strings.Contains(show, `"acme"`) {
		t.Fatalf("agents show without --tenant:\n%s", show)
	}
	// Another tenant has no such session.
	e.run("agents", "show", "support", "ada", "s1", "--tenant", "globex").want(t, exitNotFound)
	// A tenant that owns no row is unknown, not shown as an empty one.
	if r := e.run("agents", "--tenant", "globex", "--json").want(t, exitNotFound); r.stdout != "" || !strings.Contains(r.stderr, "tenant globex is unknown") {
		t.Fatalf("agents --tenant globex: %q %q", r.stdout, r.stderr)
	}

	// A delete through the tenant leaves the default tenant's session.
	e.run("agents", "delete", "support", "ada", "s1", "--tenant", "acme", "--yes").want(t, 0)
	e.run("agents", "show", "support", "ada", "s1", "--tenant", "acme").want(t, exitNotFound)
	e.run("agents", "show", "support", "ada", "s1").want(t, 0)

	// Commands that are not tenant-scoped, and malformed names, are usage
	// errors that open nothing.
	for _, args := range [][]string{
		{"doctor", "--tenant", "acme"},
		{"cleanup", "--tenant", "acme"},
		{"sweep", "--tenant", "acme"},
		{"retention", "--tenant", "acme"},
		{"agents", "--tenant", "no spaces"},
		{"agents", "--tenant", "-x"},
	} {
		r := e.run(args...).want(t, exitUsage)
		if !strings.Contains(r.stderr, "--tenant") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("sessionctl %s: stderr %q", strings.Join(args, " "), r.stderr)
		}
	}
	// A whole export carries every tenant's rows, each in its tenant's
	// part; --tenant exports the tenant's alone, --default-tenant-only the
	// default tenant's alone.
	doc := e.run("export").want(t, 0).stdout
	if !strings.Contains(doc, `said\":\"default`) || !strings.Contains(doc, `"tenant": "acme"`) || !strings.Contains(doc, `\"acme\"`) {
		t.Errorf("export of a database with tenant acme: %s", doc)
	}
	doc = e.run("export", "--tenant", "acme").want(t, 0).stdout
	if !strings.Contains(doc, `\"acme\"`) || strings.Contains(doc, `default`) {
		t.Errorf("export --tenant acme: tenant acme's session alone expected, got %s", doc)
	}
	doc = e.run("export", "--default-tenant-only").want(t, 0).stdout
	if !strings.Contains(doc, `said\":\"default`) || strings.Contains(doc, "acme") {
		t.Errorf("export --default-tenant-only: the default tenant's session alone expected, got %s", doc)
	}
	testTenantGovernanceCommands(t, e)
	testTenantStatsShow(t, e)

	testTenantConversations(t, e)
	testTenantHolds(t, e)

	// One store for the rest too (each env costs a migration under -race).
	e.tenantFixtureAgain()
	testTenantEnvironment(t, e)
	testServeTenant(t, e)
}

// testTenantConversations: the conversation commands work on the tenant's
// conversations: another tenant's id (and the default tenant's) is not
// found, the default tenant does not see the tenant's, and fork, rewind,
// history, delete and search stay within the tenant.
func testTenantConversations(t *testing.T, e *testEnv) {
	ctx := context.Background()
	st := e.openStore()
	ts, err := st.(store.Tenanter).Tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range map[string]store.Conversations{"conv-default": st.Conversations(), "conv-acme": ts.Conversations()} {
		conv := store.NewConversation(id)
		for i := range 3 {
			conv.Messages = append(conv.Messages, store.UserMessage(fmt.Sprintf("words of %s %d", id, i)))
		}
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	out := e.run("messages", "conv-acme", "--tenant", "acme").want(t, 0).stdout
	if !strings.Contains(out, "words of conv-acme 2") {
		t.Fatalf("messages --tenant acme:\n%s", out)
	}
	e.run("messages", "conv-default", "--tenant", "acme").want(t, exitNotFound)
	e.run("messages", "conv-acme").want(t, exitNotFound)
	e.run("history", "conv-default", "--tenant", "acme").want(t, exitNotFound)
	e.run("fork", "conv-acme", "--at", "1", "--as", "conv-acme-retry", "--tenant", "acme").want(t, 0)
	// The id is taken (by the default tenant): a conflict, nothing more.
	e.run("fork", "conv-acme", "--at", "1", "--as", "conv-default", "--tenant", "acme").want(t, exitConflict)
	e.run("rewind", "conv-acme", "--to", "0", "--tenant", "acme").want(t, 0)
	tree := e.run("history", "conv-acme", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(tree, "conv-acme-retry") || strings.Contains(tree, "conv-default") {
		t.Fatalf("history --tenant acme:\n%s", tree)
	}
	found := e.run("search", "words", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(found, "conv-acme") || strings.Contains(found, "conv-default") {
		t.Fatalf("search --tenant acme:\n%s", found)
	}
	found = e.run("search", "words", "--json").want(t, 0).stdout
	if !strings.Contains(found, "conv-default") || strings.Contains(found, "conv-acme") {
		t.Fatalf("search without --tenant:\n%s", found)
	}
	e.run("delete", "conv-default", "--tenant", "acme", "--yes").want(t, exitNotFound)
	e.run("delete", "conv-acme-retry", "--tenant", "acme", "--yes").want(t, 0)
	e.run("messages", "conv-default").want(t, 0)
	listed := e.run("list", "--facet", "conversations", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(listed, "conv-acme") || strings.Contains(listed, "conv-default") {
		t.Fatalf("list --facet conversations --tenant acme:\n%s", listed)
	}
	e.run("list", "--facet", "runtime", "--tenant", "acme").want(t, 0)
}

// tenantFixtureAgain recreates the tenant's session the delete above
// removed.
func (e *testEnv) tenantFixtureAgain() {
	e.t.Helper()
	st := e.openStore()
	defer st.Close()
	ts, err := st.(store.Tenanter).Tenant("acme")
	if err != nil {
		e.t.Fatal(err)
	}
	key := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	v := json.RawMessage(`"acme"`)
	if _, err := ts.AgentSessions().CreateSession(context.Background(), store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"owner": v}}}); err != nil {
		e.t.Fatal(err)
	}
}

// testTenantEnvironment: $SESSIONSTORE_TENANT is --tenant's default, and
// the flag overrides it.
func testTenantEnvironment(t *testing.T, e *testEnv) {
	t.Setenv("SESSIONSTORE_TENANT", "acme")
	if out := e.run("agents", "show", "support", "ada", "s1", "--json").want(t, 0).stdout; !strings.Contains(out, `"acme"`) {
		t.Fatalf("with SESSIONSTORE_TENANT=acme:\n%s", out)
	}
	e.run("agents", "show", "support", "ada", "s1", "--tenant", "globex").want(t, exitNotFound)
	e.run("doctor").want(t, exitUsage) // not tenant-scoped: the variable is refused as the flag is
}

// testServeTenant: serve --tenant serves the tenant's agent sessions and
// none of the default tenant's rows.
func testServeTenant(t *testing.T, e *testEnv) {
	t.Setenv("SESSIONSTORE_TENANT", "")
	addrc := make(chan string, 1)
	serveStarted = func(a string) { addrc <- a }
	defer func() { serveStarted = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		g := &globals{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, now: e.clock.Now}
		done <- g.run(ctx, []string{"--db", e.db, "--tenant", "acme", "serve", "--addr", "127.0.0.1:0"})
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, errb.String())
	case <-time.After(time.Minute):
		t.Fatal("serve did not start")
	}
	getBody := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := getBody("/agents/session?app=support&user=ada&session=s1")
	if code != 200 || !strings.Contains(body, "acme") || strings.Contains(body, "default") {
		t.Errorf("session page of tenant acme: %d\n%s", code, body)
	}
	if code, body := getBody("/governed"); code != http.StatusOK || strings.Contains(body, "gov-default") {
		t.Errorf("/governed in a tenant's console: %d, want the tenant's governed sessions only:\n%s", code, body)
	}
	if code, _ := getBody("/retention"); code != http.StatusNotFound {
		t.Errorf("/retention in a tenant's console: %d, want 404", code)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}

	// A tenant that owns no row is unknown to serve too, as to every
	// command that reads a tenant's rows: no empty console is served (one
	// that starts is stopped at once and fails the test).
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	started := false
	serveStarted = func(string) { started = true; cancel2() }
	out.Reset()
	errb.Reset()
	g := &globals{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, now: e.clock.Now}
	code = g.run(ctx2, []string{"--db", e.db, "--tenant", "acmee", "serve", "--addr", "127.0.0.1:0"})
	if started || code != exitNotFound || !strings.Contains(errb.String(), "tenant acmee is unknown") || !strings.Contains(errb.String(), "acme") {
		t.Errorf("serve --tenant acmee: started %v, exit %d, stdout %q, stderr %q", started, code, out.String(), errb.String())
	}
}

// testTenantGovernanceCommands: create, use, close, the spend commands
// and audit under --tenant act on the tenant's governed sessions only; an
// id of the default tenant is not found under --tenant, and the agent's
// cap counts the tenant's own sessions.
func testTenantGovernanceCommands(t *testing.T, e *testEnv) {
	e.run("create", "--id", "gov-default", "--agent", "bot", "--tool", "search", "--budget", "5", "--max-active", "1").want(t, 0)
	e.run("create", "--id", "gov-acme", "--agent", "bot", "--tool", "search", "--budget", "5", "--max-active", "1", "--tenant", "acme").want(t, 0)
	e.run("use", "gov-acme", "--tool", "search", "--tenant", "acme").want(t, 0)
	e.run("use", "gov-default", "--tool", "search", "--tenant", "acme").want(t, exitNotFound)
	e.run("use", "gov-acme", "--tool", "search").want(t, exitNotFound)
	e.run("limits", "bot", "--limit", "input=10/day", "--tenant", "acme").want(t, 0)
	e.run("reserve", "gov-acme", "--request-id", "r1", "--input-tokens", "3", "--tenant", "acme").want(t, 0)
	e.run("reserve", "gov-default", "--input-tokens", "3", "--tenant", "acme").want(t, exitNotFound)
	if out := e.run("limits", "bot", "--json").want(t, 0).stdout; strings.Contains(out, `"limit":10`) || strings.Contains(out, `"limit": 10`) {
		t.Errorf("the default tenant's agent bot has tenant acme's limit:\n%s", out)
	}
	if out := e.run("limits", "bot", "--tenant", "acme", "--json").want(t, 0).stdout; !strings.Contains(out, "10") {
		t.Errorf("limits --tenant acme:\n%s", out)
	}
	trail := e.run("audit", "list", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(trail, "gov-acme") || strings.Contains(trail, "gov-default") {
		t.Errorf("audit list --tenant acme:\n%s", trail)
	}
	trail = e.run("audit", "list", "--json").want(t, 0).stdout
	if strings.Contains(trail, "gov-acme") || !strings.Contains(trail, "gov-default") {
		t.Errorf("audit list of the default tenant:\n%s", trail)
	}
	e.run("audit", "verify", "--tenant", "acme").want(t, 0)
	if out := e.run("list", "--tenant", "acme").want(t, 0).stdout; !strings.Contains(out, "gov-acme") || strings.Contains(out, "gov-default") {
		t.Errorf("list --tenant acme:\n%s", out)
	}
	if out := e.run("list").want(t, 0).stdout; strings.Contains(out, "gov-acme") || !strings.Contains(out, "gov-default") {
		t.Errorf("list of the default tenant:\n%s", out)
	}
	e.run("close", "gov-acme", "--tenant", "acme").want(t, 0)
	e.run("close", "gov-default", "--tenant", "acme").want(t, exitNotFound)
	e.run("close", "gov-default").want(t, 0)
}

// testTenantHolds: hold --tenant places, lists and releases the tenant's
// own holds (the same key as the default tenant's, a hold each), and the
// sweeping commands refuse --tenant saying why.
func testTenantHolds(t *testing.T, e *testEnv) {
	e.run("hold", "agent_sessions", "support", "ada", "s1", "--reason", "default's").want(t, 0)
	if r := e.run("hold", "agent_sessions", "support", "ada", "s1", "--tenant", "acme", "--reason", "acme's").want(t, 0); r.stdout != "held agent_sessions support/ada/s1\n" {
		t.Fatalf("hold --tenant acme: %q", r.stdout)
	}
	e.run("hold", "conversations", "conv-acme", "--tenant", "acme").want(t, 0)
	out := e.run("hold", "list", "--tenant", "acme", "--json").want(t, 0).stdout
	if !strings.Contains(out, "acme's") || !strings.Contains(out, "conv-acme") || strings.Contains(out, "default's") {
		t.Fatalf("hold list --tenant acme:\n%s", out)
	}
	out = e.run("hold", "list", "--json").want(t, 0).stdout
	if !strings.Contains(out, "default's") || strings.Contains(out, "acme") {
		t.Fatalf("hold list of the default tenant:\n%s", out)
	}
	if out = e.run("hold", "list", "--tenant", "globex").want(t, 0).stdout; out != "0 holds\n" {
		t.Fatalf("hold list --tenant globex: %q", out)
	}
	if r := e.run("hold", "release", "agent_sessions", "support", "ada", "s1", "--tenant", "acme").want(t, 0); r.stdout != "released agent_sessions support/ada/s1\n" {
		t.Fatalf("hold release --tenant acme: %q", r.stdout)
	}
	if r := e.run("hold", "release", "agent_sessions", "support", "ada", "s1", "--tenant", "acme").want(t, 0); !strings.Contains(r.stdout, "was not held") {
		t.Fatalf("second hold release --tenant acme: %q", r.stdout)
	}
	if out = e.run("hold", "list", "--json").want(t, 0).stdout; !strings.Contains(out, "default's") {
		t.Fatalf("the default tenant's hold went with acme's release:\n%s", out)
	}
	e.run("hold", "release", "agent_sessions", "support", "ada", "s1").want(t, 0)
	e.run("hold", "release", "conversations", "conv-acme", "--tenant", "acme").want(t, 0)
	for _, cmd := range []string{"cleanup", "sweep", "gc", "retention"} {
		r := e.run(cmd, "--tenant", "acme").want(t, exitUsage)
		if !strings.Contains(r.stderr, "every tenant") || !strings.Contains(r.stderr, "hold --tenant") {
			t.Errorf("%s --tenant: stderr %q does not say why", cmd, r.stderr)
		}
	}
}

// testTenantStatsShow: stats --tenant counts the tenant's rows only and
// leaves out the database's sizes; show --tenant shows the tenant's
// session and finds no other tenant's (nor the default tenant's).
func testTenantStatsShow(t *testing.T, e *testEnv) {
	ctx := context.Background()
	st := e.openStore()
	ts, err := st.(store.Tenanter).Tenant("stats-t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "rt-stats", AgentAlias: "coder", WorkspaceDir: "/ws", ChatMode: store.ChatModeChat}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Runtime().PutUpload(ctx, store.PutUploadRequest{SessionID: "rt-stats", RefID: "r1", WorkspacePath: "w", Content: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	conv := store.NewConversation("conv-stats")
	conv.Messages = []store.Message{store.UserMessage("one"), store.AssistantMessage("two")}
	if _, err := ts.Conversations().Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	st.Close()
	e.run("create", "--id", "gov-stats", "--agent", "bot", "--tool", "search", "--budget", "5", "--tenant", "stats-t").want(t, 0)

	var doc statsJSON
	if err := json.Unmarshal([]byte(e.run("stats", "--tenant", "stats-t", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Tenant != "stats-t" || doc.DatabaseBytes != nil || doc.WALBytes != nil || doc.StoreBytes != nil ||
		doc.Governed.Total != 1 || doc.Governed.Active != 1 || doc.Runtime.Total != 1 || doc.Runtime.Uploads != 1 ||
		doc.Runtime.UploadBytes != 5 || doc.Conversations.Total != 1 || doc.Conversations.Messages != 2 ||
		doc.AgentSessions.Total != 0 || doc.SchemaVersion == 0 {
		t.Errorf("stats --tenant stats-t: %+v", doc)
	}
	var all statsJSON
	if err := json.Unmarshal([]byte(e.run("stats", "--json").want(t, 0).stdout), &all); err != nil {
		t.Fatal(err)
	}
	// Store-wide: gov-default, gov-acme and gov-stats at least, and the
	// default tenant's agent session.
	if all.Tenant != "" || all.DatabaseBytes == nil || all.Governed.Total < 3 || all.Runtime.Uploads < 1 || all.AgentSessions.Total < 1 {
		t.Errorf("stats without --tenant: %+v", all)
	}
	table := e.run("stats", "--tenant", "stats-t").want(t, 0).stdout
	if !strings.Contains(table, "stats-t (the counts below are its rows only)") || strings.Contains(table, "database file") || strings.Contains(table, "database size") {
		t.Errorf("stats --tenant stats-t:\n%s", table)
	}

	var shown showJSON
	if err := json.Unmarshal([]byte(e.run("show", "rt-stats", "--tenant", "stats-t", "--json").want(t, 0).stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Runtime == nil || shown.Runtime.Uploads != 1 || shown.Runtime.UploadBytes != 5 || shown.Governed != nil {
		t.Errorf("show rt-stats --tenant stats-t: %+v", shown)
	}
	if out := e.run("show", "gov-stats", "--tenant", "stats-t").want(t, 0).stdout; !strings.Contains(out, "governed:") {
		t.Errorf("show gov-stats --tenant stats-t:\n%s", out)
	}
	e.run("show", "gov-stats").want(t, exitNotFound)
	e.run("show", "gov-default", "--tenant", "stats-t").want(t, exitNotFound)
	e.run("show", "gov-acme", "--tenant", "stats-t").want(t, exitNotFound)
	e.run("show", "conv-stats", "--tenant", "acme").want(t, exitNotFound)
}
