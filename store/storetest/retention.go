package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunRetention checks the lifecycle: retention policies stored in the
// database, sweeps driven by the clock (nothing swept a moment early,
// everything swept once due), holds, dry runs that change nothing, the
// sweep log, the sweep lease, concurrent sweepers and the size budget.
func RunRetention(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"Policies", testRetentionPolicies},
		{"GovernedEnded", testSweepGovernedEnded},
		{"RuntimeIdle", testSweepRuntimeIdle},
		{"ConversationsIdle", testSweepConversationsIdle},
		{"LargeConversationInRowBoundedBatches", testSweepLargeConversation},
		{"HalfSweptIsInvisibleAndFinishedNext", testSweepHalfSwept},
		{"LargeAgentSessionInRowBoundedBatches", testSweepLargeAgentSession},
		{"ReadsCount", testSweepReadsCount},
		{"ReadsCountOnLoad", testReadsCountOnLoad},
		{"MessagesKeepLast", testSweepKeepLast},
		{"AgentSessionsIdle", testSweepAgentSessions},
		{"AgentSessionsIdleKeepsForks", testSweepAgentSessionsKeepsForks},
		{"AgentSessionsIdleWithinAMinute", testSweepAgentSessionsWithinMinute},
		{"ReservationsClosed", testSweepReservations},
		{"AuditCheckpointed", testSweepAuditCheckpointed},
		{"DryRunChangesNothing", testSweepDryRun},
		{"Log", testSweepLog},
		{"Lease", testSweepLease},
		{"ConcurrentSweepers", testConcurrentSweepers},
		{"SizeBudget", testSizeBudget},
		{"SizeBudgetStopsUnderBudget", testSizeBudgetStops},
		{"BackgroundSweeper", testBackgroundSweeper},
		{"SweeperRenewsLease", testSweeperRenewsLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func (e *env) ret() store.Retention { return e.st.Retention() }

// saveNow saves a conversation updated now (fullSession's times are the
// seed's, years ago).
func (e *env) saveNow(id string) {
	e.t.Helper()
	c := fullSession(id)
	c.CreatedAt, c.UpdatedAt = time.Time{}, time.Time{}
	e.save(c)
}

func (e *env) setPolicy(p store.Policy) {
	e.t.Helper()
	if err := e.ret().SetPolicy(e.ctx, p); err != nil {
		e.t.Fatalf("SetPolicy(%+v): %v", p, err)
	}
}

func (e *env) sweep(opts store.SweepOptions) store.SweepReport {
	e.t.Helper()
	rep, err := e.ret().Sweep(e.ctx, opts)
	if err != nil {
		e.t.Fatalf("Sweep(%+v): %v", opts, err)
	}
	return rep
}

func (e *env) hold(ref store.SessionRef) {
	e.t.Helper()
	if err := e.ret().Hold(e.ctx, ref, "legal"); err != nil {
		e.t.Fatalf("Hold(%v): %v", ref, err)
	}
}

// wantKind checks what a sweep reports for one policy.
func wantKind(t *testing.T, rep store.SweepReport, kind store.PolicyKind, sessions, held int64) store.KindSweep {
	t.Helper()
	k, ok := rep.Kind(kind)
	if !ok {
		t.Fatalf("the sweep did not apply %s: %+v", kind, rep)
	}
	if k.Sessions != sessions || k.Held != held {
		t.Fatalf("%s: removed %d (held %d), want %d (held %d)", kind, k.Sessions, k.Held, sessions, held)
	}
	return k
}

func testRetentionPolicies(t *testing.T, e *env) {
	for _, bad := range []store.Policy{
		{Kind: "nope", MaxAge: time.Hour},
		{Kind: store.PolicyConversationsIdle},
		{Kind: store.PolicyConversationsIdle, MaxAge: time.Microsecond},
		{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour, KeepLast: 3},
		{Kind: store.PolicyMessagesKeepLast, KeepLast: -1},
		{Kind: store.PolicySizeBudget},
		{Kind: store.PolicyRuntimeIdle, MaxAge: time.Hour, ReadsCount: true},
		{Kind: store.PolicyGovernedEnded, MaxAge: time.Hour + time.Microsecond},
	} {
		if err := e.ret().SetPolicy(e.ctx, bad); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("SetPolicy(%+v) = %v, want ErrInvalidInput", bad, err)
		}
	}
	if got, err := e.ret().Policies(e.ctx); err != nil || len(got) != 0 {
		t.Fatalf("policies after refusals = %v, %v", got, err)
	}
	e.setPolicy(store.Policy{Kind: store.PolicyMessagesKeepLast, KeepLast: 100})
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: 30 * 24 * time.Hour, ReadsCount: true})
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: 7 * 24 * time.Hour})
	// Another process (another store on the database) sees them, in
	// PolicyKinds order.
	got, err := e.open().Retention().Policies(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != store.PolicyConversationsIdle || got[0].MaxAge != 7*24*time.Hour ||
		got[0].ReadsCount || got[1].KeepLast != 100 || !got[0].UpdatedAt.Equal(e.storedNow()) {
		t.Fatalf("policies = %+v", got)
	}
	if ok, err := e.ret().RemovePolicy(e.ctx, store.PolicyMessagesKeepLast); err != nil || !ok {
		t.Fatalf("RemovePolicy = %v, %v", ok, err)
	}
	if ok, err := e.ret().RemovePolicy(e.ctx, store.PolicyMessagesKeepLast); err != nil || ok {
		t.Fatalf("second RemovePolicy = %v, %v", ok, err)
	}
	// Holds: validated, listed, released once.
	for _, bad := range []store.SessionRef{{Facet: "audit", ID: "x"}, {Facet: store.HoldConversations},
		{Facet: store.HoldConversations, ID: "x", App: "a"}, {Facet: store.HoldAgentSessions, ID: "x"}} {
		if err := e.ret().Hold(e.ctx, bad, ""); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Hold(%+v) = %v", bad, err)
		}
	}
	ref := store.SessionRef{Facet: store.HoldAgentSessions, App: "app", UserID: "u", ID: "s/1"}
	e.hold(ref)
	e.hold(ref)
	holds, err := e.ret().Holds(e.ctx)
	if err != nil || len(holds) != 1 || holds[0].SessionRef != ref || holds[0].Reason != "legal" {
		t.Fatalf("holds = %+v, %v", holds, err)
	}
	for i, want := range []bool{true, false} {
		if ok, err := e.ret().Release(e.ctx, ref); err != nil || ok != want {
			t.Fatalf("Release #%d = %v, %v", i, ok, err)
		}
	}
	// Every facet of the report is there, each with a policy or a note.
	rep := e.sweep(store.SweepOptions{DryRun: true})
	if len(rep.Facets) == 0 {
		t.Fatal("the report has no facets")
	}
	for _, f := range rep.Facets {
		if f.Note == "" && f.Kinds == nil {
			t.Errorf("facet %s: no kinds and no note", f.Facet)
		}
	}
}

