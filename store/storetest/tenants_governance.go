package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// govScope is one side of the governance isolation test: the default
// tenant (the store itself) or a tenant handle, with its facets and the
// ids of the governed sessions it created.
type govScope struct {
	name  string // "" for the default tenant
	gov   store.Governance
	spend store.Spend
	audit store.Audit
	ids   []string // its sessions: [0] used, [1] closed, [2] capped
}

// The agent every scope of the governance isolation test uses: the same
// name in each (per tenant, it has a cap, limits and a chain of its own).
const tgAgent = "shared-agent"

func govScopeOf(t *testing.T, e *env, name string) govScope {
	if name == "" {
		return govScope{gov: e.st.Governance(), spend: e.st.Spend(), audit: e.st.Audit()}
	}
	ts := e.tenant(t, name)
	return govScope{name: name, gov: ts.Governance(), spend: ts.Spend(), audit: ts.Audit()}
}

// tgSeed gives scope sc three governed sessions of tgAgent (the cap of 3
// counts the scope's own only: every scope creates its three), uses,
// a reservation settled and one held, agent limits, a refusal recorded
// and a checkpoint of the agent's chain.
func tgSeed(t *testing.T, e *env, sc *govScope) {
	t.Helper()
	limits := []store.SpendLimit{{Metric: store.MetricTotalTokens, Window: store.WindowLifetime, Limit: 1000}}
	for i := 0; i < 3; i++ {
		s, err := sc.gov.Create(e.ctx, store.CreateRequest{AgentID: tgAgent, AuthorizedTools: []string{"search"},
			CallBudget: 5, TimeLimit: time.Hour, MaxActivePerAgent: 3, SpendLimits: limits})
		if err != nil {
			t.Fatalf("%q: create %d: %v", sc.name, i, err)
		}
		sc.ids = append(sc.ids, s.ID)
	}
	if _, err := sc.gov.Create(e.ctx, store.CreateRequest{AgentID: tgAgent, AuthorizedTools: []string{"search"},
		CallBudget: 5, TimeLimit: time.Hour, MaxActivePerAgent: 3}); !errors.Is(err, store.ErrTooManySessions) {
		t.Fatalf("%q: a fourth session under a cap of 3 = %v, want ErrTooManySessions", sc.name, err)
	}
	for i, req := range []store.UseRequest{
		{SessionID: sc.ids[0], Tools: []string{"search"}},
		{SessionID: sc.ids[0], Tools: []string{"search", "search"}, RequestID: "use-1"},
		{SessionID: sc.ids[0], Tools: []string{"delete"}, RequestID: "use-2"}, // refused, recorded
	} {
		_, err := sc.gov.Use(e.ctx, req)
		if (i == 2) != (err != nil) {
			t.Fatalf("%q: use %d: %v", sc.name, i, err)
		}
	}
	if err := sc.spend.SetAgentLimits(e.ctx, tgAgent, []store.SpendLimit{{Metric: store.MetricInputTokens, Window: store.WindowDay, Limit: 500}}); err != nil {
		t.Fatalf("%q: SetAgentLimits: %v", sc.name, err)
	}
	for _, id := range []string{"res-settled", "res-held"} {
		if _, err := sc.spend.Reserve(e.ctx, store.ReserveRequest{SessionID: sc.ids[0], RequestID: id,
			Amount: store.SpendAmount{InputTokens: 10, OutputTokens: 5}}); err != nil {
			t.Fatalf("%q: Reserve %s: %v", sc.name, id, err)
		}
	}
	if _, err := sc.spend.Settle(e.ctx, store.SettleRequest{SessionID: sc.ids[0], RequestID: "res-settled",
		Actual: store.SpendAmount{InputTokens: 7, OutputTokens: 3}}); err != nil {
		t.Fatalf("%q: Settle: %v", sc.name, err)
	}
	if _, err := sc.gov.Close(e.ctx, sc.ids[1]); err != nil {
		t.Fatalf("%q: Close: %v", sc.name, err)
	}
	if n, err := sc.audit.Checkpoint(e.ctx, tgAgent); err != nil || n != 1 {
		t.Fatalf("%q: Checkpoint = %d, %v", sc.name, n, err)
	}
}

