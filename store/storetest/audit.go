package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunAudit runs the audit-trail tests: every decision of a scripted run
// appears once, in order, in its session's chain or (the agent's own
// decisions) in its agent's chain; the chains verify, and
// verify finds any event changed, removed or inserted behind the store's
// back; retention cuts a chain only at a checkpoint; export and restore
// keep the chains and their digest.
func RunAudit(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"ScriptedRunAppearsOnceInOrder", testAuditScripted},
		{"OneChainPerSessionAndAgent", testAuditPerAgent},
		{"RemovedSessionsChainVerifiesByItsFinalHead", testAuditRemoved},
		{"ChainsStayWholeUnderConcurrency", testAuditConcurrent},
		{"DigestCoversEveryChainHead", testAuditDigest},
		{"ListFiltersAndPaging", testAuditList},
		{"VerifyFindsTampering", testAuditTamper},
		{"CheckpointAndPrune", testAuditPrune},
		{"PruneRefusesAChainThatDoesNotVerify", testAuditPruneTampered},
		{"RestoreRoundTrip", testAuditRestore},
		{"RestoreRefusesBrokenChains", testAuditRestoreBroken},
		{"InvalidInputChangesNothing", testAuditInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

// auditAll returns every event, or those of one agent, through the pages.
func (e *env) auditAll(agent string) []store.AuditEvent {
	e.t.Helper()
	var out []store.AuditEvent
	f := store.AuditFilter{AgentID: agent, Limit: 7}
	for {
		page, err := e.st.Audit().List(e.ctx, f)
		if err != nil {
			e.t.Fatalf("audit List: %v", err)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		f.After = page.Next
	}
}

func (e *env) auditCount() int { return len(e.auditAll("")) }

func (e *env) verifyAudit() store.AuditReport {
	e.t.Helper()
	rep, err := e.st.Audit().Verify(e.ctx)
	if err != nil {
		e.t.Fatalf("audit Verify: %v", err)
	}
	if !rep.OK() {
		e.t.Fatalf("audit Verify found %+v", rep.Problems)
	}
	return rep
}

// step is an expected audit event: kind, outcome, session and request.
type step struct {
	kind    store.AuditKind
	outcome string
	session string
	request string
}

func (s step) String() string {
	return fmt.Sprintf("%s/%s/%s/%s", s.kind, s.outcome, s.session, s.request)
}

func stepsOf(events []store.AuditEvent) []step {
	out := make([]step, len(events))
	for i, ev := range events {
		out[i] = step{ev.Kind, ev.Outcome, ev.SessionID, ev.RequestID}
	}
	return out
}

func testAuditScripted(t *testing.T, e *env) {
	agent := "agent-" + fmt.Sprint(nextID.Add(1))
	req := func(id string) store.CreateRequest {
		r := baseRequest()
		r.ID, r.AgentID, r.CallBudget = id, agent, 10
		r.SpendLimits = []store.SpendLimit{costLimit(100, store.WindowLifetime)}
		return r
	}
	gov, sp := e.gov(), e.st.Spend()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	refused := func(err, target error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Fatalf("got %v, want %v", err, target)
		}
	}
	e.create(req("s1"))
	e.mustUse("s1", "read_file")
	_, err := e.use("s1", "write_file")
	refused(err, store.ErrToolNotAuthorized)
	e.mustReserve("s1", usd(50), "r1")
	_, err = e.reserve("s1", usd(60), "r2")
	refused(err, store.ErrSpendLimitExceeded)
	e.settle("s1", "r1", usd(40))
	e.mustReserve("s1", usd(10), "r3")
	e.release("s1", "r3")
	must(sp.SetAgentLimits(e.ctx, agent, []store.SpendLimit{costLimit(1000, store.WindowDay)}))
	_, err = gov.Use(e.ctx, store.UseRequest{SessionID: "s1", Tools: []string{"read_file"}, RequestID: "u1"})
	must(err)
	// Not decisions: a replay, a missing session, bad input, another agent.
	_, err = gov.Use(e.ctx, store.UseRequest{SessionID: "s1", Tools: []string{"read_file"}, RequestID: "u1"})
	must(err)
	e.mustReserve("s1", usd(10), "r3")
	e.settle("s1", "r1", usd(40))
	_, err = e.use("missing", "read_file")
	refused(err, store.ErrNotFound)
	_, err = e.use("s1", "bad tool!")
	refused(err, store.ErrInvalidInput)
	e.create(baseRequest())
	_, err = gov.Close(e.ctx, "s1")
	must(err)
	_, err = gov.Close(e.ctx, "s1") // an error, not a decision
	refused(err, store.ErrClosed)
	_, err = e.reserve("s1", usd(1), "r4")
	refused(err, store.ErrClosed)
	_, err = e.use("s1", "read_file")
	refused(err, store.ErrClosed)
	r2 := req("s2")
	r2.MaxActivePerAgent = 1
	e.create(r2)
	r3 := req("s3")
	r3.MaxActivePerAgent = 1
	_, err = gov.Create(e.ctx, r3)
	refused(err, store.ErrTooManySessions)
	_, err = sp.Reserve(e.ctx, store.ReserveRequest{SessionID: "s2", RequestID: "r5", Amount: usd(10), Currency: "USD", TTL: time.Second})
	must(err)
	e.clock.Advance(2 * time.Second)
	e.mustReserve("s2", usd(10), "r6")
	_, err = gov.Use(e.ctx, store.UseRequest{SessionID: "s2", AgentID: "intruder", Tools: []string{"read_file"}})
	refused(err, store.ErrAgentMismatch)
	e.clock.Advance(time.Hour)
	_, err = e.use("s2", "read_file")
	refused(err, store.ErrExpired)
	_, err = e.use("s2", "read_file")
	refused(err, store.ErrExpired)
	n, err := gov.Cleanup(e.ctx)
	must(err)
	if n != 3 { // s1, s2 and the other agent's session, expired too
		t.Fatalf("Cleanup removed %d sessions, want 3", n)
	}
	e.create(req("s4"))
	e.create(req("s5"))
	if n, err := gov.CloseAllForAgent(e.ctx, agent); err != nil || n != 2 {
		t.Fatalf("CloseAllForAgent = %d, %v", n, err)
	}

	ok := store.OutcomeAllowed
	// The agent's own chain, then each session's, in session order.
	chains := []struct {
		chain string
		want  []step
	}{
		{"", []step{
			{store.AuditCreate, ok, "s1", ""},
			{store.AuditLimits, ok, "", ""},
			{store.AuditCreate, ok, "s2", ""},
			{store.AuditCreate, store.OutcomeTooManySessions, "s3", ""},
			{store.AuditLapse, ok, "s2", "r5"},
			{store.AuditLapse, ok, "s2", "r6"},
			{store.AuditCleanup, ok, "s1", ""},
			{store.AuditCleanup, ok, "s2", ""},
			{store.AuditCreate, ok, "s4", ""},
			{store.AuditCreate, ok, "s5", ""},
		}},
		{"s1", []step{
			{store.AuditUse, ok, "s1", ""},
			{store.AuditUse, store.OutcomeToolDenied, "s1", ""},
			{store.AuditReserve, ok, "s1", "r1"},
			{store.AuditReserve, store.OutcomeSpendExceeded, "s1", "r2"},
			{store.AuditSettle, ok, "s1", "r1"},
			{store.AuditReserve, ok, "s1", "r3"},
			{store.AuditRelease, ok, "s1", "r3"},
			{store.AuditUse, ok, "s1", "u1"},
			{store.AuditClose, ok, "s1", ""},
			{store.AuditReserve, store.OutcomeClosed, "s1", "r4"},
			{store.AuditUse, store.OutcomeClosed, "s1", ""},
		}},
		{"s2", []step{
			{store.AuditReserve, ok, "s2", "r5"},
			{store.AuditReserve, ok, "s2", "r6"},
			{store.AuditUse, store.OutcomeAgentMismatch, "s2", ""},
			{store.AuditExpire, ok, "s2", ""},
			{store.AuditUse, store.OutcomeExpired, "s2", ""},
			{store.AuditUse, store.OutcomeExpired, "s2", ""},
		}},
		{"s4", []step{{store.AuditClose, ok, "s4", ""}}},
		{"s5", []step{{store.AuditClose, ok, "s5", ""}}},
	}
	events := e.auditAll(agent)
	byChain := map[string][]store.AuditEvent{}
	var order []string
	total := 0
	for _, ev := range events {
		if len(byChain[ev.Chain]) == 0 {
			order = append(order, ev.Chain)
		}
		byChain[ev.Chain] = append(byChain[ev.Chain], ev)
	}
	if len(order) != len(chains) {
		t.Fatalf("the agent's events are in chains %q, want %d chains", order, len(chains))
	}
	for ci, c := range chains {
		total += len(c.want)
		got := byChain[c.chain]
		if order[ci] != c.chain {
			t.Fatalf("chain %d is %q, want %q (chains in (agent, chain) order)", ci, order[ci], c.chain)
		}
		if steps := stepsOf(got); !slices.Equal(steps, c.want) {
			t.Fatalf("the chain %q holds\n%v\nwant\n%v", c.chain, steps, c.want)
		}
		for i, ev := range got {
			if ev.Seq != int64(i+1) || ev.AgentID != agent || len(ev.Hash) != 64 {
				t.Fatalf("chain %q event %d = %+v", c.chain, i, ev)
			}
			if i == 0 && ev.PrevHash != strings.Repeat("0", 64) {
				t.Fatalf("chain %q does not start from the zero hash", c.chain)
			}
			if i > 0 && ev.PrevHash != got[i-1].Hash {
				t.Fatalf("chain %q event %d does not link to %d", c.chain, i+1, i)
			}
		}
	}
	s1 := byChain["s1"]
	if !strings.Contains(string(s1[0].Detail), "read_file") || !strings.Contains(string(s1[3].Detail), `"requested":60`) {
		t.Fatalf("details: %s; %s", s1[0].Detail, s1[3].Detail)
	}
	// Each removal records the removed session's final head.
	for i, sid := range []string{"s1", "s2"} {
		removal := byChain[""][6+i]
		last := byChain[sid][len(byChain[sid])-1]
		var d struct {
			FinalSeq  int64  `json:"final_seq"`
			FinalHash string `json:"final_hash"`
		}
		if err := json.Unmarshal(removal.Detail, &d); err != nil || d.FinalSeq != last.Seq || d.FinalHash != last.Hash {
			t.Fatalf("removal of %s: %s, want the final head %d %s", sid, removal.Detail, last.Seq, last.Hash)
		}
	}
	for _, ev := range events {
		if bad := nonSnakeKeys(t, ev.Detail); len(bad) > 0 {
			t.Errorf("%s %s event's detail has keys %v, not snake_case: %s", ev.Kind, ev.Outcome, bad, ev.Detail)
		}
	}
	rep := e.verifyAudit()
	// The other agent's chain: its create and its cleanup (its session's
	// chain is empty).
	if rep.Chains != int64(len(chains)+1) || rep.Events != int64(total+2) {
		t.Fatalf("verify checked %d chains and %d events, want %d and %d", rep.Chains, rep.Events, len(chains)+1, total+2)
	}
}

func testAuditPerAgent(t *testing.T, e *env) {
	a, b := baseRequest(), baseRequest()
	sa, sb := e.create(a), e.create(b)
	second := a
	second.ID = ""
	sa2 := e.create(second) // a second session of a's agent: a chain of its own
	for range 3 {
		e.mustUse(sa.ID, "read_file")
		e.mustUse(sb.ID, "list_dir")
	}
	e.mustUse(sa2.ID, "read_file")
	for _, s := range []store.Session{sa, sb} {
		events := e.auditAll(s.AgentID)
		var own, mine int
		for _, ev := range events {
			switch ev.Chain {
			case "":
				own++
				if ev.Kind != store.AuditCreate {
					t.Fatalf("agent chain of %s holds %+v", s.AgentID, ev)
				}
			case s.ID:
				mine++
				if ev.Seq != int64(mine) || ev.Kind != store.AuditUse || (mine == 1 && ev.PrevHash != strings.Repeat("0", 64)) {
					t.Fatalf("chain of %s = %+v", s.ID, events)
				}
			}
		}
		if mine != 3 {
			t.Fatalf("chain of session %s has %d events, want 3: %+v", s.ID, mine, events)
		}
	}
	heads, err := e.st.Audit().Heads(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]int64{}
	for _, h := range heads {
		got[[2]string{h.AgentID, h.Chain}] = h.Seq
	}
	want := map[[2]string]int64{
		{sa.AgentID, ""}: 2, {sa.AgentID, sa.ID}: 3, {sa.AgentID, sa2.ID}: 1,
		{sb.AgentID, ""}: 1, {sb.AgentID, sb.ID}: 3,
	}
	if len(heads) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("heads = %+v, want %v", heads, want)
	}
	for i := 1; i < len(heads); i++ {
		x, y := heads[i-1], heads[i]
		if x.AgentID > y.AgentID || (x.AgentID == y.AgentID && x.Chain >= y.Chain) {
			t.Fatalf("heads out of (agent, chain) order: %+v", heads)
		}
	}
}