func testSweepGovernedEnded(t *testing.T, e *env) {
	req := baseRequest()
	expiring := e.create(req)            // expires at T0+1h
	closed := e.create(baseRequest())    // closed at T0
	held := e.create(baseRequest())      // closed at T0, held
	lingering := e.create(baseRequest()) // active until T0+1h, never closed
	for _, id := range []string{closed.ID, held.ID} {
		if _, err := e.gov().Close(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	e.hold(store.SessionRef{Facet: store.HoldGovernance, ID: held.ID})
	e.setPolicy(store.Policy{Kind: store.PolicyGovernedEnded, MaxAge: time.Hour})
	gone := func(id string) bool {
		_, err := e.gov().Get(e.ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err != nil
	}
	e.clock.Advance(time.Hour - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyGovernedEnded, 0, 0)
	e.clock.Advance(time.Millisecond)
	rep := e.sweep(store.SweepOptions{})
	if k := wantKind(t, rep, store.PolicyGovernedEnded, 1, 1); k.Rows != 1 {
		t.Fatalf("rows = %d, want 1", k.Rows)
	}
	if !gone(closed.ID) || gone(held.ID) || gone(expiring.ID) || gone(lingering.ID) {
		t.Fatal("the closed session should be the only one gone")
	}
	// The expired ones are due an hour after their expiry.
	e.clock.Advance(time.Hour - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyGovernedEnded, 0, 1)
	e.clock.Advance(time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyGovernedEnded, 2, 1)
	if !gone(expiring.ID) || !gone(lingering.ID) || gone(held.ID) {
		t.Fatal("the expired sessions should be gone, the held one kept")
	}
	// Each removal is on the agent's audit chain, as Cleanup's are.
	var found bool
	for _, ev := range e.auditAll(expiring.AgentID) {
		found = found || (ev.Kind == store.AuditCleanup && ev.SessionID == expiring.ID)
	}
	if !found {
		t.Error("the swept session's removal is not in the audit trail")
	}
	if ok, err := e.ret().Release(e.ctx, store.SessionRef{Facet: store.HoldGovernance, ID: held.ID}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyGovernedEnded, 1, 0)
}

func testSweepRuntimeIdle(t *testing.T, e *env) {
	e.rtInsert(rtNew("idle"))
	e.rtInsert(rtNew("held"))
	e.rtInsert(rtNew("busy"))
	e.putUpload("idle", "r1", []byte("bytes of idle"))
	e.hold(store.SessionRef{Facet: store.HoldRuntime, ID: "held"})
	if _, _, err := e.rt().BeginTurn(e.ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	e.setPolicy(store.Policy{Kind: store.PolicyRuntimeIdle, MaxAge: time.Hour})
	e.clock.Advance(time.Hour - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyRuntimeIdle, 0, 0)
	e.clock.Advance(time.Millisecond)
	k := wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyRuntimeIdle, 1, 1)
	if k.Rows != 3 { // the session, its upload and the upload's bytes
		t.Errorf("rows = %d, want 3", k.Rows)
	}
	if e.rtExists("idle") || !e.rtExists("held") || !e.rtExists("busy") {
		t.Fatal("only the idle session should be gone (a held one and one with a turn running stay)")
	}
	if n := e.rtCount(); n != 2 {
		t.Fatalf("runtime count = %d", n)
	}
}

func testSweepConversationsIdle(t *testing.T, e *env) {
	e.populate("old/1")
	e.appendMsgs("old/1", store.UserMessage("a"), store.UserMessage("b")) // updated now
	e.saveNow("held")
	e.hold(store.SessionRef{Facet: store.HoldConversations, ID: "held"})
	e.clock.Advance(30 * time.Minute)
	e.saveNow("newer")
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour})
	e.clock.Advance(30*time.Minute - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyConversationsIdle, 0, 0)
	e.clock.Advance(time.Millisecond)
	k := wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyConversationsIdle, 1, 1)
	if k.Rows < 7 { // the conversation, messages, artifact, trace, run, report
		t.Errorf("rows = %d, want the conversation and all it owns", k.Rows)
	}
	if e.exists("old/1") || !e.exists("held") || !e.exists("newer") {
		t.Fatal("only old/1 should be gone")
	}
	e.clock.Advance(30 * time.Minute)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyConversationsIdle, 1, 1)
	if e.exists("newer") || !e.exists("held") {
		t.Fatal("newer should be gone once due, held kept")
	}
}