// tgDump reads everything scope sc can see through the read methods of its
// governance, spend and audit facets, as text.
func tgDump(t *testing.T, e *env, sc govScope) string {
	t.Helper()
	var b strings.Builder
	put := func(what string, v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%q: %s: %v", sc.name, what, err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s\n", what, j)
	}
	page, err := sc.gov.List(e.ctx, store.ListFilter{Limit: 1000})
	put("sessions", page, err)
	n, err := sc.gov.CountActive(e.ctx, tgAgent)
	put("active", n, err)
	var ids []string
	for _, s := range page.Items {
		ids = append(ids, s.ID)
		got, err := sc.gov.Get(e.ctx, s.ID)
		put("session", got, err)
		st, err := sc.spend.Status(e.ctx, s.ID)
		put("spend status", st, err)
		if ur, ok := sc.gov.(store.UseRecorder); ok {
			recs, err := ur.UseRecords(e.ctx, store.UseRecordsRequest{SessionID: s.ID, Limit: 100})
			put("use records", recs, err)
		}
	}
	if ur, ok := sc.gov.(store.UseRecorder); ok {
		refusals, err := ur.RecentRefusals(e.ctx, 100)
		put("refusals", refusals, err)
		outcomes, err := ur.UseOutcomes(e.ctx, time.Time{})
		put("use outcomes", outcomes, err)
	}
	as, err := sc.spend.AgentStatus(e.ctx, tgAgent)
	put("agent spend", as, err)
	recs, err := sc.spend.Export(e.ctx, nil)
	put("spend export", recs, err)
	if ids != nil {
		recs, err = sc.spend.Export(e.ctx, ids)
		put("spend export of sessions", recs, err)
	}
	events, err := sc.audit.List(e.ctx, store.AuditFilter{Limit: 1000})
	put("audit", events, err)
	heads, err := sc.audit.Heads(e.ctx)
	put("heads", heads, err)
	rep, err := sc.audit.Verify(e.ctx)
	put("verify", rep, err)
	if ac, ok := sc.audit.(store.AuditCounter); ok {
		counts, err := ac.DecisionCounts(e.ctx, time.Time{})
		put("decision counts", counts, err)
	}
	return b.String()
}

