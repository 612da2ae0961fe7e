package archive_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/store"
)

// tenantFacets are the tenant-scoped facets of a store or of a tenant
// handle.
type tenantFacets struct {
	as    store.AgentSessions
	gov   store.Governance
	spend store.Spend
	audit store.Audit
	conv  store.Conversations
	rt    store.Runtime
}

func facetsOf(t *testing.T, st store.Store, tenant string) tenantFacets {
	t.Helper()
	if tenant == "" {
		return tenantFacets{st.AgentSessions(), st.Governance(), st.Spend(), st.Audit(), st.Conversations(), st.Runtime()}
	}
	ts, err := st.(store.Tenanter).Tenant(tenant)
	must(t, err)
	return tenantFacets{ts.AgentSessions(), ts.Governance(), ts.Spend(), ts.Audit(), ts.Conversations(), ts.Runtime()}
}

// tenantSeed writes, through f, agent sessions under the same keys in
// every tenant (values naming marker), a governed session of the same
// agent with spend limits, uses and a settled reservation, and a
// conversation and a runtime session with an upload (their ids are
// global, so they name marker too).
func tenantSeed(t *testing.T, f tenantFacets, marker string) {
	t.Helper()
	ctx := t.Context()
	for _, k := range []store.SessionKey{{App: "app", User: "u", Session: "s1"}, {App: "app", User: "u", Session: "s2"}} {
		_, err := f.as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k, State: store.ScopedState{
			App: map[string]json.RawMessage{"who": json.RawMessage(`"` + marker + `"`)}}})
		must(t, err)
		_, err = f.as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: store.AgentEvent{ID: "e1",
			Data: json.RawMessage(`{"text":"` + marker + `"}`)}})
		must(t, err)
	}
	s, err := f.gov.Create(ctx, store.CreateRequest{AgentID: "agent", AuthorizedTools: []string{"t"}, CallBudget: 9,
		TimeLimit: time.Hour, SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Window: store.WindowLifetime, Limit: 100}}})
	must(t, err)
	_, err = f.gov.Use(ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"t", "t"}})
	must(t, err)
	_, err = f.spend.Reserve(ctx, store.ReserveRequest{SessionID: s.ID, RequestID: "r", Amount: store.SpendAmount{InputTokens: 10}})
	must(t, err)
	_, err = f.spend.Settle(ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r", Actual: store.SpendAmount{InputTokens: 4}})
	must(t, err)
	must(t, f.spend.SetAgentLimits(ctx, "agent", []store.SpendLimit{{Metric: store.MetricInputTokens, Window: store.WindowDay, Limit: 50}}))
	_, err = f.conv.Save(ctx, store.NewConversation("conv-"+marker))
	must(t, err)
	_, err = f.conv.AppendMessages(ctx, "conv-"+marker, store.UserMessage("said "+marker), store.UserMessage("again "+marker))
	must(t, err)
	_, err = f.rt.Insert(ctx, store.NewRuntimeSession{ID: "rt-" + marker, AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat})
	must(t, err)
	_, err = f.rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "rt-" + marker, RefID: "f", WorkspacePath: "f.txt", Content: []byte("file of " + marker)})
	must(t, err)
}