// bigConversation saves conversation id with n messages, a trace event
// and an artifact, updated now.
func (e *env) bigConversation(id string, n int) {
	e.t.Helper()
	e.saveNow(id)
	msgs := make([]store.Message, n)
	for i := range msgs {
		msgs[i] = store.UserMessage(fmt.Sprintf("message %d of %s", i, id))
	}
	e.appendMsgs(id, msgs...)
	if _, err := e.conv().AppendTraces(e.ctx, id, store.TraceEvent{Schema: "trace.v1", Kind: store.TraceToolExecution, Name: "read"}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.conv().PutArtifacts(e.ctx, id, store.Artifact{URI: "a3s://x/" + id, ID: "1", ToolName: "read", Content: "x"}); err != nil {
		e.t.Fatal(err)
	}
}

// A sweep's batch is bounded in rows, not in sessions: a conversation
// with more rows than a batch is removed over several transactions, each
// within the batch size, and whole in the end; its fork keeps what it
// reads.
func testSweepLargeConversation(t *testing.T, e *env) {
	e.bigConversation("big", 60)
	e.saveNow("small")
	if _, err := e.conv().Fork(e.ctx, store.ConversationForkRequest{ID: "big", At: 9, NewID: "fork"}); err != nil {
		t.Fatal(err)
	}
	e.hold(store.SessionRef{Facet: store.HoldConversations, ID: "fork"})
	before := msgTexts(e.load("fork").Messages)
	e.clock.Advance(2 * time.Hour)
	policy := []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour}}
	dry := e.sweep(store.SweepOptions{DryRun: true, Policies: policy})
	dk, _ := dry.Kind(store.PolicyConversationsIdle)
	rep := e.sweep(store.SweepOptions{BatchRows: 10, Policies: policy})
	k := wantKind(t, rep, store.PolicyConversationsIdle, 2, 1)
	if k.Rows != dk.Rows || k.Rows < 63 {
		t.Fatalf("removed %d rows, the dry run counted %d", k.Rows, dk.Rows)
	}
	// 63 rows of big in batches of 10 at most (those the fork reads stay
	// for it), its hiding and its end: at least 7 transactions.
	if rep.Batches < 7 {
		t.Fatalf("%d batches for a conversation of 63 rows in batches of 10", rep.Batches)
	}
	if e.exists("big") || e.exists("small") || !e.exists("fork") {
		t.Fatal("big and small should be gone, the held fork kept")
	}
	if got := msgTexts(e.load("fork").Messages); got != before {
		t.Fatalf("the fork reads %s after its parent's removal, %s before", got, before)
	}
	// The id is free again, for a new conversation.
	e.saveNow("big")
	if got, want := len(e.load("big").Messages), len(fullSession("big").Messages); got != want {
		t.Fatalf("a new big holds %d messages, want %d", got, want)
	}
}

// A conversation half removed (the sweep stopped between its batches, as
// a killed process would) is invisible: not loaded, listed, found by
// Exists or by its messages, its id not free; the next sweep, whatever
// its policies, finishes it.
func testSweepHalfSwept(t *testing.T, e *env) {
	e.bigConversation("big", 40)
	e.saveNow("other")
	e.clock.Advance(2 * time.Hour)
	e.saveNow("recent")
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	_, err := e.ret().Sweep(ctx, store.SweepOptions{BatchRows: 10,
		Policies: []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour}},
		Progress: func(k store.KindSweep) {
			if k.Kind == store.PolicyConversationsIdle && k.Rows > 0 && k.Sessions == 0 {
				cancel() // mid-way through big: some of its rows are gone
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted sweep returned %v", err)
	}
	if e.exists("big") {
		t.Fatal("the half-removed conversation exists")
	}
	if _, err := e.conv().Load(e.ctx, "big"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load of the half-removed conversation: %v", err)
	}
	if _, err := e.conv().Messages(e.ctx, "big", 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Messages of the half-removed conversation: %v", err)
	}
	if ids := e.listIDs(store.ConversationFilter{}); fmt.Sprint(ids) != "[other recent]" {
		t.Fatalf("listed %v", ids)
	}
	if _, err := e.conv().AppendMessages(e.ctx, "big", store.UserMessage("late")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to the half-removed conversation: %v", err)
	}
	if _, err := e.conv().Save(e.ctx, store.NewConversation("big")); err == nil {
		t.Fatal("a new conversation took the id of one being removed")
	}
	// The next sweep, with no policy at all, finishes it.
	e.sweep(store.SweepOptions{Policies: []store.Policy{}})
	e.saveNow("big")
	if got, want := len(e.load("big").Messages), len(fullSession("big").Messages); got != want {
		t.Fatalf("a new big holds %d messages, want %d", got, want)
	}
	if !e.exists("other") || !e.exists("recent") {
		t.Fatal("the finishing sweep removed other conversations")
	}
}

// An agent session with more events than a batch goes over several
// transactions too: retired (invisible, its key free) in the first, its
// events a batch at a time, dropped in the last; its fork keeps what it
// reads. Interrupted mid-way, the next sweep finishes it.
func testSweepLargeAgentSession(t *testing.T, e *env) {
	key := store.SessionKey{App: "big", User: "u", Session: "s"}
	e.asCreate(key, store.ScopedState{})
	for i := range 40 {
		e.asAppend(key, store.AgentEvent{ID: fmt.Sprintf("e%d", i+1), Data: json.RawMessage(`{"n":1}`)}, store.ScopedState{}, 0)
	}
	fk := store.SessionKey{App: "big", User: "u", Session: "fork"}
	if _, err := e.as().Fork(e.ctx, store.ForkRequest{Key: key, At: 5, Session: fk.Session}); err != nil {
		t.Fatal(err)
	}
	e.hold(store.SessionRef{Facet: store.HoldAgentSessions, App: fk.App, UserID: fk.User, ID: fk.Session})
	e.clock.Advance(2 * time.Hour)
	policy := []store.Policy{{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour}}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	_, err := e.ret().Sweep(ctx, store.SweepOptions{BatchRows: 10, Policies: policy,
		Progress: func(k store.KindSweep) {
			if k.Kind == store.PolicyAgentSessionsIdle && k.Rows > 0 && k.Sessions == 0 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted sweep returned %v", err)
	}
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the half-removed session: %v", err)
	}
	got, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: fk, IncludeEvents: true})
	if err != nil || len(got.Events) != 5 {
		t.Fatalf("the fork of the half-removed session: %d events, %v", len(got.Events), err)
	}
	// The next sweep finishes it in several transactions; the one after
	// has nothing left to do.
	rep := e.sweep(store.SweepOptions{BatchRows: 10, Policies: []store.Policy{}})
	if rep.Batches < 2 {
		t.Fatalf("the finishing sweep ran %d batches", rep.Batches)
	}
	if rep := e.sweep(store.SweepOptions{Policies: []store.Policy{}}); rep.Batches != 0 {
		t.Fatalf("a sweep after the finished removal ran %d batches", rep.Batches)
	}
	got, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: fk, IncludeEvents: true})
	if err != nil || len(got.Events) != 5 || got.Events[4].ID != "e5" {
		t.Fatalf("the fork after its parent's removal: %+v, %v", got.Events, err)
	}
	e.asCreate(key, store.ScopedState{})
	if got, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true}); err != nil || len(got.Events) != 0 {
		t.Fatalf("a new session under the key: %d events, %v", len(got.Events), err)
	}
}

