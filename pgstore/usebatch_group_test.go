package pgstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// allEvents lists every audit event of st, in (agent, chain, seq) order.
func allEvents(t *testing.T, st *pgstore.Store) []store.AuditEvent {
	t.Helper()
	var out []store.AuditEvent
	f := store.AuditFilter{Limit: 100}
	for {
		page, err := st.Audit().List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		f.After = page.Next
	}
}

// TestUseBatchOneSessionMatchesAlone: the calls of one session in a batch
// are decided together on its row (usebatch_group.go); two stores on the
// same clock get the same sessions and the same steps, one deciding each
// step's calls as one batch, the other one call at a time, in the same
// order. Every call gets the same session or the same refusal, the stored
// sessions are the same, and the audit trails are the same event for
// event (sequence numbers, previous hashes and hashes included), each
// verifying with the same digest. The steps refuse calls in the middle of
// a batch for every reason: a tool not allowed, another agent, the rate
// limit (and a new window after the clock moves), the budget, an expired
// session (marked expired by the first of its calls), a missing one. It
// runs twice: each batch finding its rows free, and each following a
// batch that held them while it committed (then its read of the rows
// locks them, with no lock-first step).
func TestUseBatchOneSessionMatchesAlone(t *testing.T) {
	for _, afterCommit := range []bool{false, true} {
		t.Run(map[bool]string{false: "rows free", true: "after a commit"}[afterCommit], func(t *testing.T) {
			testUseBatchOneSessionMatchesAlone(t, afterCommit)
		})
	}
}

