package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// tenantView is a store.Store whose facets are a tenant's, so that the
// fixtures and the by-listing counts of the store-wide tests (countsFixture,
// countsByListing, totalsByListing) run on a tenant's rows unchanged.
type tenantView struct {
	store.Store
	ts store.TenantStore
}

func (v tenantView) AgentSessions() store.AgentSessions { return v.ts.AgentSessions() }
func (v tenantView) Governance() store.Governance       { return v.ts.Governance() }
func (v tenantView) Spend() store.Spend                 { return v.ts.Spend() }
func (v tenantView) Audit() store.Audit                 { return v.ts.Audit() }
func (v tenantView) Conversations() store.Conversations { return v.ts.Conversations() }
func (v tenantView) Runtime() store.Runtime             { return v.ts.Runtime() }

// tenantEnv is e on the facets of tenant name, failing t; the global ids
// of its counts fixture begin with name.
func (e *env) tenantEnv(t *testing.T, name string) (*env, store.TenantStore) {
	t.Helper()
	ts := e.tenant(t, name)
	te := *e
	te.t, te.st, te.ids = t, tenantView{Store: e.st, ts: ts}, name+"-"
	return &te, ts
}

// countsOfListing is what counting the facets of e by listing gives.
func (e *env) countsOfListing() store.Counts {
	var want store.Counts
	for _, f := range facet.All() {
		count, ok := countsByListing[f.Name]
		if !ok {
			e.t.Fatalf("facet %s has no counts by listing", f.Name)
		}
		count(e, &want)
	}
	return want
}