func testSweepReadsCount(t *testing.T, e *env) {
	e.saveNow("read")
	e.saveNow("unread")
	key := store.SessionKey{App: "rc", User: "u", Session: "s"}
	e.asCreate(key, store.ScopedState{})
	before := e.load("read")
	e.clock.Advance(40 * time.Minute)
	for _, ref := range []store.SessionRef{{Facet: store.HoldConversations, ID: "read"},
		{Facet: store.HoldAgentSessions, App: key.App, UserID: key.User, ID: key.Session}} {
		if err := e.ret().Accessed(e.ctx, ref); err != nil {
			t.Fatalf("Accessed(%v): %v", ref, err)
		}
	}
	if err := e.ret().Accessed(e.ctx, store.SessionRef{Facet: store.HoldConversations, ID: "missing"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Accessed(missing) = %v", err)
	}
	// A read never moves the update time.
	if after := e.load("read"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("updated at moved from %v to %v", before.UpdatedAt, after.UpdatedAt)
	}
	if got := e.asGet(key); !got.UpdatedAt.Equal(e.storedNow().Add(-40 * time.Minute)) {
		t.Fatalf("agent session updated at %v", got.UpdatedAt)
	}
	e.clock.Advance(20 * time.Minute)
	// Without ReadsCount the read is ignored: both are due.
	rep := e.sweep(store.SweepOptions{DryRun: true, Policies: []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour}}})
	wantKind(t, rep, store.PolicyConversationsIdle, 2, 0)
	// With it, the read session lives an hour from its read.
	counting := []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour, ReadsCount: true},
		{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour, ReadsCount: true}}
	rep = e.sweep(store.SweepOptions{Policies: counting})
	wantKind(t, rep, store.PolicyConversationsIdle, 1, 0)
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 0, 0)
	if !e.exists("read") || e.exists("unread") {
		t.Fatal("the read conversation should be kept, the other gone")
	}
	e.clock.Advance(40*time.Minute - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{Policies: counting}), store.PolicyConversationsIdle, 0, 0)
	e.clock.Advance(time.Millisecond)
	rep = e.sweep(store.SweepOptions{Policies: counting})
	wantKind(t, rep, store.PolicyConversationsIdle, 1, 0)
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 0)
}

func testSweepKeepLast(t *testing.T, e *env) {
	e.saveNow("long")
	e.saveNow("short")
	e.saveNow("held")
	for i := range 5 {
		e.appendMsgs("long", store.UserMessage(fmt.Sprint("m", i)))
		e.appendMsgs("held", store.UserMessage(fmt.Sprint("m", i)))
	}
	base := int64(len(fullSession("x").Messages))
	e.hold(store.SessionRef{Facet: store.HoldConversations, ID: "held"})
	before := e.load("long")
	// short has exactly the messages kept; long has 5 more.
	e.setPolicy(store.Policy{Kind: store.PolicyMessagesKeepLast, KeepLast: base})
	dry := e.sweep(store.SweepOptions{DryRun: true})
	k := wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyMessagesKeepLast, 1, 1)
	if k.Rows != 5 {
		t.Fatalf("removed %d messages, want 5", k.Rows)
	}
	if d, _ := dry.Kind(store.PolicyMessagesKeepLast); d != k {
		t.Fatalf("dry run said %+v, the sweep did %+v", d, k)
	}
	msgs, err := e.conv().Messages(e.ctx, "long", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(msgs)) != base || msgs[0].Seq != 5 || msgs[len(msgs)-1].Seq != base+4 {
		t.Fatalf("kept %+v, want the last %d at their positions", msgs, base)
	}
	if after := e.load("long"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatal("trimming moved the update time")
	}
	if n, err := e.conv().Messages(e.ctx, "held", 0, 0); err != nil || int64(len(n)) != base+5 {
		t.Fatalf("held conversation has %d messages, %v", len(n), err)
	}
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyMessagesKeepLast, 0, 1)
}

func testSweepAgentSessions(t *testing.T, e *env) {
	old := store.SessionKey{App: "sweep-app", User: "gone", Session: "s1"}
	held := store.SessionKey{App: "sweep-app", User: "kept", Session: "s2"}
	e.asCreate(old, store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"u": raw(2)},
		Session: map[string]json.RawMessage{"s": raw(3)}})
	e.asAppend(old, asEvent("e1", "w", 1), store.ScopedState{}, 0)
	e.asAppend(old, asEvent("e2", "w", 2), store.ScopedState{}, 0)
	e.asCreate(held, store.ScopedState{User: map[string]json.RawMessage{"u": raw(4)}})
	e.hold(store.SessionRef{Facet: store.HoldAgentSessions, App: held.App, UserID: held.User, ID: held.Session})
	e.setPolicy(store.Policy{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour})
	e.setPolicy(store.Policy{Kind: store.PolicyOrphanState})
	e.clock.Advance(time.Hour - time.Millisecond)
	rep := e.sweep(store.SweepOptions{})
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 0, 0)
	wantKind(t, rep, store.PolicyOrphanState, 0, 0)
	e.clock.Advance(time.Millisecond)
	rep = e.sweep(store.SweepOptions{})
	if k := wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 1); k.Rows != 4 { // session, 2 events, session state
		t.Errorf("rows = %d, want 4", k.Rows)
	}
	// The user state of "gone" has no session left; the app state is
	// still the app of the held session.
	if k := wantKind(t, rep, store.PolicyOrphanState, 1, 0); k.Rows != 1 {
		t.Errorf("orphan rows = %d, want 1", k.Rows)
	}
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: old}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("old session: %v", err)
	}
	got := e.asGet(held)
	if string(got.State.App["a"]) != "1" || string(got.State.User["u"]) != "4" {
		t.Fatalf("held session's state = %+v", got.State)
	}
}