// testAuditRemoved: a removed session's chain verifies against the final
// head its agent's chain recorded; removing or changing its events is
// found; a new session with the same id continues the chain.
func testAuditRemoved(t *testing.T, e *env) {
	req := baseRequest()
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	e.mustUse(s.ID, "list_dir")
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.gov().Cleanup(e.ctx); err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v", n, err)
	}
	rep := e.verifyAudit()
	if rep.Chains != 2 || rep.Events != 5 {
		t.Fatalf("verify after the removal: %+v, want 2 chains, 5 events", rep)
	}
	// The same id again: its chain goes on from the removed session's.
	again := req
	again.ID = s.ID
	e.create(again)
	e.mustUse(s.ID, "read_file")
	rep = e.verifyAudit()
	var seqs []int64
	for _, ev := range e.auditAll(s.AgentID) {
		if ev.Chain == s.ID {
			seqs = append(seqs, ev.Seq)
		}
	}
	if !slices.Equal(seqs, []int64{1, 2, 3, 4}) || rep.Chains != 2 {
		t.Fatalf("the chain of the re-created session: seqs %v, report %+v", seqs, rep)
	}
	if e.h.Exec == nil {
		return
	}
	// Removed again, then its last event deleted behind the store's back.
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov().Cleanup(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.verifyAudit()
	e.tamper(`DELETE FROM audit_events WHERE agent_id = '` + s.AgentID + `' AND chain = '` + s.ID + `' AND seq = 5`)
	bad, err := e.st.Audit().Verify(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad.Problems) != 1 || bad.Problems[0].Chain != s.ID || bad.Problems[0].Problem != store.AuditRemoved || bad.Problems[0].Seq != 5 {
		t.Fatalf("verify after deleting a removed session's last event: %+v", bad.Problems)
	}
}

