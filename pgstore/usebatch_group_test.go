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
// session (marked expired by the first of its calls), a missing one.
func TestUseBatchOneSessionMatchesAlone(t *testing.T) {
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
		batched, errsBatched := sides[0].st.DecideUseBatch(ctx, step.reqs)
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