// testSweepAgentSessionsWithinMinute: sessions written within one minute
// of each other are due to the millisecond of their last write, whatever
// the order of their creation (the walk's index holds the minute of the
// last write, migration 30; what is due is decided on the time itself).
func testSweepAgentSessionsWithinMinute(t *testing.T, e *env) {
	// To second 5 of a minute: the writes below all fall in that minute.
	e.clock.Advance(time.Minute - time.Duration(e.clock.Now().UnixNano())%time.Minute + 5*time.Second)
	keys := map[string]store.SessionKey{}
	for _, s := range []string{"a", "b", "c"} {
		keys[s] = store.SessionKey{App: "minute-app", User: "u", Session: s}
		e.asCreate(keys[s], store.ScopedState{})
		e.clock.Advance(10 * time.Second) // a at :05, b at :15, c at :25
	}
	e.asAppend(keys["a"], asEvent("e1", "w", 1), store.ScopedState{}, 0) // a at :35
	e.setPolicy(store.Policy{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour})
	e.clock.Advance(time.Hour - 5*time.Second) // the cutoff is :30
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyAgentSessionsIdle, 2, 0)
	for s, kept := range map[string]bool{"a": true, "b": false, "c": false} {
		_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: keys[s]})
		if kept && err != nil {
			t.Errorf("session %s, written after the cutoff: %v", s, err)
		}
		if !kept && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("session %s, written before the cutoff, was kept: %v", s, err)
		}
	}
	e.clock.Advance(10 * time.Second) // the cutoff is :40
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyAgentSessionsIdle, 1, 0)
}

// testSweepAgentSessionsKeepsForks: a swept parent leaves its fork
// readable (what the fork shares with it stays until the fork goes), and
// sweeping the fork then removes what they shared.
func testSweepAgentSessionsKeepsForks(t *testing.T, e *env) {
	parent := store.SessionKey{App: "sweep-app", User: "u", Session: "parent"}
	e.asCreate(parent, store.ScopedState{})
	for i := 1; i <= 3; i++ {
		e.asAppend(parent, asEvent("e"+strconv.Itoa(i), "w", i), store.ScopedState{}, 0)
	}
	e.setPolicy(store.Policy{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour})
	e.clock.Advance(30 * time.Minute)
	fork := e.fork(parent, 2, "fork")
	forkKey := store.SessionKey{App: parent.App, User: parent.User, Session: fork.Key.Session}
	e.clock.Advance(30 * time.Minute) // the parent is due, the fork is not
	rep := e.sweep(store.SweepOptions{})
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 0)
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: parent}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept parent: %v", err)
	}
	if got := e.brIDs(forkKey); got != "e1,e2" {
		t.Fatalf("fork after its parent was swept reads %q, want e1,e2", got)
	}
	c0, err := e.st.(store.Counter).Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	rep = e.sweep(store.SweepOptions{})
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 0)
	c1, err := e.st.(store.Counter).Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: forkKey}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("swept fork: %v", err)
	}
	if c1.AgentSessions.Events != 0 || c1.AgentSessions.Total != 0 {
		t.Fatalf("after the fork was swept: %d sessions, %d events left (before: %+v)", c1.AgentSessions.Total, c1.AgentSessions.Events, c0.AgentSessions)
	}
}

// testSweepAuditCheckpointed: an agent's own chain is cut at its newest
// checkpoint once that checkpoint is older than the policy's age, not a
// moment before; session chains and chains without a due checkpoint stay
// whole, a dry run counts what a sweep removes, and every chain still
// verifies afterwards.
func testSweepAuditCheckpointed(t *testing.T, e *env) {
	s1 := e.create(baseRequest()) // its agent's chain: the create, then the checkpoint
	e.create(baseRequest())       // another agent's chain, without a checkpoint: stays whole
	if n, err := e.st.Audit().Checkpoint(e.ctx, s1.AgentID); err != nil || n != 1 {
		t.Fatalf("Checkpoint = %d, %v", n, err)
	}
	e.clock.Advance(time.Minute)
	e.create(baseRequest()) // a third agent, after the checkpoint: stays
	events := e.auditCount()
	e.setPolicy(store.Policy{Kind: store.PolicyAuditCheckpointed, MaxAge: time.Hour})
	e.clock.Advance(time.Hour - time.Minute) // the checkpoint is exactly an hour old: not yet due
	wantNoWrite(t, e.sweep(store.SweepOptions{}))
	e.clock.Advance(time.Millisecond)
	dry := wantKind(t, e.sweep(store.SweepOptions{DryRun: true}), store.PolicyAuditCheckpointed, 1, 0)
	if got := e.auditCount(); got != events {
		t.Fatalf("a dry run removed audit events: %d, want %d", got, events)
	}
	k := wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyAuditCheckpointed, 1, 0)
	if k.Rows != 1 || dry.Rows != k.Rows { // s1's create, before its agent's checkpoint
		t.Fatalf("removed %d events (dry run said %d), want 1", k.Rows, dry.Rows)
	}
	if got := e.auditCount(); got != events-1 {
		t.Fatalf("%d audit events left, want %d", got, events-1)
	}
	e.verifyAudit()
	wantNoWrite(t, e.sweep(store.SweepOptions{}))
}

// wantNoWrite: a sweep with nothing due for PolicyAuditCheckpointed (the
// only policy set) counts what is prunable in reads and opens no write
// transaction, not even one per agent.
func wantNoWrite(t *testing.T, rep store.SweepReport) {
	t.Helper()
	wantKind(t, rep, store.PolicyAuditCheckpointed, 0, 0)
	if rep.Batches != 0 {
		t.Fatalf("a sweep with nothing due ran %d write transactions, want none", rep.Batches)
	}
}

