package storetest

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Turn leases (store.Turns): a turn's store renews its lease while it is
// open; a turn whose lease lapsed is stale, does not block eviction, is
// superseded without a cause, and the causes recorded for it are reaped.
// And EndTurn keeps a cause that was not taken yet.

func init() {
	registerRole("runtime-turn-lease", turnLeaseRole)
}

// testLease is the turn lease of the stores these tests open: short, so
// that a helper process renews it several times a second of wall time.
const testLease = 2 * time.Second

// waitTurn waits (bounded: the store's heartbeat runs on its own
// goroutine, or in another process) until the turn state of session id,
// read through rt, satisfies ok.
func (e *env) waitTurn(rt store.Runtime, id, what string, ok func(store.TurnState) bool) store.TurnState {
	e.t.Helper()
	deadline := time.Now().Add(crossStoreTimeout)
	for {
		s, err := rt.Get(e.ctx, id)
		if err != nil {
			e.t.Fatalf("Get(%q): %v", id, err)
		}
		if ok(s.Turn) {
			return s.Turn
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: turn of %q is %+v after %v", what, id, s.Turn, crossStoreTimeout)
		}
		time.Sleep(5 * time.Millisecond) // polling another goroutine's write, not a clock
	}
}

// testTurnEndKeepsCause: EndTurn no longer drops a cause nobody took, so a
// deferred EndTurn never loses why a turn was cancelled: the cause stays
// takeable exactly once after the turn ended, in whatever order the two
// calls come, also for a superseded turn and a killed session.
func testTurnEndKeepsCause(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	// Cancel, end, then take.
	gen, _ := e.beginTurn("s")
	e.cancel("s", store.CauseClientRequest)
	e.endTurn("s", gen, true)
	if c, ok := e.takeCause("s", gen); !ok || c != store.CauseClientRequest {
		t.Fatalf("cause after EndTurn = %q, %v; want client_rpc", c, ok)
	}
	if c, ok := e.takeCause("s", gen); ok {
		t.Fatalf("cause taken twice: %q", c)
	}
	// Take, then end: nothing is left to take.
	g2, _ := e.beginTurn("s")
	e.cancel("s", store.CauseClientRequest)
	if c, ok := e.takeCause("s", g2); !ok || c != store.CauseClientRequest {
		t.Fatalf("cause = %q, %v", c, ok)
	}
	e.endTurn("s", g2, true)
	if c, ok := e.takeCause("s", g2); ok {
		t.Fatalf("cause taken twice across EndTurn: %q", c)
	}
	// A new turn starts clean.
	g3, c3 := e.beginTurn("s")
	if isDone(c3) || e.rtGet("s").Turn.CancelCause != "" {
		t.Fatal("new turn inherited a cancel")
	}
	if _, ok := e.takeCause("s", g3); ok {
		t.Fatal("new turn has a cause")
	}
	// The superseded turn's owner ends it first, then asks why.
	g4, _ := e.beginTurn("s")
	e.endTurn("s", g3, false)
	if c, ok := e.takeCause("s", g3); !ok || c != store.CauseSuperseded {
		t.Fatalf("superseded cause after EndTurn = %q, %v", c, ok)
	}
	// A killed session: the deferred EndTurn runs, then the runtime asks
	// why its turn was cancelled, through another store.
	other := e.open().Runtime()
	if ok, err := other.Kill(e.ctx, "s"); err != nil || !ok {
		t.Fatalf("Kill: %v, %v", ok, err)
	}
	e.endTurn("s", g4, false)
	if c, ok, err := other.TakeCancelCause(e.ctx, "s", g4); err != nil || !ok || c != store.CauseAdminKill {
		t.Fatalf("cause of the killed turn after EndTurn = %q, %v, %v", c, ok, err)
	}
	// Also after a restart.
	e.rtInsert(rtNew("r"))
	g5, _ := e.beginTurn("r")
	e.cancel("r", store.CauseAdminKill)
	e.endTurn("r", g5, true)
	e.reopen()
	if c, ok := e.takeCause("r", g5); !ok || c != store.CauseAdminKill {
		t.Fatalf("cause after EndTurn and reopen = %q, %v", c, ok)
	}
}