// testTenantGovernance seeds governed sessions, spend and audit chains of
// the same agent in the default tenant and in tenants A and B, then calls
// every method of the governance, spend and audit facets through A: each
// read finds A's rows only, each write changes A's rows only, another
// tenant's session id is ErrNotFound through A, and B and the default
// tenant read exactly as before.
func testTenantGovernance(t *testing.T, e *env) {
	def, a, b := govScopeOf(t, e, ""), govScopeOf(t, e, "gov-a"), govScopeOf(t, e, "gov-b")
	scopes := []*govScope{&def, &a, &b}
	for _, sc := range scopes {
		tgSeed(t, e, sc)
	}
	before := map[string]string{}
	for _, sc := range scopes {
		before[sc.name] = tgDump(t, e, *sc)
		for _, other := range scopes {
			for _, id := range other.ids {
				if other.name != sc.name && strings.Contains(before[sc.name], id) {
					t.Fatalf("%q reads session %s of %q:\n%s", sc.name, id, other.name, before[sc.name])
				}
			}
		}
		for _, id := range sc.ids {
			if !strings.Contains(before[sc.name], id) {
				t.Fatalf("%q does not read its own session %s:\n%s", sc.name, id, before[sc.name])
			}
		}
	}
	// The three scopes did the same things: their audit trails have the
	// same shape (the per-tenant agent chain was not shared).
	for _, sc := range scopes {
		rep, err := sc.audit.Verify(e.ctx)
		ref, _ := def.audit.Verify(e.ctx)
		if err != nil || len(rep.Problems) != 0 || rep.Chains != ref.Chains || rep.Events != ref.Events {
			t.Fatalf("%q: Verify = %+v, %v; want no problems and the default tenant's %d chains, %d events",
				sc.name, rep, err, ref.Chains, ref.Events)
		}
	}
	foreign := slices.Concat(def.ids, b.ids)
	notFound := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of another tenant's session through gov-a = %v, want ErrNotFound", what, err)
		}
	}
	calls := []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"GetUseCloseOfAnotherTenantsIDAreNotFound", func(t *testing.T) {
			for _, id := range foreign {
				_, err := a.gov.Get(e.ctx, id)
				notFound(t, "Get", err)
				_, err = a.gov.Use(e.ctx, store.UseRequest{SessionID: id, Tools: []string{"search"}})
				notFound(t, "Use", err)
				_, err = a.gov.Use(e.ctx, store.UseRequest{SessionID: id, Tools: []string{"search"}, RequestID: "use-1"})
				notFound(t, "Use with a request id", err)
				_, err = a.gov.Close(e.ctx, id)
				notFound(t, "Close", err)
				_, err = a.spend.Reserve(e.ctx, store.ReserveRequest{SessionID: id, Amount: store.SpendAmount{InputTokens: 1}})
				notFound(t, "Reserve", err)
				_, err = a.spend.Reservation(e.ctx, id, "res-held")
				notFound(t, "Reservation", err)
				_, err = a.spend.Settle(e.ctx, store.SettleRequest{SessionID: id, RequestID: "res-held"})
				notFound(t, "Settle", err)
				_, err = a.spend.Release(e.ctx, store.ReleaseRequest{SessionID: id, RequestID: "res-held"})
				notFound(t, "Release", err)
				_, err = a.spend.Status(e.ctx, id)
				notFound(t, "Status", err)
			}
		}},
		{"CreateWithAnotherTenantsIDIsConflict", func(t *testing.T) {
			_, err := a.gov.Create(e.ctx, store.CreateRequest{ID: b.ids[0], AgentID: tgAgent, CallBudget: 1, TimeLimit: time.Hour})
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Create with tenant gov-b's id = %v, want ErrConflict", err)
			}
			theirs, err := def.gov.Get(e.ctx, def.ids[2])
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.gov.Restore(e.ctx, store.RestoreRequest{Sessions: []store.Session{theirs}})
			if !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Restore of the default tenant's id = %v, want ErrConflict", err)
			}
		}},
		{"CapCountsTheTenantsOwnSessions", func(t *testing.T) {
			if n, err := a.gov.CountActive(e.ctx, tgAgent); err != nil || n != 2 {
				t.Fatalf("CountActive = %d, %v; want gov-a's 2", n, err)
			}
			s, err := a.gov.Create(e.ctx, store.CreateRequest{AgentID: tgAgent, CallBudget: 1, TimeLimit: time.Hour, MaxActivePerAgent: 3})
			if err != nil {
				t.Fatalf("a third active session of gov-a under a cap of 3 (the other tenants hold 4 more): %v", err)
			}
			a.ids = append(a.ids, s.ID)
			if _, err := a.gov.Create(e.ctx, store.CreateRequest{AgentID: tgAgent, CallBudget: 1, TimeLimit: time.Hour,
				MaxActivePerAgent: 3}); !errors.Is(err, store.ErrTooManySessions) {
				t.Fatalf("a fourth = %v, want ErrTooManySessions", err)
			}
		}},
		{"UseAndListSeeTheTenantsRows", func(t *testing.T) {
			s, err := a.gov.Use(e.ctx, store.UseRequest{SessionID: a.ids[0], AgentID: tgAgent, Tools: []string{"search"}})
			if err != nil || s.CallsMade != 4 {
				t.Fatalf("Use = %+v, %v; want 4 calls (gov-a's own)", s, err)
			}
			for _, f := range []store.ListFilter{{Limit: 100}, {AgentID: tgAgent, Limit: 100}, {Status: store.StatusActive, Limit: 100},
				{Status: store.StatusClosed, Limit: 100}, {Limit: 1}} {
				p, err := a.gov.List(e.ctx, f)
				if err != nil {
					t.Fatalf("List(%+v): %v", f, err)
				}
				for _, s := range p.Items {
					if !slices.Contains(a.ids, s.ID) {
						t.Errorf("List(%+v) returns %s, not gov-a's", f, s.ID)
					}
				}
			}
		}},
		{"SpendThroughTheTenant", func(t *testing.T) {
			r, err := a.spend.Reserve(e.ctx, store.ReserveRequest{SessionID: a.ids[0], RequestID: "res-a",
				Amount: store.SpendAmount{InputTokens: 20}})
			if err != nil {
				t.Fatalf("Reserve: %v", err)
			}
			if got, err := a.spend.Reservation(e.ctx, a.ids[0], "res-a"); err != nil || got.ID != r.ID {
				t.Fatalf("Reservation = %+v, %v", got, err)
			}
			if _, err := a.spend.Release(e.ctx, store.ReleaseRequest{SessionID: a.ids[0], RequestID: "res-a"}); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if err := a.spend.SetAgentLimits(e.ctx, tgAgent, []store.SpendLimit{{Metric: store.MetricInputTokens, Window: store.WindowDay, Limit: 900}}); err != nil {
				t.Fatalf("SetAgentLimits: %v", err)
			}
			st, err := a.spend.AgentStatus(e.ctx, tgAgent)
			if err != nil || len(st.Limits) != 1 || st.Limits[0].Limit != 900 || st.Limits[0].Spent != 7 {
				t.Fatalf("AgentStatus = %+v, %v; want gov-a's one limit of 900 with 7 spent", st, err)
			}
			if n, err := a.spend.ReleaseExpired(e.ctx); err != nil || n != 0 {
				t.Fatalf("ReleaseExpired = %d, %v", n, err)
			}
			recs, err := a.spend.Export(e.ctx, nil)
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			for _, r := range recs.Reservations {
				if !slices.Contains(a.ids, r.SessionID) {
					t.Errorf("Export holds reservation %s of %s, not gov-a's", r.ID, r.SessionID)
				}
			}
			for _, l := range recs.Limits {
				if l.SessionID != "" && !slices.Contains(a.ids, l.SessionID) {
					t.Errorf("Export holds limit %s of %s, not gov-a's", l.ID, l.SessionID)
				}
			}
		}},
		{"AuditThroughTheTenant", func(t *testing.T) {
			p, err := a.audit.List(e.ctx, store.AuditFilter{Limit: 1000})
			if err != nil || len(p.Items) == 0 {
				t.Fatalf("List = %d events, %v", len(p.Items), err)
			}
			for _, ev := range p.Items {
				if ev.SessionID != "" && !slices.Contains(a.ids, ev.SessionID) {
					t.Errorf("List holds an event of session %s, not gov-a's", ev.SessionID)
				}
			}
			for _, f := range []store.AuditFilter{{SessionID: b.ids[0], Limit: 100}, {SessionID: def.ids[0], Limit: 100}} {
				if p, err := a.audit.List(e.ctx, f); err != nil || len(p.Items) != 0 {
					t.Errorf("List of another tenant's session = %d events, %v; want none", len(p.Items), err)
				}
			}
			// gov-a's own chain of the agent restores into a tenant
			// without one (the other tenants' chains of that agent name
			// are no conflict), and is a conflict where it is.
			own, err := a.audit.List(e.ctx, store.AuditFilter{AgentID: tgAgent, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			own.Items = slices.DeleteFunc(own.Items, func(ev store.AuditEvent) bool { return ev.Chain != "" })
			heads, err := a.audit.Heads(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			heads = slices.DeleteFunc(heads, func(h store.AuditHead) bool { return h.AgentID != tgAgent || h.Chain != "" })
			if len(heads) != 1 || len(own.Items) == 0 {
				t.Fatalf("gov-a's chain of %s: heads %+v, %d events", tgAgent, heads, len(own.Items))
			}
			req := store.AuditRestoreRequest{Heads: heads, Events: own.Items}
			c := govScopeOf(t, e, "gov-c")
			if n, err := c.audit.Restore(e.ctx, req); err != nil || n != int64(len(own.Items)) {
				t.Fatalf("Restore into gov-c = %d, %v; want %d events", n, err, len(own.Items))
			}
			if rep, err := c.audit.Verify(e.ctx); err != nil || len(rep.Problems) != 0 || rep.Chains != 1 {
				t.Fatalf("gov-c: Verify = %+v, %v; want its one chain", rep, err)
			}
			if _, err := a.audit.Restore(e.ctx, req); !errors.Is(err, store.ErrConflict) {
				t.Fatalf("Restore over gov-a's own chain = %v, want ErrConflict", err)
			}
			if n, err := a.audit.Checkpoint(e.ctx, ""); err != nil || n != 1 {
				t.Fatalf("Checkpoint of every chain = %d, %v; want gov-a's one agent chain", n, err)
			}
			e.clock.Advance(time.Second)
			if _, err := a.audit.Checkpoint(e.ctx, tgAgent); err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
			removed, err := a.audit.Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now()})
			if err != nil || removed == 0 {
				t.Fatalf("Prune = %d, %v; want gov-a's chain cut", removed, err)
			}
			if rep, err := a.audit.Verify(e.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("Verify after Prune = %+v, %v", rep, err)
			}
		}},
		{"CloseAllAndCleanupTouchTheTenantOnly", func(t *testing.T) {
			n, err := a.gov.CloseAllForAgent(e.ctx, tgAgent)
			if err != nil || n != 3 {
				t.Fatalf("CloseAllForAgent = %d, %v; want gov-a's 3 active sessions", n, err)
			}
			// A reservation still holds ids[0]: Cleanup removes the other
			// 3 closed sessions of gov-a.
			removed, err := a.gov.Cleanup(e.ctx)
			if err != nil || removed != 3 {
				t.Fatalf("Cleanup = %d, %v; want gov-a's 3 closed sessions without a live reservation", removed, err)
			}
			if _, err := a.gov.Get(e.ctx, a.ids[0]); err != nil {
				t.Fatalf("Get of the session a live reservation holds: %v", err)
			}
			if rep, err := a.audit.Verify(e.ctx); err != nil || len(rep.Problems) != 0 {
				t.Fatalf("Verify after Cleanup = %+v, %v", rep, err)
			}
		}},
	}
	for _, c := range calls {
		t.Run(c.name, c.fn)
	}
	for _, sc := range []govScope{def, b} {
		if got := tgDump(t, e, sc); got != before[sc.name] {
			t.Errorf("%q reads differently after the calls through gov-a:\n%s\nwant\n%s", sc.name, got, before[sc.name])
		}
	}
}