// tenantMarkerOf reads back the marker of f's agent session s1, and
// checks f's audit trail verifies.
func tenantMarkerOf(t *testing.T, f tenantFacets) string {
	t.Helper()
	s, err := f.as.GetSession(t.Context(), store.GetAgentSessionRequest{Key: store.SessionKey{App: "app", User: "u", Session: "s1"}, IncludeEvents: true})
	must(t, err)
	rep, err := f.audit.Verify(t.Context())
	must(t, err)
	if !rep.OK() || rep.Events == 0 {
		t.Fatalf("audit trail: %+v", rep)
	}
	var ev struct{ Text string }
	must(t, json.Unmarshal(s.Events[0].Data, &ev))
	// The tenant's one conversation and one runtime session are the same
	// marker's.
	convs, err := f.conv.List(t.Context(), store.ConversationFilter{Limit: 10})
	must(t, err)
	if len(convs.Items) != 1 || convs.Items[0].ID != "conv-"+ev.Text {
		t.Fatalf("conversations of the tenant of %s: %+v", ev.Text, convs.Items)
	}
	msgs, err := f.conv.Messages(t.Context(), convs.Items[0].ID, 0, 10)
	must(t, err)
	if len(msgs) != 2 || msgs[1].Text() != "again "+ev.Text {
		t.Fatalf("messages of %s: %+v", convs.Items[0].ID, msgs)
	}
	_, content, err := f.rt.ReadUpload(t.Context(), "rt-"+ev.Text, "f")
	must(t, err)
	if string(content) != "file of "+ev.Text {
		t.Fatalf("upload of rt-%s: %q", ev.Text, content)
	}
	return string(s.Events[0].Data)
}

// TestTenantsRoundTrip exports a store whose default tenant and two
// tenants hold agent sessions under the same keys, governed sessions of
// the same agent, spend and audit chains: the document carries each
// tenant's part, an import restores every row to its tenant (the export
// of the import is the same bytes), one tenant's export restores into
// another tenant, and a version-5 document restores into the default
// tenant or the tenant an import names.
//
// Under the race detector (about 20 s a backend) it runs on one backend:
// PostgreSQL when there is one (its tenant setting is what the record
// writer's ForTenant changes), else SQLite.
func TestTenantsRoundTrip(t *testing.T) {
	backends := []backend{sqliteBackend, postgresBackend}
	if raceEnabled {
		backends = backends[:1]
		if os.Getenv(pgtest.EnvURL) != "" {
			backends = []backend{postgresBackend}
		}
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testTenantsRoundTrip(t, b) })
	}
}