// testAuditConcurrent: the sessions of one agent decide concurrently, in
// two stores (processes' stand-ins) at once; every chain stays whole.
func testAuditConcurrent(t *testing.T, e *env) {
	sessions := make([]store.Session, 8)
	for i := range sessions {
		req := baseRequest()
		if i >= 2 {
			req.AgentID = sessions[i%2].AgentID // two agents, four sessions each
		}
		req.CallBudget = 1000
		req.SpendLimits = []store.SpendLimit{costLimit(1_000_000, store.WindowLifetime)}
		sessions[i] = e.create(req)
	}
	second := e.open()
	var wg sync.WaitGroup
	for w := range 16 {
		st := e.st
		if w%2 == 1 {
			st = second
		}
		wg.Go(func() {
			s := sessions[w%len(sessions)]
			for i := range 10 {
				if _, err := st.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}}); err != nil {
					t.Errorf("use: %v", err)
				}
				id := fmt.Sprintf("c-%d-%d", w, i)
				if _, err := st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, RequestID: id, Amount: usd(1), Currency: "USD"}); err != nil {
					t.Errorf("reserve: %v", err)
				}
				if _, err := st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: id, Actual: usd(1)}); err != nil {
					t.Errorf("settle: %v", err)
				}
			}
		})
	}
	wg.Wait()
	rep := e.verifyAudit()
	// Two agent chains (4 creates each), and 8 session chains of 2
	// goroutines x 10 x (use, reserve, settle).
	if rep.Chains != 2+8 || rep.Events != 8+8*2*10*3 {
		t.Fatalf("verify: %d chains, %d events", rep.Chains, rep.Events)
	}
}