func testSweepReservations(t *testing.T, e *env) {
	s := e.create(baseRequest())
	sp := e.st.Spend()
	for _, id := range []string{"r1", "r2"} {
		if _, err := sp.Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, RequestID: id,
			Amount: store.SpendAmount{InputTokens: 10}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sp.Release(e.ctx, store.ReleaseRequest{SessionID: s.ID, RequestID: "r1"}); err != nil {
		t.Fatal(err)
	}
	e.setPolicy(store.Policy{Kind: store.PolicyReservationsClosed, MaxAge: time.Hour})
	e.clock.Advance(time.Hour - time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyReservationsClosed, 0, 0)
	e.clock.Advance(time.Millisecond)
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyReservationsClosed, 1, 0)
	// The one still reserved is never removed by this policy.
	e.clock.Advance(24 * time.Hour)
	if _, err := sp.Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r2"}); err != nil {
		t.Fatal(err)
	}
	wantKind(t, e.sweep(store.SweepOptions{}), store.PolicyReservationsClosed, 0, 0)
}

// dueFixture builds one due record for every age policy, as of an hour
// from now, and sets those policies.
func (e *env) dueFixture() {
	e.t.Helper()
	g := e.create(baseRequest())
	if _, err := e.gov().Close(e.ctx, g.ID); err != nil {
		e.t.Fatal(err)
	}
	e.rtInsert(rtNew("rt"))
	e.populate("conv")
	for i := range 4 {
		e.appendMsgs("conv", store.UserMessage(fmt.Sprint(i)))
	}
	e.asCreate(store.SessionKey{App: "fx", User: "u", Session: "s"}, store.ScopedState{User: map[string]json.RawMessage{"k": raw(1)}})
	for _, p := range []store.Policy{
		{Kind: store.PolicyGovernedEnded, MaxAge: time.Hour},
		{Kind: store.PolicyRuntimeIdle, MaxAge: time.Hour},
		{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour},
		{Kind: store.PolicyMessagesKeepLast, KeepLast: 1},
		{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour},
		{Kind: store.PolicyOrphanState},
	} {
		e.setPolicy(p)
	}
	e.clock.Advance(time.Hour)
}