// testTenantAggregates: a tenant handle's Counts and Totals count the
// tenant's rows only. Tenant a gets the counts fixture (every count
// non-zero); its Counts and Totals equal what listing its facets gives;
// then tenant b and the default tenant get rows of every facet too, and
// a's figures do not move, b's equal b's listings, and the store-wide
// counts grew by exactly a's and b's (and the default tenant's) rows.
// Also: the audit decisions of a's Audit facet are a's only, bad requests
// are ErrInvalidInput, and a closed store's handle refuses.
func testTenantAggregates(t *testing.T, e *env) {
	cnt, ok := e.st.(store.Counter)
	if !ok {
		t.Skip("the backend's Store does not implement store.Counter")
	}
	before, err := cnt.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ea, ta := e.tenantEnv(t, "aggregates-a")
	eb, tb := e.tenantEnv(t, "aggregates-b")
	ea.countsFixture()

	gotA, err := ta.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gj, wj := dumpJSON(t, gotA), dumpJSON(t, ea.countsOfListing()); gj != wj {
		t.Fatalf("tenant a's Counts:\n%s\nwant (by listing its facets):\n%s", gj, wj)
	}
	for _, zero := range zeroCounts(reflect.ValueOf(gotA), "Counts") {
		t.Errorf("the fixture leaves tenant a's %s zero: the test cannot tell a tenant filter from none", zero)
	}
	since := e.clock.Now().Add(-48 * time.Hour)
	totA, err := ta.Totals(e.ctx, store.TotalsRequest{Since: since, Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	if gj, wj := dumpJSON(t, totA), dumpJSON(t, ea.totalsByListing(since, 3)); gj != wj {
		t.Fatalf("tenant a's Totals:\n%s\nwant (by listing its facets):\n%s", gj, wj)
	}
	decisions := func(ts store.TenantStore) []store.AuditDayCount {
		t.Helper()
		ac, ok := ts.Audit().(store.AuditCounter)
		if !ok {
			return nil
		}
		d, err := ac.DecisionCounts(e.ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	decA := decisions(ta)

	// The other tenants write rows of every facet: the default tenant a
	// governed session, a conversation, a runtime session and an agent
	// session; b the same fixture as a (under ids of its own).
	de := *e
	de.t = t
	de.create(baseRequest())
	de.save(store.NewConversation("aggregates-default-conv"))
	de.rtInsert(store.NewRuntimeSession{ID: "aggregates-default-rt", AgentAlias: "coder", WorkspaceDir: ".", ChatMode: store.ChatModeChat})
	de.asCreate(store.SessionKey{App: "app-1", User: "u1", Session: "aggregates-default"}, store.ScopedState{})
	mid, err := cnt.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	eb.countsFixture()

	againA, err := ta.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gj, wj := dumpJSON(t, againA), dumpJSON(t, ea.countsOfListing()); gj != wj {
		t.Fatalf("tenant a's Counts after b and the default tenant wrote:\n%s\nwant (by listing a's facets):\n%s", gj, wj)
	}
	if againA.Governed.Total != gotA.Governed.Total || againA.Conversations.Total != gotA.Conversations.Total ||
		againA.AgentSessions != gotA.AgentSessions || againA.Runtime.Uploads != gotA.Runtime.Uploads || againA.Audit != gotA.Audit {
		t.Fatalf("tenant a's Counts moved when other tenants wrote:\n%s\nbefore:\n%s", dumpJSON(t, againA), dumpJSON(t, gotA))
	}
	totAgain, err := ta.Totals(e.ctx, store.TotalsRequest{Since: since, Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	if gj, wj := dumpJSON(t, totAgain), dumpJSON(t, ea.totalsByListing(since, 3)); gj != wj {
		t.Fatalf("tenant a's Totals after b and the default tenant wrote:\n%s\nwant (by listing):\n%s", gj, wj)
	}
	if gj, wj := dumpJSON(t, decisions(ta)), dumpJSON(t, decA); gj != wj {
		t.Fatalf("tenant a's decision counts moved when other tenants wrote:\n%s\nbefore:\n%s", gj, wj)
	}
	gotB, err := tb.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gj, wj := dumpJSON(t, gotB), dumpJSON(t, eb.countsOfListing()); gj != wj {
		t.Fatalf("tenant b's Counts:\n%s\nwant (by listing its facets):\n%s", gj, wj)
	}

	// The store's own counts are store-wide: they grew by a's rows and
	// the default tenant's, then by b's, exactly.
	after, err := cnt.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what                                string
		before, mid, after, byA, byDef, byB int64
	}{
		{"governed sessions", before.Governed.Total, mid.Governed.Total, after.Governed.Total, gotA.Governed.Total, 1, gotB.Governed.Total},
		{"conversations", before.Conversations.Total, mid.Conversations.Total, after.Conversations.Total, gotA.Conversations.Total, 1, gotB.Conversations.Total},
		{"messages", before.Conversations.Messages, mid.Conversations.Messages, after.Conversations.Messages, gotA.Conversations.Messages, 0, gotB.Conversations.Messages},
		{"runtime sessions", before.Runtime.Total, mid.Runtime.Total, after.Runtime.Total, gotA.Runtime.Total, 1, gotB.Runtime.Total},
		{"uploads", before.Runtime.Uploads, mid.Runtime.Uploads, after.Runtime.Uploads, gotA.Runtime.Uploads, 0, gotB.Runtime.Uploads},
		{"upload bytes", before.Runtime.UploadBytes, mid.Runtime.UploadBytes, after.Runtime.UploadBytes, gotA.Runtime.UploadBytes, 0, gotB.Runtime.UploadBytes},
		{"agent sessions", before.AgentSessions.Total, mid.AgentSessions.Total, after.AgentSessions.Total, gotA.AgentSessions.Total, 1, gotB.AgentSessions.Total},
		{"agent events", before.AgentSessions.Events, mid.AgentSessions.Events, after.AgentSessions.Events, gotA.AgentSessions.Events, 0, gotB.AgentSessions.Events},
		{"audit events", before.Audit.EventsAppended, mid.Audit.EventsAppended, after.Audit.EventsAppended, gotA.Audit.EventsAppended, mid.Audit.EventsAppended - before.Audit.EventsAppended - gotA.Audit.EventsAppended, gotB.Audit.EventsAppended},
	} {
		if c.mid-c.before != c.byA+c.byDef || c.after-c.mid != c.byB {
			t.Errorf("store-wide %s: %d, then %d, then %d; want growth by %d (a) + %d (default), then by %d (b)",
				c.what, c.before, c.mid, c.after, c.byA, c.byDef, c.byB)
		}
	}

	// The Store's Totals of the default tenant only equal what listing
	// the Store's own facets gives (the operator's console shows both);
	// a tenant's handle ignores the flag.
	if tot, ok := e.st.(store.Totaler); ok {
		de.t = t
		defTot, err := tot.Totals(e.ctx, store.TotalsRequest{Since: since, Top: 3, DefaultTenantOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if gj, wj := dumpJSON(t, defTot), dumpJSON(t, de.totalsByListing(since, 3)); gj != wj {
			t.Fatalf("the Store's Totals of the default tenant only:\n%s\nwant (by listing the Store's facets):\n%s", gj, wj)
		}
		aOnly, err := ta.Totals(e.ctx, store.TotalsRequest{Since: since, Top: 3, DefaultTenantOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if gj, wj := dumpJSON(t, aOnly), dumpJSON(t, totAgain); gj != wj {
			t.Fatalf("tenant a's Totals with DefaultTenantOnly:\n%s\nwant a's own:\n%s", gj, wj)
		}
	}

	if _, err := ta.Totals(e.ctx, store.TotalsRequest{Top: 101}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("Totals with Top 101: %v, want ErrInvalidInput", err)
	}
	closed := e.open()
	tr, _ := closed.(store.Tenanter)
	tc, err := tr.Tenant("aggregates-a")
	if err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.Counts(e.ctx); !errors.Is(err, store.ErrStoreClosed) {
		t.Errorf("Counts of a closed store's tenant: %v, want ErrStoreClosed", err)
	}
	if _, err := tc.Totals(e.ctx, store.TotalsRequest{}); !errors.Is(err, store.ErrStoreClosed) {
		t.Errorf("Totals of a closed store's tenant: %v, want ErrStoreClosed", err)
	}
}