func testTenantsRoundTrip(t *testing.T, b backend) {
	ctx := t.Context()
	src := b.open(t)
	// The default tenant's rows of every facet round-trip in TestRoundTrip;
	// here it holds what the tenants do, under the same keys.
	tenantSeed(t, facetsOf(t, src, ""), "default")
	for _, name := range []string{"acme", "globex"} {
		tenantSeed(t, facetsOf(t, src, name), name)
	}
	// A tenant with governed sessions only has a part of its own too.
	only := facetsOf(t, src, "hooli")
	if _, err := only.gov.Create(ctx, store.CreateRequest{AgentID: "agent", CallBudget: 1, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	doc, counts := export(t, src, archive.ExportOptions{})
	if !bytes.Contains(doc, []byte(`"tenant": "acme"`)) || !bytes.Contains(doc, []byte(`"tenant": "globex"`)) ||
		!bytes.Contains(doc, []byte(`"tenant": "hooli"`)) {
		t.Fatalf("the export has no part of the tenants:\n%s", doc)
	}
	dst := b.open(t)
	res, err := archive.Import(ctx, dst, bytes.NewReader(doc), archive.ImportOptions{})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if res.Counts != counts {
		t.Errorf("imported %+v, exported %+v", res.Counts, counts)
	}
	if again, _ := export(t, dst, archive.ExportOptions{}); !bytes.Equal(again, doc) {
		t.Fatalf("the export of the import differs:\n%s", firstDiff(doc, again))
	}
	for _, name := range []string{"acme", "globex"} {
		if got := tenantMarkerOf(t, facetsOf(t, dst, name)); !strings.Contains(got, name) {
			t.Errorf("tenant %s's session s1 after the import holds %s", name, got)
		}
	}
	if got := tenantMarkerOf(t, facetsOf(t, dst, "")); !strings.Contains(got, "default") {
		t.Errorf("the default tenant's session s1 after the import holds %s", got)
	}

	// One tenant's export, restored into another tenant of a new store:
	// the same rows, under the new tenant's name. (Four stores in all:
	// opening one migrates it, most of the test's time under -race.)
	one, _ := export(t, src, archive.ExportOptions{Tenant: "acme"})
	if bytes.Contains(one, []byte("globex")) || bytes.Contains(one, []byte("hooli")) || !bytes.Contains(one, []byte(`"tenant": "acme"`)) {
		t.Fatalf("the export of tenant acme:\n%s", one)
	}
	other := b.open(t)
	if _, err := archive.Import(ctx, other, bytes.NewReader(one), archive.ImportOptions{Tenant: "initech"}); err != nil {
		t.Fatalf("import into initech: %v", err)
	}
	back, _ := export(t, other, archive.ExportOptions{Tenant: "initech"})
	if want := bytes.Replace(one, []byte(`"tenant": "acme"`), []byte(`"tenant": "initech"`), 1); !bytes.Equal(back, want) {
		t.Fatalf("initech's export differs from acme's:\n%s", firstDiff(want, back))
	}
	if got := tenantMarkerOf(t, facetsOf(t, other, "initech")); !strings.Contains(got, "acme") {
		t.Errorf("initech's session s1 holds %s", got)
	}
	// A document of several tenants cannot go into one tenant, and
	// nothing of it is written. (Read one item at a time, the tenants
	// part comes last: the default tenant's sections before it may fail
	// first, here on a spend limit id initech has.)
	if _, err := archive.Import(ctx, other, bytes.NewReader(doc), archive.ImportOptions{Tenant: "initech"}); err == nil {
		t.Errorf("import of a document with tenants into a tenant succeeded")
	}
	if after, _ := export(t, other, archive.ExportOptions{Tenant: "initech"}); !bytes.Equal(after, back) {
		t.Errorf("a refused import changed initech's rows:\n%s", firstDiff(back, after))
	}
	fresh := archive.ImportOptions{Tenant: "umbrella", DryRun: true}
	if _, err := archive.Import(ctx, nil, bytes.NewReader(doc), fresh); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("a dry run of a document with tenants into a tenant = %v, want ErrInvalidInput", err)
	}
	// A version-5 document has no tenants part.
	bad := bytes.Replace(doc, []byte(fmt.Sprintf(`"version": %d`, archive.Version)), []byte(`"version": 5`), 1)
	if _, err := archive.Import(ctx, other, bytes.NewReader(bad), archive.ImportOptions{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("a version-5 document with tenants = %v, want ErrInvalidInput", err)
	}

	// Without an import tenant, one tenant's document restores to its own.
	own := b.open(t)
	tenantSeed(t, facetsOf(t, own, ""), "plain")
	v6, _ := export(t, own, archive.ExportOptions{})
	if _, err := archive.Import(ctx, own, bytes.NewReader(one), archive.ImportOptions{}); err != nil {
		t.Fatalf("import of acme's document: %v", err)
	}
	if got := tenantMarkerOf(t, facetsOf(t, own, "acme")); !strings.Contains(got, "acme") {
		t.Errorf("acme's session s1 holds %s", got)
	}

	// A version-5 document (no tenants): the default tenant, or the
	// tenant an import names.
	v5 := bytes.Replace(v6, []byte(fmt.Sprintf(`"version": %d`, archive.Version)), []byte(`"version": 5`), 1)
	if bytes.Equal(v5, v6) {
		t.Fatal("no version in the document")
	}
	// (Governed ids are global: each goes to a store without them.)
	for into, st := range map[string]archive.Store{"": other, "legacy": dst} {
		if _, err := archive.Import(ctx, st, bytes.NewReader(v5), archive.ImportOptions{Tenant: into}); err != nil {
			t.Fatalf("import of a version-5 document into %q: %v", into, err)
		}
		if got := tenantMarkerOf(t, facetsOf(t, st, into)); !strings.Contains(got, "plain") {
			t.Errorf("%q's session s1 after a version-5 import holds %s", into, got)
		}
	}
}