func testUseBatchOneSessionMatchesAlone(t *testing.T, afterCommit bool) {
	ctx := context.Background()
	type side struct {
		st    *pgstore.Store
		clock *storetest.Clock
	}
	var sides [2]side
	for i := range sides {
		clock := storetest.NewClock()
		st, err := pgstore.Open(ctx, newSchema(t), pgstore.WithClock(clock.Now), pgstore.WithoutIndexer())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		for _, req := range []store.CreateRequest{
			{ID: "s", AgentID: "A", AuthorizedTools: []string{"read_file", "write_file"}, CallBudget: 8,
				RateLimit: 4, RateWindow: 10 * time.Second, TimeLimit: time.Hour},
			{ID: "x", AgentID: "A", AuthorizedTools: []string{"*"}, CallBudget: 8, TimeLimit: time.Second},
		} {
			if _, err := st.Governance().Create(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		sides[i] = side{st: st, clock: clock}
	}
	use := func(id string, tools ...string) store.UseRequest {
		return store.UseRequest{SessionID: id, Tools: tools}
	}
	intruder := store.UseRequest{SessionID: "s", AgentID: "B", Tools: []string{"read_file"}}
	steps := []struct {
		advance time.Duration
		reqs    []store.UseRequest
	}{
		// A tool not allowed and another agent between allowed calls,
		// then the rate limit (4 per window) in the middle of the batch.
		{0, []store.UseRequest{use("s", "read_file"), use("s", "delete_file"), intruder, use("s", "read_file", "write_file"),
			use("s", "read_file"), use("s", "write_file"), use("s", "read_file")}},
		// Still in the window: refused.
		{time.Second, []store.UseRequest{use("s", "read_file"), use("s", "write_file")}},
		// A new window; the budget (8) runs out in the middle.
		{10 * time.Second, []store.UseRequest{use("s", "read_file", "write_file"), use("s", "read_file"),
			use("s", "read_file", "write_file"), use("s", "read_file"), use("s", "write_file")}},
		{10 * time.Second, []store.UseRequest{use("s", "read_file"), use("s", "read_file", "write_file"), use("s", "read_file")}},
		// x has expired: its first call marks it so, every call is refused.
		{0, []store.UseRequest{use("x", "any"), use("x", "any"), use("x", "other")}},
		{0, []store.UseRequest{use("missing", "read_file"), use("missing", "read_file")}},
	}
	seen := map[string]bool{}
	for n, step := range steps {
		for i := range sides {
			sides[i].clock.Advance(step.advance)
		}
		decide := sides[0].st.DecideUseBatch
		if afterCommit {
			decide = sides[0].st.DecideUseBatchAfterCommit
		}
		batched, errsBatched := decide(ctx, step.reqs)
		for i, req := range step.reqs {
			alone, err := sides[1].st.Governance().Use(ctx, req)
			if !reflect.DeepEqual(err, errsBatched[i]) {
				t.Fatalf("step %d, call %d: batched %v, alone %v", n, i, errsBatched[i], err)
			}
			if !reflect.DeepEqual(batched[i], alone) {
				t.Fatalf("step %d, call %d: batched %+v, alone %+v", n, i, batched[i], alone)
			}
			seen[store.AuditOutcome(err)] = true
			if errors.Is(err, store.ErrNotFound) {
				seen["not_found"] = true
			}
		}
	}
	// The steps refused for every reason, and allowed some.
	for _, outcome := range []string{store.OutcomeAllowed, store.OutcomeToolDenied, store.OutcomeAgentMismatch,
		store.OutcomeRateLimited, store.OutcomeBudgetExceeded, store.OutcomeExpired, "not_found"} {
		if !seen[outcome] {
			t.Errorf("no call had the outcome %q", outcome)
		}
	}
	// Each batch of the batched store was one transaction.
	if n, calls := sides[0].st.UseBatchStats(); n != int64(len(steps)) || calls != 22 {
		t.Errorf("%d batches of %d calls; want %d of 22", n, calls, len(steps))
	}
	for _, id := range []string{"s", "x"} {
		a, errA := sides[0].st.Governance().Get(ctx, id)
		b, errB := sides[1].st.Governance().Get(ctx, id)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("stored %s: batched %+v, %v; alone %+v, %v", id, a, errA, b, errB)
		}
	}
	if got, err := sides[0].st.Governance().Get(ctx, "x"); err != nil || got.Status != store.StatusExpired {
		t.Fatalf("x: %+v, %v; want expired", got, err)
	}
	evA, evB := allEvents(t, sides[0].st), allEvents(t, sides[1].st)
	if len(evA) != len(evB) {
		t.Fatalf("%d audit events batched, %d alone", len(evA), len(evB))
	}
	for i := range evA {
		if !reflect.DeepEqual(evA[i], evB[i]) {
			t.Fatalf("audit event %d: batched %+v\nalone %+v", i, evA[i], evB[i])
		}
	}
	repA, errA := sides[0].st.Audit().Verify(ctx)
	repB, errB := sides[1].st.Audit().Verify(ctx)
	if errA != nil || errB != nil || !repA.OK() || !repB.OK() || repA.Digest != repB.Digest || repA.Events != repB.Events {
		t.Fatalf("audit verify: batched %+v, %v; alone %+v, %v", repA, errA, repB, errB)
	}
}

// TestUseBatchOneSessionAsTenantRole: a batch of calls of one session of
// a tenant, through a store connected as a role subject to the row-level
// security policies: the session's row is read and written, and its audit
// events appended, as the tenant's (the batch's transaction sets the
// tenant), with the outcomes of one call at a time.
func TestUseBatchOneSessionAsTenantRole(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	role := newTenantRole(t, ctx, tenantSchemaOf(t, loc), true)
	roleLoc, err := withParam(loc, "user", role)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pgstore.Open(ctx, roleLoc, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatalf("open as %s: %v", role, err)
	}
	defer rs.Close()
	if rs.BypassesRLS() {
		t.Fatalf("%s bypasses row-level security", role)
	}
	ts, err := rs.Tenant("tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	gov := ts.Governance()
	if _, err := gov.Create(ctx, store.CreateRequest{ID: "s", AgentID: "A", AuthorizedTools: []string{"t"}, CallBudget: 2, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	use := func(tool string) store.UseRequest { return store.UseRequest{SessionID: "s", Tools: []string{tool}} }
	sessions, errs := pgstore.DecideUseBatchOf(ctx, gov, []store.UseRequest{use("t"), use("x"), use("t"), use("t")})
	if errs[0] != nil || sessions[0].CallsMade != 1 || !errors.Is(errs[1], store.ErrToolNotAuthorized) ||
		errs[2] != nil || sessions[2].CallsMade != 2 || !errors.Is(errs[3], store.ErrBudgetExceeded) {
		t.Fatalf("batch as the tenant role: %v, %+v", errs, sessions)
	}
	if got, err := gov.Get(ctx, "s"); err != nil || got.CallsMade != 2 {
		t.Fatalf("stored: %+v, %v; want 2 calls made", got, err)
	}
	// The create (the agent's chain) and the four decisions (the
	// session's), the tenant's; none of the default tenant's.
	if rep, err := ts.Audit().Verify(ctx); err != nil || !rep.OK() || rep.Events != 5 {
		t.Fatalf("tenant's audit: %+v, %v; want 5 events verified", rep, err)
	}
	if rep, err := st.Audit().Verify(ctx); err != nil || rep.Events != 0 {
		t.Fatalf("default tenant's audit: %+v, %v; want none", rep, err)
	}
}

// TestUseBatchOneSessionWithoutAudit: on a store that audits nothing (the
// audit benchmarks' baseline), the calls of one session in a batch are
// counted as alone, and no event is appended.
func TestUseBatchOneSessionWithoutAudit(t *testing.T) {
	ctx := context.Background()
	st, err := pgstore.Open(ctx, newSchema(t), pgstore.WithoutAudit(), pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "s", AgentID: "A", AuthorizedTools: []string{"t"}, CallBudget: 2, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	use := store.UseRequest{SessionID: "s", Tools: []string{"t"}}
	sessions, errs := st.DecideUseBatch(ctx, []store.UseRequest{use, use, use})
	if errs[0] != nil || sessions[0].CallsMade != 1 || errs[1] != nil || sessions[1].CallsMade != 2 || !errors.Is(errs[2], store.ErrBudgetExceeded) {
		t.Fatalf("batch: %v, %+v", errs, sessions)
	}
	wantCalls(t, st, map[string]int64{"s": 2})
	if evs := allEvents(t, st); len(evs) != 0 {
		t.Fatalf("%d audit events; want none", len(evs))
	}
}