func testAuditDigest(t *testing.T, e *env) {
	s := e.create(baseRequest())
	first := e.verifyAudit()
	if again := e.verifyAudit(); again.Digest != first.Digest || len(first.Digest) != 64 {
		t.Fatalf("digest %q then %q", first.Digest, again.Digest)
	}
	e.mustUse(s.ID, "read_file")
	if grown := e.verifyAudit(); grown.Digest == first.Digest {
		t.Fatal("the digest did not change when a chain grew")
	}
	empty := newEnv(t, e.h)
	if rep := empty.verifyAudit(); rep.Chains != 0 || rep.Events != 0 || rep.Digest == "" {
		t.Fatalf("empty trail: %+v", rep)
	}
}

func testAuditList(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	other := e.create(baseRequest())
	e.mustUse(s.ID, "read_file")
	start := e.clock.Now()
	e.clock.Advance(time.Second)
	e.mustReserve(s.ID, usd(10), "r")
	_, err := e.use(s.ID, "nope")
	wantErr(t, err, store.ErrToolNotAuthorized)
	e.mustUse(other.ID, "read_file")
	list := func(f store.AuditFilter) []step {
		t.Helper()
		p, err := e.st.Audit().List(e.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return stepsOf(p.Items)
	}
	if got := list(store.AuditFilter{SessionID: s.ID, Kind: store.AuditUse}); len(got) != 2 {
		t.Fatalf("uses of the session: %v", got)
	}
	if got := list(store.AuditFilter{Outcome: store.OutcomeToolDenied}); len(got) != 1 || got[0].session != s.ID {
		t.Fatalf("refusals: %v", got)
	}
	if got := list(store.AuditFilter{AgentID: s.AgentID, Since: start.Add(time.Millisecond)}); len(got) != 2 {
		t.Fatalf("since: %v", got)
	}
	if got := list(store.AuditFilter{AgentID: s.AgentID, Until: start.Add(time.Millisecond)}); len(got) != 2 {
		t.Fatalf("until: %v", got)
	}
	all := e.auditAll("")
	if len(all) != 6 {
		t.Fatalf("%d events in all, want 6", len(all))
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if c := strings.Compare(a.AgentID, b.AgentID); c > 0 || (c == 0 && (a.Chain > b.Chain || (a.Chain == b.Chain && a.Seq >= b.Seq))) {
			t.Fatalf("events out of (agent, chain, seq) order: %v then %v", a, b)
		}
	}
	if _, err := e.st.Audit().List(e.ctx, store.AuditFilter{After: "garbage"}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("bad cursor: %v", err)
	}
}

// tamper runs one raw statement behind the store's back; the test skips
// when the harness cannot.
func (e *env) tamper(query string) {
	e.t.Helper()
	if e.h.Exec == nil {
		e.t.Skip("the harness has no Exec")
	}
	if err := e.h.Exec(e.ctx, e.loc, query); err != nil {
		e.t.Fatalf("tamper %q: %v", query, err)
	}
}

func testAuditTamper(t *testing.T, e *env) {
	if e.h.Exec == nil {
		t.Skip("the harness has no Exec")
	}
	// Each case on a fresh database: two agents, each with a session
	// whose chain holds 4 events (use, refused use, use, close) and an
	// agent chain holding its create; the case tampers with the first
	// agent's chains and verify must name the first event it changed,
	// removed or inserted, in that chain, and nothing of the other.
	zero := strings.Repeat("0", 64)
	type target struct{ agent, session string }
	in := func(x target, seq int) string {
		return ` WHERE agent_id = '` + x.agent + `' AND chain = '` + x.session + `' AND seq = ` + fmt.Sprint(seq)
	}
	cases := []struct {
		name    string
		query   func(x target, ev []store.AuditEvent) string
		agentCh bool // the problem is in the agent's own chain
		seq     int64
		problem string
	}{
		{"edit detail", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET detail = '{"tools":["rm_rf"]}'` + in(x, 1)
		}, false, 1, store.AuditChanged},
		{"edit outcome", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET outcome = 'ok'` + in(x, 2)
		}, false, 2, store.AuditChanged},
		{"edit time", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET at_us = at_us - 1` + in(x, 2)
		}, false, 2, store.AuditChanged},
		{"edit session", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET session_id = 'other'` + in(x, 1)
		}, false, 1, store.AuditChanged},
		{"edit hash", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET hash = '` + zero + `'` + in(x, 2)
		}, false, 2, store.AuditChanged},
		{"edit kind", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET kind = 'use'` + in(x, 4)
		}, false, 4, store.AuditChanged},
		{"edit create", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET detail = '{}' WHERE agent_id = '` + x.agent + `' AND chain = '' AND seq = 1`
		}, true, 1, store.AuditChanged},
		{"move to the agent chain", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_events SET chain = '', seq = 2` + in(x, 4)
		}, true, 2, store.AuditInserted},
		{"delete middle", func(x target, _ []store.AuditEvent) string {
			return `DELETE FROM audit_events` + in(x, 2)
		}, false, 2, store.AuditRemoved},
		{"delete first", func(x target, _ []store.AuditEvent) string {
			return `DELETE FROM audit_events` + in(x, 1)
		}, false, 1, store.AuditRemoved},
		{"delete last", func(x target, _ []store.AuditEvent) string {
			return `DELETE FROM audit_events` + in(x, 4)
		}, false, 4, store.AuditRemoved},
		{"delete chain", func(x target, _ []store.AuditEvent) string {
			return `DELETE FROM audit_events WHERE agent_id = '` + x.agent + `' AND chain = '` + x.session + `'`
		}, false, 1, store.AuditRemoved},
		{"insert at end", func(x target, ev []store.AuditEvent) string {
			return `INSERT INTO audit_events (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash)
				VALUES ('` + x.agent + `', '` + x.session + `', 5, 0, 'use', 'ok', '` + x.session + `', '', '{}', '` + ev[3].Hash + `', '` + zero + `')`
		}, false, 5, store.AuditInserted},
		{"insert chain", func(x target, _ []store.AuditEvent) string {
			return `INSERT INTO audit_events (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash)
				VALUES ('` + x.agent + `', 'forged', 1, 0, 'use', 'ok', 'forged', '', '{}', '` + zero + `', '` + zero + `')`
		}, false, 1, store.AuditInserted},
		{"edit head", func(x target, _ []store.AuditEvent) string {
			return `UPDATE governed_sessions SET audit_hash = '` + zero + `' WHERE id = '` + x.session + `'`
		}, false, 4, store.AuditHeadChanged},
		{"delete head", func(x target, _ []store.AuditEvent) string {
			return `UPDATE governed_sessions SET audit_seq = 0 WHERE id = '` + x.session + `'`
		}, false, 1, store.AuditInserted},
		{"edit agent head", func(x target, _ []store.AuditEvent) string {
			return `UPDATE audit_heads SET hash = '` + zero + `' WHERE agent_id = '` + x.agent + `'`
		}, true, 1, store.AuditHeadChanged},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			e := newEnv(t, e.h)
			var victim, bystander store.Session
			for _, s := range []*store.Session{&victim, &bystander} {
				*s = e.create(baseRequest())
				e.mustUse(s.ID, "read_file")
				_, err := e.use(s.ID, "write_file")
				wantErr(t, err, store.ErrToolNotAuthorized)
				e.mustUse(s.ID, "list_dir")
				if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
			var events []store.AuditEvent
			for _, ev := range e.auditAll(victim.AgentID) {
				if ev.Chain == victim.ID {
					events = append(events, ev)
				}
			}
			if len(events) != 4 {
				t.Fatalf("%d events in the session's chain", len(events))
			}
			before := e.verifyAudit()
			e.tamper(c.query(target{victim.AgentID, victim.ID}, events))
			rep, err := e.st.Audit().Verify(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantChain := victim.ID
			if c.agentCh {
				wantChain = ""
			} else if c.name == "insert chain" {
				wantChain = "forged"
			}
			var mine []store.AuditProblem
			for _, p := range rep.Problems {
				if p.AgentID == victim.AgentID {
					mine = append(mine, p)
				} else {
					t.Errorf("a problem in another agent's chain: %+v", p)
				}
			}
			want := 1
			if c.name == "move to the agent chain" {
				// Also missing from the end of the session's chain.
				want = 2
				if len(mine) == 2 && (mine[1].Chain != victim.ID || mine[1].Seq != 4 || mine[1].Problem != store.AuditRemoved) {
					t.Fatalf("verify found %+v, want also the session chain's event 4 removed", rep.Problems)
				}
			}
			if len(mine) != want || mine[0].Chain != wantChain || mine[0].Seq != c.seq || mine[0].Problem != c.problem || mine[0].Reason == "" {
				t.Fatalf("verify found %+v, want %s at %d of chain %q", rep.Problems, c.problem, c.seq, wantChain)
			}
			if strings.Contains(c.name, "head") && rep.Digest == before.Digest {
				t.Fatalf("the digest did not change")
			}
		})
	}
}