func testSweepDryRun(t *testing.T, e *env) {
	e.dueFixture()
	counts := func() store.Counts {
		c, err := e.st.(store.Counter).Counts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	before := counts()
	dry := e.sweep(store.SweepOptions{DryRun: true})
	if after := counts(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a dry run changed the store:\n%+v\n%+v", before, after)
	}
	if logged, err := e.ret().Sweeps(e.ctx, 10); err != nil || len(logged) != 0 {
		t.Fatalf("a dry run was logged: %v %v", logged, err)
	}
	if s, _ := dry.Total(); s == 0 || !dry.DryRun {
		t.Fatalf("the dry run found nothing: %+v", dry)
	}
	real := e.sweep(store.SweepOptions{})
	for _, f := range dry.Facets {
		for _, k := range f.Kinds {
			got, _ := real.Kind(k.Kind)
			// State becomes an orphan when its agent session is
			// removed: a dry run does not foresee it.
			if k.Kind == store.PolicyOrphanState {
				continue
			}
			if got != k {
				t.Errorf("%s: dry run %+v, sweep %+v", k.Kind, k, got)
			}
		}
	}
}

func testSweepLog(t *testing.T, e *env) {
	e.dueFixture()
	rep := e.sweep(store.SweepOptions{Holder: "tester"})
	log, err := e.ret().Sweeps(e.ctx, 5)
	if err != nil || len(log) != 1 {
		t.Fatalf("log = %v, %v", log, err)
	}
	if log[0].Holder != "tester" || fmt.Sprint(log[0].Report.Facets) != fmt.Sprint(rep.Facets) || log[0].Error != "" {
		t.Fatalf("logged %+v\nreport %+v", log[0], rep)
	}
	e.sweep(store.SweepOptions{})
	if log, err := e.ret().Sweeps(e.ctx, 1); err != nil || len(log) != 1 || log[0].Holder != "sweep" {
		t.Fatalf("newest first: %+v, %v", log, err)
	}
}

func testSweepLease(t *testing.T, e *env) {
	other := e.open().Retention()
	if err := e.ret().TakeLease(e.ctx, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	var held *store.LeaseHeldError
	if err := other.TakeLease(e.ctx, "b", time.Minute); !errors.As(err, &held) || held.Holder != "a" ||
		!errors.Is(err, store.ErrLeaseHeld) || !held.Expires.Equal(e.storedNow().Add(time.Minute)) {
		t.Fatalf("b while a holds it: %v (%+v)", err, held)
	}
	e.clock.Advance(30 * time.Second)
	if err := e.ret().TakeLease(e.ctx, "a", time.Minute); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	e.clock.Advance(time.Minute - time.Millisecond)
	if err := other.TakeLease(e.ctx, "b", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("b a moment before the renewed lease ends: %v", err)
	}
	e.clock.Advance(time.Millisecond)
	if err := other.TakeLease(e.ctx, "b", time.Minute); err != nil {
		t.Fatalf("takeover of a lease run out: %v", err)
	}
	if err := e.ret().TakeLease(e.ctx, "a", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a after the takeover: %v", err)
	}
	if err := other.DropLease(e.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := e.ret().TakeLease(e.ctx, "a", time.Minute); err != nil {
		t.Fatalf("after a drop: %v", err)
	}
}

// Several stores sweep the same due sessions at once: each is removed
// by exactly one of them, and their counts add up.
func testConcurrentSweepers(t *testing.T, e *env) {
	const n = 30
	for i := range n {
		e.saveNow(fmt.Sprintf("c%03d", i))
		e.appendMsgs(fmt.Sprintf("c%03d", i), store.UserMessage("x"))
	}
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Minute})
	e.clock.Advance(time.Minute)
	dry, _ := e.sweep(store.SweepOptions{DryRun: true}).Kind(store.PolicyConversationsIdle)
	stores := []store.Store{e.st, e.open(), e.open()}
	var mu sync.Mutex
	var total, rows int64
	var wg sync.WaitGroup
	for _, st := range stores {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rep, err := st.Retention().Sweep(e.ctx, store.SweepOptions{BatchRows: 5})
				if err != nil {
					t.Error(err)
					return
				}
				k, _ := rep.Kind(store.PolicyConversationsIdle)
				mu.Lock()
				total += k.Sessions
				rows += k.Rows
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if total != n || rows != dry.Rows || dry.Sessions != n {
		t.Fatalf("sweepers removed %d sessions, %d rows; want %d, %d", total, rows, n, dry.Rows)
	}
	if ids := e.listIDs(store.ConversationFilter{}); len(ids) != 0 {
		t.Fatalf("left %v", ids)
	}
}

func testSizeBudget(t *testing.T, e *env) {
	big := make([]byte, 16<<10)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	g := e.create(baseRequest())
	if _, err := e.gov().Close(e.ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for i := range 12 {
		id := fmt.Sprintf("b%02d", i)
		e.saveNow(id)
		e.appendMsgs(id, store.UserMessage(string(big)))
		ids = append(ids, id)
		e.clock.Advance(time.Second)
	}
	e.hold(store.SessionRef{Facet: store.HoldConversations, ID: "b00"})
	dry := e.sweep(store.SweepOptions{DryRun: true, Policies: []store.Policy{{Kind: store.PolicySizeBudget, MaxBytes: 1}}})
	if dry.SizeBefore <= 0 {
		t.Fatalf("size before = %d", dry.SizeBefore)
	}
	budget := dry.SizeBefore - 4*int64(len(big))
	rep := e.sweep(store.SweepOptions{Policies: []store.Policy{{Kind: store.PolicySizeBudget, MaxBytes: budget}}})
	// SQLite measures the pages in use after each batch. PostgreSQL's
	// tables do not shrink before a VACUUM, so the store estimates the
	// bytes a row frees from statistics that lag behind: it may stop
	// early, never late.
	least := int64(2)
	if e.st.Backend() != "sqlite" {
		least = 1
	}
	if rep.Budget == nil || rep.Budget.Sessions < least {
		t.Fatalf("budget removed %+v", rep.Budget)
	}
	// The ended governed session went first, then the oldest
	// conversations in order, never the held one.
	if _, err := e.gov().Get(e.ctx, g.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the closed governed session was kept: %v", err)
	}
	if !e.exists("b00") {
		t.Fatal("the held conversation was removed")
	}
	removed := int(rep.Budget.Sessions) - 1
	for i, id := range ids[1:] {
		if e.exists(id) != (i >= removed) {
			t.Fatalf("conversation %s: exists %v, but %d were removed oldest first", id, e.exists(id), removed)
		}
	}
	if e.st.Backend() == "sqlite" && rep.SizeAfter > budget {
		t.Fatalf("size after %d, budget %d", rep.SizeAfter, budget)
	}
}

// testSizeBudgetStops: conversations of text with many distinct trigrams
// (so that the search index is a large part of the store), a budget
// about half the store's size: the sweep removes the oldest until the
// store is under the budget, and no more. The space a removal frees
// includes the search index's (on SQLite, whose pages are measured).
func testSizeBudgetStops(t *testing.T, e *env) {
	rng := rand.New(rand.NewPCG(37, 11))
	text := func() string {
		b := make([]byte, 1<<10)
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
			if i%7 == 6 {
				b[i] = ' '
			}
		}
		return string(b)
	}
	const n, per = 40, 10
	for i := range n {
		id := fmt.Sprintf("s%03d", i)
		e.saveNow(id)
		msgs := make([]store.Message, per)
		for j := range msgs {
			msgs[j] = store.UserMessage(text())
		}
		e.appendMsgs(id, msgs...)
		e.clock.Advance(time.Second)
	}
	// The search index takes the text in after the commits (DESIGN.md): a
	// search folds what is still queued, so the size measured next holds
	// the whole index.
	if sr, ok := e.st.(store.Searcher); ok {
		if _, err := sr.Search(e.ctx, store.SearchQuery{Query: "abc"}); err != nil {
			t.Fatal(err)
		}
	}
	dry := e.sweep(store.SweepOptions{DryRun: true, Policies: []store.Policy{{Kind: store.PolicySizeBudget, MaxBytes: 1}}})
	budget := dry.SizeBefore / 2
	rep := e.sweep(store.SweepOptions{Policies: []store.Policy{{Kind: store.PolicySizeBudget, MaxBytes: budget}}})
	most := int64(n - 1)
	if e.st.Backend() != "sqlite" {
		most = n
	}
	if rep.Budget == nil || rep.Budget.Sessions < 1 || rep.Budget.Sessions > most {
		t.Fatalf("budget of %d bytes (store %d) removed %+v of %d conversations", budget, dry.SizeBefore, rep.Budget, n)
	}
	left := len(e.listIDs(store.ConversationFilter{}))
	if int64(left) != n-rep.Budget.Sessions {
		t.Fatalf("%d conversations left, %d removed of %d", left, rep.Budget.Sessions, n)
	}
	if e.st.Backend() != "sqlite" {
		// PostgreSQL estimates what a row frees from statistics (see
		// testSizeBudget), which count the search documents among the
		// rows: it may remove more than the budget needs.
		return
	}
	if rep.SizeAfter > budget {
		t.Fatalf("size after %d, budget %d (before %d; %d of %d removed)", rep.SizeAfter, budget, dry.SizeBefore, rep.Budget.Sessions, n)
	}
	// And not far under it: half the store is about half the
	// conversations (their text and its index), not three quarters.
	if rep.Budget.Sessions > n*3/4 {
		t.Fatalf("removed %d of %d conversations for a budget of half the store", rep.Budget.Sessions, n)
	}
}

// A background sweeper sweeps by itself; of two, one holds the lease and
// sweeps; when its store closes, the other takes over.
func testBackgroundSweeper(t *testing.T, e *env) {
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Minute})
	swept := make(chan string, 100)
	open := func(holder string) store.Store {
		cfg := store.SweeperConfig{Interval: 10 * time.Millisecond, Holder: holder, LeaseTTL: time.Hour,
			OnSweep: func(rep store.SweepReport, err error) {
				if err == nil {
					if k, _ := rep.Kind(store.PolicyConversationsIdle); k.Sessions > 0 {
						swept <- holder
					}
				}
			}}
		st := e.openWith(Options{Sweeper: &cfg})
		return st
	}
	a := open("a")
	open("b")
	waitSwept := func(id string) string {
		t.Helper()
		e.saveNow(id)
		e.clock.Advance(time.Minute)
		deadline := time.After(10 * time.Second)
		for {
			select {
			case h := <-swept:
				if e.exists(id) {
					continue
				}
				return h
			case <-deadline:
				t.Fatalf("%s was not swept", id)
			}
		}
	}
	first := waitSwept("x1")
	if first != "a" && first != "b" {
		t.Fatalf("swept by %q", first)
	}
	if first == "a" {
		a.Close() // gives the lease up
		if h := waitSwept("x2"); h != "b" {
			t.Fatalf("after a closed, %q swept", h)
		}
	} else if h := waitSwept("x2"); h != "b" {
		t.Fatalf("b holds the lease, but %q swept", h)
	}
}