// testTurnLeaseRenewedWhileOpen: a turn's lease is set by BeginTurn and
// renewed by its store while the store is open, so the turn never reads
// as stale however long it runs; once its store is gone (closed here, with
// nothing recorded) the lease lapses and the turn reads as stale.
func testTurnLeaseRenewedWhileOpen(t *testing.T, e *env) {
	e.rtInsert(rtOwned("s", store.ChatModeChat, "tui"))
	st := e.openWith(Options{TurnLease: testLease})
	gen, _, err := st.Runtime().BeginTurn(e.ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	begun := e.clock.Now()
	turn := e.rtGet("s").Turn
	if !turn.Running || turn.Stale || !turn.LeaseExpiresAt.Equal(begun.Add(testLease)) {
		t.Fatalf("turn after BeginTurn = %+v, want running with a lease until %v", turn, begun.Add(testLease))
	}
	// Time passes: the store renews the lease before it lapses.
	for i := 1; i <= 3; i++ {
		e.clock.Advance(testLease / 2)
		want := begun.Add(time.Duration(i) * testLease / 2).Add(testLease)
		turn = e.waitTurn(e.rt(), "s", "renewal", func(ts store.TurnState) bool { return !ts.LeaseExpiresAt.Before(want) })
		if turn.Stale || !turn.Running || turn.Generation != gen {
			t.Fatalf("turn of an open store after %v: %+v", e.clock.Now().Sub(begun), turn)
		}
	}
	if ev := e.evict("tui", store.ChatModeChat, ""); len(ev) != 0 {
		t.Fatalf("evicted a session whose turn is live: %+v", ev)
	}
	// The store goes away without ending its turn.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	turn = e.rtGet("s").Turn
	if turn.Stale || !turn.Running {
		t.Fatalf("turn right after its store closed = %+v: the lease has not lapsed yet", turn)
	}
	e.clock.Advance(turn.LeaseExpiresAt.Sub(e.clock.Now()) - time.Millisecond)
	if turn = e.rtGet("s").Turn; turn.Stale {
		t.Fatalf("stale 1ms before its lease lapses: %+v", turn)
	}
	e.clock.Advance(time.Millisecond)
	if turn = e.rtGet("s").Turn; !turn.Stale || !turn.Running || turn.Generation != gen {
		t.Fatalf("turn once its lease lapsed = %+v, want running and stale", turn)
	}
	// A stale turn no longer keeps its session from being evicted.
	if ev := e.evict("tui", store.ChatModeChat, ""); len(ev) != 1 || ev[0].ID != "s" {
		t.Fatalf("evicted %+v, want the session with the stale turn", ev)
	}
}

// testTurnStaleSupersededAndReaped: once the store of a turn is gone and its
// lease lapsed, BeginTurn supersedes the stale turn without recording a
// cause for it and removes the causes recorded for it while it lived; a
// cancel of a stale turn shows in the session but keeps no takeable cause;
// ReapCancelCauses removes the causes of dead turns of removed sessions.
func testTurnStaleSupersededAndReaped(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	e.rtInsert(rtNew("k"))
	e.rtInsert(rtNew("c"))
	dead := e.openWith(Options{TurnLease: testLease})
	rt := dead.Runtime()
	gens := map[string]uint64{}
	for _, id := range []string{"s", "k", "c"} {
		gen, _, err := rt.BeginTurn(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		gens[id] = gen
	}
	// While the store lives, cancels are recorded for its turns.
	if !e.cancel("s", store.CauseClientRequest) {
		t.Fatal("Cancel returned false")
	}
	if !e.rtKill("k") {
		t.Fatal("Kill returned false")
	}
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(testLease)
	for _, id := range []string{"s", "c"} {
		if turn := e.rtGet(id).Turn; !turn.Stale {
			t.Fatalf("turn of %q after its lease lapsed: %+v", id, turn)
		}
	}
	// A cancel of a stale turn: marked in the session, nothing to take.
	if !e.cancel("c", store.CauseAdminKill) {
		t.Fatal("Cancel of a stale turn returned false")
	}
	if turn := e.rtGet("c").Turn; turn.CancelCause != store.CauseAdminKill || !turn.Stale {
		t.Fatalf("stale turn after Cancel: %+v", turn)
	}
	if c, ok := e.takeCause("c", gens["c"]); ok {
		t.Fatalf("a cancel of a stale turn kept a cause: %q", c)
	}
	// BeginTurn takes the session: the stale turn is superseded without a
	// cause, and the cause recorded while it lived is gone.
	gen, tctx := e.beginTurn("s")
	if isDone(tctx) {
		t.Fatal("the new turn is cancelled")
	}
	turn := e.rtGet("s").Turn
	if turn.Generation != gen || !turn.Running || turn.Stale || turn.CancelCause != "" {
		t.Fatalf("turn after taking the session: %+v", turn)
	}
	if c, ok := e.takeCause("s", gens["s"]); ok {
		t.Fatalf("the dead turn's cause survived: %q", c)
	}
	// The cause of the killed session's dead turn is reaped.
	n, err := e.rt().ReapCancelCauses(e.ctx)
	if err != nil || n != 1 {
		t.Fatalf("ReapCancelCauses = %d, %v; want 1 (the killed session's)", n, err)
	}
	if c, ok := e.takeCause("k", gens["k"]); ok {
		t.Fatalf("the killed session's dead cause survived: %q", c)
	}
	// Causes of live turns are never reaped.
	e.cancel("s", store.CauseClientRequest)
	if n, err := e.rt().ReapCancelCauses(e.ctx); err != nil || n != 0 {
		t.Fatalf("ReapCancelCauses with live turns = %d, %v", n, err)
	}
	if c, ok := e.takeCause("s", gen); !ok || c != store.CauseClientRequest {
		t.Fatalf("live turn's cause = %q, %v", c, ok)
	}
}

// turnLeaseRole begins a turn on each session of args (with the lease the
// parent gave the helper's store), reports each as "begun", and stays
// alive, renewing the leases, until it is killed.
func turnLeaseRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	for _, id := range args {
		gen, _, err := st.Runtime().BeginTurn(ctx, id)
		if err != nil {
			return err
		}
		if err := report(out, turnEvent{Event: "begun", Gen: gen, Cause: id}); err != nil {
			return err
		}
	}
	if f, ok := out.(interface{ Flush() error }); ok {
		f.Flush()
	}
	time.Sleep(time.Hour)
	return errors.New("not killed")
}

// testTurnOfKilledProcessGoesStale is the SIGKILL test of turn leases: a
// second OS process runs turns on three sessions and renews their leases;
// this process cancels one turn and kills another session (their causes
// are recorded for the helper to take). The helper is killed with SIGKILL.
// Once its lease has lapsed its turns read as stale, the session with a
// stale turn is evicted, BeginTurn takes the session over without keeping
// a cause for the dead turn, and the causes nobody will take are removed.
func testTurnOfKilledProcessGoesStale(t *testing.T, e *env) {
	e.rtInsert(rtOwned("crashed", store.ChatModeChat, "tui"))
	e.rtInsert(rtOwned("idle", store.ChatModeChat, "tui"))
	e.rtInsert(rtOwned("killed", store.ChatModeChat, "tui"))
	cmd, stdout := e.spawnWith(testLease, "runtime-turn-lease", "crashed", "idle", "killed")
	events := newEventReader(t, stdout)
	gens := map[string]uint64{}
	for range 3 {
		ev := events.next("begun")
		gens[ev.Cause] = ev.Gen
	}
	if !e.cancel("crashed", store.CauseClientRequest) {
		t.Fatal("Cancel of the helper's turn returned false")
	}
	if !e.rtKill("killed") {
		t.Fatal("Kill returned false")
	}
	// While the helper lives, it renews its leases.
	first := e.rtGet("crashed").Turn
	if !first.Running || first.Stale || first.LeaseExpiresAt.IsZero() {
		t.Fatalf("helper's turn = %+v, want running and live", first)
	}
	renewed := e.waitTurn(e.rt(), "crashed", "renewal by the helper", func(ts store.TurnState) bool {
		return ts.LeaseExpiresAt.After(first.LeaseExpiresAt)
	})
	t.Logf("helper renewed its lease: %v -> %v", first.LeaseExpiresAt, renewed.LeaseExpiresAt)
	if ev := e.evict("tui", store.ChatModeChat, "crashed"); len(ev) != 0 {
		t.Fatalf("evicted a session of a live process: %+v", ev)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	e.reopen()
	last := e.rtGet("crashed").Turn
	if !last.Running || last.Stale || last.Generation != gens["crashed"] {
		t.Fatalf("turn of the killed process before its lease lapsed = %+v", last)
	}
	e.clock.Advance(last.LeaseExpiresAt.Sub(e.clock.Now()))
	for _, id := range []string{"crashed", "idle"} {
		turn := e.rtGet(id).Turn
		if !turn.Running || !turn.Stale || turn.Generation != gens[id] {
			t.Fatalf("turn of %q once the killed process's lease lapsed = %+v, want running and stale", id, turn)
		}
	}
	// The session with a stale turn can be evicted.
	if ev := e.evict("tui", store.ChatModeChat, "crashed"); len(ev) != 1 || ev[0].ID != "idle" {
		t.Fatalf("evicted %+v, want the idle session of the dead process", ev)
	}
	// Another process takes the session over.
	gen, tctx := e.beginTurn("crashed")
	if isDone(tctx) {
		t.Fatal("the new turn is cancelled")
	}
	if turn := e.rtGet("crashed").Turn; turn.Generation != gen || turn.Stale || turn.CancelCause != "" {
		t.Fatalf("turn after taking over: %+v", turn)
	}
	// The causes nobody will take are removed: the cancel of the dead turn
	// (with the takeover), the kill of its other session (reaped).
	if c, ok := e.takeCause("crashed", gens["crashed"]); ok {
		t.Fatalf("the dead turn's cancel cause survived: %q", c)
	}
	if n, err := e.rt().ReapCancelCauses(e.ctx); err != nil || n != 1 {
		t.Fatalf("ReapCancelCauses = %d, %v; want 1", n, err)
	}
	if c, ok := e.takeCause("killed", gens["killed"]); ok {
		t.Fatalf("the killed session's cause survived its dead turn: %q", c)
	}
	if ids := e.rtIDs(); !slices.Equal(ids, []string{"crashed"}) {
		t.Fatalf("sessions left: %v", ids)
	}
}

func (e *env) rtIDs() []string {
	e.t.Helper()
	p, err := e.rt().ListIDs(e.ctx, store.ListIDsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Items
}