// ownChain returns the events of agent's own chain.
func (e *env) ownChain(agent string) []store.AuditEvent {
	var out []store.AuditEvent
	for _, ev := range e.auditAll(agent) {
		if ev.Chain == "" {
			out = append(out, ev)
		}
	}
	return out
}

func testAuditPrune(t *testing.T, e *env) {
	s := e.create(baseRequest())
	keep := e.create(baseRequest())
	limits := func() {
		t.Helper()
		if err := e.st.Spend().SetAgentLimits(e.ctx, s.AgentID, []store.SpendLimit{costLimit(1000, store.WindowDay)}); err != nil {
			t.Fatal(err)
		}
	}
	// s's agent chain: create, limits, limits; its session chain: 4 uses.
	limits()
	limits()
	for range 4 {
		e.mustUse(s.ID, "read_file")
	}
	e.mustUse(keep.ID, "read_file")
	e.clock.Advance(time.Second)
	if n, err := e.st.Audit().Checkpoint(e.ctx, s.AgentID); err != nil || n != 1 {
		t.Fatalf("Checkpoint = %d, %v", n, err)
	}
	cut := e.clock.Now()
	e.clock.Advance(time.Second)
	limits()
	// A cut before the checkpoint was made finds none.
	if n, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: cut}); err != nil || n != 0 {
		t.Fatalf("Prune before the checkpoint = %d, %v", n, err)
	}
	if n, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now()}); err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want the 3 events before the checkpoint", n, err)
	}
	events := e.ownChain(s.AgentID)
	if len(events) != 2 || events[0].Kind != store.AuditCheckpoint || events[0].Seq != 4 || events[1].Seq != 5 {
		t.Fatalf("chain after the cut: %v", stepsOf(events))
	}
	if got := len(e.auditAll(s.AgentID)) - len(events); got != 4 {
		t.Fatalf("the session's chain has %d events after the agent's was cut, want 4", got)
	}
	if got := e.auditAll(keep.AgentID); len(got) != 2 {
		t.Fatalf("a chain without a checkpoint was cut: %d events", len(got))
	}
	e.verifyAudit()
	if n, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now()}); err != nil || n != 0 {
		t.Fatalf("second Prune = %d, %v", n, err)
	}
	// Every agent's chain at once.
	e.clock.Advance(time.Second)
	if n, err := e.st.Audit().Checkpoint(e.ctx, ""); err != nil || n != 2 {
		t.Fatalf("Checkpoint of all = %d, %v", n, err)
	}
	e.clock.Advance(time.Second)
	if n, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now()}); err != nil || n != 3 {
		t.Fatalf("Prune of all = %d, %v; want 3", n, err)
	}
	e.verifyAudit()
	if n, err := e.st.Audit().Checkpoint(e.ctx, "no-such-agent"); err != nil || n != 0 {
		t.Fatalf("Checkpoint of an agent without a chain = %d, %v", n, err)
	}
}