// testTenantGovernedUseContention runs concurrent governed Use calls
// through two tenants' handles on sessions of the same agent name, and
// through the default tenant: each budget is spent exactly, no call more,
// and every tenant's audit trail verifies with one event per allowed call.
func testTenantGovernedUseContention(t *testing.T, e *env) {
	const budget = 40
	workers := 8
	scopes := []govScope{govScopeOf(t, e, ""), govScopeOf(t, e, "use-a"), govScopeOf(t, e, "use-b")}
	var wg sync.WaitGroup
	allowed := make([]atomic.Int64, len(scopes))
	events := make([]int64, len(scopes))
	for i := range scopes {
		s, err := scopes[i].gov.Create(e.ctx, store.CreateRequest{AgentID: "hot-agent", AuthorizedTools: []string{"t"},
			CallBudget: budget, TimeLimit: time.Hour, MaxActivePerAgent: 1})
		if err != nil {
			t.Fatalf("%q: Create: %v", scopes[i].name, err)
		}
		scopes[i].ids = []string{s.ID}
		rep, err := scopes[i].audit.Verify(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		events[i] = rep.Events
	}
	errs := make(chan error, len(scopes)*workers)
	for i := range scopes {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// More calls than the budget: the surplus must be refused.
				for c := 0; c < budget/workers+3; c++ {
					_, err := scopes[i].gov.Use(e.ctx, store.UseRequest{SessionID: scopes[i].ids[0], AgentID: "hot-agent", Tools: []string{"t"}})
					switch {
					case err == nil:
						allowed[i].Add(1)
					case errors.Is(err, store.ErrBudgetExceeded):
					default:
						errs <- fmt.Errorf("%q: Use: %w", scopes[i].name, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, sc := range scopes {
		if got := allowed[i].Load(); got != budget {
			t.Errorf("%q: %d calls allowed, want exactly the budget %d", sc.name, got, budget)
		}
		s, err := sc.gov.Get(e.ctx, sc.ids[0])
		if err != nil || s.CallsMade != budget {
			t.Errorf("%q: Get = %d calls made, %v; want %d", sc.name, s.CallsMade, err, budget)
		}
		rep, err := sc.audit.Verify(e.ctx)
		if err != nil || len(rep.Problems) != 0 {
			t.Fatalf("%q: Verify = %+v, %v", sc.name, rep, err)
		}
		// Every allowed call and every refusal is one event.
		calls := int64(workers * (budget/workers + 3))
		if rep.Events-events[i] != calls {
			t.Errorf("%q: %d audit events for %d calls", sc.name, rep.Events-events[i], calls)
		}
	}
}