// A background sweeper renews its lease during a long sweep (between
// batches, once a third of the TTL has passed), so that no other sweeper
// takes it over while it works.
func testSweeperRenewsLease(t *testing.T, e *env) {
	for i := range 30 {
		e.saveNow(fmt.Sprintf("r%02d", i))
	}
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Minute})
	e.clock.Advance(time.Minute)
	done := make(chan store.SweepReport, 1)
	cfg := store.SweeperConfig{Interval: time.Hour, Holder: "long", LeaseTTL: 3 * time.Minute,
		Options: store.SweepOptions{BatchRows: 1, Progress: func(store.KindSweep) { e.clock.Advance(30 * time.Second) }},
		OnSweep: func(rep store.SweepReport, err error) {
			if err != nil {
				t.Error(err)
			}
			done <- rep
		}}
	e.openWith(Options{Sweeper: &cfg})
	var rep store.SweepReport
	select {
	case rep = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the sweep did not end")
	}
	if k, _ := rep.Kind(store.PolicyConversationsIdle); k.Sessions != 30 {
		t.Fatalf("swept %+v", k)
	}
	// The sweep ran for many TTLs of the clock; the lease is still the
	// sweeper's, renewed less than a TTL ago.
	var held *store.LeaseHeldError
	if err := e.ret().TakeLease(e.ctx, "other", time.Minute); !errors.As(err, &held) || held.Holder != "long" {
		t.Fatalf("another sweeper took the lease: %v", err)
	}
}

// retentionAfterClose are the calls of every Retention method on a closed
// store (see testEveryMethodAfterClose).
func retentionAfterClose(r store.Retention) map[string]closedCall {
	ref := store.SessionRef{Facet: store.HoldConversations, ID: "closed"}
	policy := store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour}
	return map[string]closedCall{
		"SetPolicy":    func(ctx context.Context) error { return r.SetPolicy(ctx, policy) },
		"RemovePolicy": func(ctx context.Context) error { _, err := r.RemovePolicy(ctx, policy.Kind); return err },
		"Policies":     func(ctx context.Context) error { _, err := r.Policies(ctx); return err },
		"Hold":         func(ctx context.Context) error { return r.Hold(ctx, ref, "") },
		"Release":      func(ctx context.Context) error { _, err := r.Release(ctx, ref); return err },
		"Holds":        func(ctx context.Context) error { _, err := r.Holds(ctx); return err },
		"Accessed":     func(ctx context.Context) error { return r.Accessed(ctx, ref) },
		"Sweep": func(ctx context.Context) error {
			_, err := r.Sweep(ctx, store.SweepOptions{Policies: []store.Policy{policy}})
			return err
		},
		"Sweeps":    func(ctx context.Context) error { _, err := r.Sweeps(ctx, 1); return err },
		"TakeLease": func(ctx context.Context) error { return r.TakeLease(ctx, "h", time.Minute) },
		"DropLease": func(ctx context.Context) error { return r.DropLease(ctx, "h") },
	}
}

// With a stored policy whose reads count, Load and GetSession move the
// session's last access (never its update time), so a read session lives
// on; without one, reads change nothing.
func testReadsCountOnLoad(t *testing.T, e *env) {
	e.saveNow("read")
	e.saveNow("unread")
	key := store.SessionKey{App: "rcl", User: "u", Session: "s"}
	other := store.SessionKey{App: "rcl", User: "u", Session: "other"}
	e.asCreate(key, store.ScopedState{})
	e.asCreate(other, store.ScopedState{})
	e.clock.Advance(10 * time.Minute)
	e.load("read") // no policy yet: not recorded
	e.setPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: time.Hour, ReadsCount: true})
	e.setPolicy(store.Policy{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour, ReadsCount: true})
	e.clock.Advance(30 * time.Minute)
	before := e.load("read")
	e.asGet(key)
	if after := e.load("read"); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatal("a read moved the update time")
	}
	e.clock.Advance(20 * time.Minute) // an hour after creation, 20 minutes after the reads
	rep := e.sweep(store.SweepOptions{})
	wantKind(t, rep, store.PolicyConversationsIdle, 1, 0)
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 0)
	if !e.exists("read") || e.exists("unread") {
		t.Fatal("the read conversation should live on, the other go")
	}
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: other}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the unread agent session: %v", err)
	}
	e.clock.Advance(40 * time.Minute) // an hour after the last reads
	rep = e.sweep(store.SweepOptions{})
	wantKind(t, rep, store.PolicyConversationsIdle, 1, 0)
	wantKind(t, rep, store.PolicyAgentSessionsIdle, 1, 0)
}