func testAuditPruneTampered(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if err := e.st.Spend().SetAgentLimits(e.ctx, s.AgentID, []store.SpendLimit{costLimit(1000, store.WindowDay)}); err != nil {
		t.Fatal(err)
	}
	e.tamper(`UPDATE audit_events SET detail = '{}' WHERE agent_id = '` + s.AgentID + `' AND chain = '' AND seq = 2`)
	if _, err := e.st.Audit().Checkpoint(e.ctx, s.AgentID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	_, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now()})
	wantErr(t, err, store.ErrCorrupt)
	if n := len(e.ownChain(s.AgentID)); n != 3 {
		t.Fatalf("a refused prune left %d events, want 3", n)
	}
}

func testAuditRestore(t *testing.T, e *env) {
	a := e.spendSession(costLimit(100, store.WindowLifetime))
	b := e.create(baseRequest())
	gone := e.create(baseRequest())
	e.mustReserve(a.ID, usd(10), "r")
	e.mustUse(b.ID, "read_file")
	e.mustUse(gone.ID, "read_file")
	if _, err := e.gov().Close(e.ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.gov().Cleanup(e.ctx); err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v", n, err)
	}
	if _, err := e.st.Audit().Checkpoint(e.ctx, ""); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{Before: e.clock.Now(), AgentID: a.AgentID}); err != nil {
		t.Fatal(err)
	}
	e.mustUse(a.ID, "list_dir")
	rep := e.verifyAudit()
	events := e.auditAll("")
	heads, err := e.st.Audit().Heads(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The sessions' chains keep their heads in the sessions' rows: the
	// governed sessions are restored first (as the archive does).
	var sessions []store.Session
	for _, id := range []string{a.ID, b.ID} {
		s, err := e.gov().Get(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	fresh := newEnv(t, e.h)
	if _, err := fresh.st.Audit().Restore(fresh.ctx, store.AuditRestoreRequest{Events: events, Heads: heads}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Restore of session chains without their sessions: %v", err)
	}
	if n := fresh.auditCount(); n != 0 {
		t.Fatalf("a refused restore wrote %d events", n)
	}
	if _, err := fresh.gov().Restore(fresh.ctx, store.RestoreRequest{Sessions: sessions}); err != nil {
		t.Fatal(err)
	}
	n, err := fresh.st.Audit().Restore(fresh.ctx, store.AuditRestoreRequest{Events: events, Heads: heads})
	if err != nil || n != int64(len(events)) {
		t.Fatalf("Restore = %d, %v; want %d", n, err, len(events))
	}
	if got := fresh.verifyAudit(); got.Digest != rep.Digest || got.Events != rep.Events || got.Chains != rep.Chains {
		t.Fatalf("restored trail: %+v, original %+v", got, rep)
	}
	if got := fresh.auditAll(""); fmt.Sprint(got) != fmt.Sprint(events) {
		t.Fatalf("restored events differ:\n%v\n%v", got, events)
	}
	_, err = fresh.st.Audit().Restore(fresh.ctx, store.AuditRestoreRequest{Events: events, Heads: heads})
	wantErr(t, err, store.ErrConflict)
	if n, err := fresh.st.Audit().Restore(fresh.ctx, store.AuditRestoreRequest{Events: events, Heads: heads, SkipExisting: true}); err != nil || n != 0 {
		t.Fatalf("Restore with SkipExisting = %d, %v", n, err)
	}
	// The restored chains go on.
	s := fresh.create(func() store.CreateRequest { r := baseRequest(); r.AgentID = b.AgentID; return r }())
	fresh.mustUse(s.ID, "read_file")
	fresh.mustUse(b.ID, "read_file")
	fresh.verifyAudit()
}

func testAuditRestoreBroken(t *testing.T, e *env) {
	s := e.create(baseRequest())
	e.mustUse(s.ID, "read_file")
	e.mustUse(s.ID, "read_file")
	events := e.auditAll("")
	heads, _ := e.st.Audit().Heads(e.ctx)
	fresh := newEnv(t, e.h)
	broken := slices.Clone(events)
	broken[1].Outcome = store.OutcomeRateLimited
	for _, req := range []store.AuditRestoreRequest{
		{Events: broken, Heads: heads},
		{Events: events[1:], Heads: heads},
		{Events: events[:2], Heads: heads},
		{Events: events},
		{Events: events, Heads: append(slices.Clone(heads), heads[0])},
	} {
		if _, err := fresh.st.Audit().Restore(fresh.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Restore of a broken chain: %v", err)
		}
	}
	if n := fresh.auditCount(); n != 0 {
		t.Fatalf("refused restores wrote %d events", n)
	}
}

func testAuditInvalid(t *testing.T, e *env) {
	for _, f := range []store.AuditFilter{
		{AgentID: "\x00"}, {Kind: "nope"}, {Limit: -1}, {After: "x"}, {After: "-1:a"},
	} {
		if _, err := e.st.Audit().List(e.ctx, f); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("List(%+v) = %v", f, err)
		}
	}
	if _, err := e.st.Audit().Prune(e.ctx, store.AuditPruneRequest{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Prune without a time: %v", err)
	}
	if _, err := e.st.Audit().Checkpoint(e.ctx, "\x01"); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Checkpoint of a bad agent id: %v", err)
	}
}

// snakeKey is the form of every key of an audit detail.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// nonSnakeKeys returns the keys of the JSON detail, at any depth, that
// are not snake_case.
func nonSnakeKeys(t *testing.T, detail []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(detail, &v); err != nil {
		t.Fatalf("detail %s: %v", detail, err)
	}
	var bad []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if !snakeKey.MatchString(k) {
					bad = append(bad, k)
				}
				walk(sub)
			}
		case []any:
			for _, sub := range x {
				walk(sub)
			}
		}
	}
	walk(v)
	slices.Sort(bad)
	return bad
}
