package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// crossStoreTimeout bounds how long a test waits for a cancel recorded by
// another store to reach a turn context. It is a liveness bound for loaded
// machines, far above the documented delivery bound; delays are measured
// and logged by the cross-process test, not asserted tightly.
const crossStoreTimeout = 10 * time.Second

func (e *env) beginTurn(id string) (uint64, context.Context) {
	e.t.Helper()
	gen, ctx, err := e.rt().BeginTurn(e.ctx, id)
	if err != nil {
		e.t.Fatalf("BeginTurn(%q): %v", id, err)
	}
	return gen, ctx
}

func (e *env) endTurn(id string, gen uint64, want bool) {
	e.t.Helper()
	ended, err := e.rt().EndTurn(e.ctx, id, gen)
	if err != nil {
		e.t.Fatalf("EndTurn(%q, %d): %v", id, gen, err)
	}
	if ended != want {
		e.t.Fatalf("EndTurn(%q, %d) = %v, want %v", id, gen, ended, want)
	}
}

func (e *env) cancel(id string, cause store.CancelCause) bool {
	e.t.Helper()
	ok, err := e.rt().Cancel(e.ctx, id, cause)
	if err != nil {
		e.t.Fatalf("Cancel(%q): %v", id, err)
	}
	return ok
}

func (e *env) takeCause(id string, gen uint64) (store.CancelCause, bool) {
	e.t.Helper()
	c, ok, err := e.rt().TakeCancelCause(e.ctx, id, gen)
	if err != nil {
		e.t.Fatalf("TakeCancelCause(%q, %d): %v", id, gen, err)
	}
	return c, ok
}

func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// wantFired checks that ctx is already done (same-store cancels fire before
// the cancelling call returns) with a turn cancel of cause.
func wantFired(t *testing.T, ctx context.Context, cause store.CancelCause) {
	t.Helper()
	if !isDone(ctx) {
		t.Fatalf("turn context not cancelled (want %s)", cause)
	}
	checkCause(t, ctx, cause)
}

func checkCause(t *testing.T, ctx context.Context, cause store.CancelCause) {
	t.Helper()
	got, ok := store.CancelCauseOf(ctx)
	if !ok || got != cause {
		t.Fatalf("turn context cause = %v (%q, %v), want %s", context.Cause(ctx), got, ok, cause)
	}
	if !errors.Is(context.Cause(ctx), store.ErrTurnCancelled) || !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("cause %v / err %v", context.Cause(ctx), ctx.Err())
	}
}

// waitFired waits (bounded) for a cancel from another store to arrive.
func waitFired(t *testing.T, ctx context.Context, cause store.CancelCause) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(crossStoreTimeout):
		t.Fatalf("turn context not cancelled within %v (want %s)", crossStoreTimeout, cause)
	}
	checkCause(t, ctx, cause)
	return time.Since(start)
}

func testTurnCauseBeforeFiring(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	observer := e.open().Runtime()
	gen, tctx := e.beginTurn("s")
	// When the context fires, the cause must already be durable: another
	// store on the database reads it at that moment.
	seen := make(chan store.TurnState, 1)
	go func() {
		<-tctx.Done()
		s, err := observer.Get(e.ctx, "s")
		if err != nil {
			t.Errorf("observer Get: %v", err)
		}
		seen <- s.Turn
	}()
	if !e.cancel("s", store.CauseClientRequest) {
		t.Fatal("Cancel returned false")
	}
	wantFired(t, tctx, store.CauseClientRequest)
	if turn := <-seen; turn.CancelCause != store.CauseClientRequest || turn.Generation != gen || !turn.Running {
		t.Fatalf("state seen when the context fired: %+v", turn)
	}
	// Drained exactly once, also through another store.
	c, ok, err := observer.TakeCancelCause(e.ctx, "s", gen)
	if err != nil || !ok || c != store.CauseClientRequest {
		t.Fatalf("TakeCancelCause = %q, %v, %v", c, ok, err)
	}
	if c, ok := e.takeCause("s", gen); ok {
		t.Fatalf("cause drained twice: %q", c)
	}
	// A second cancel of the same turn keeps it cancelled, records nothing new.
	if !e.cancel("s", store.CauseClientRequest) {
		t.Fatal("second Cancel of a running turn returned false")
	}
	if c, ok := e.takeCause("s", gen); ok {
		t.Fatalf("second cancel recorded a cause again: %q", c)
	}
}

func testTurnSupersededCause(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	g1, c1 := e.beginTurn("s")
	g2, c2 := e.beginTurn("s")
	wantFired(t, c1, store.CauseSuperseded)
	if isDone(c2) {
		t.Fatal("superseding turn cancelled")
	}
	if c, ok := e.takeCause("s", g1); !ok || c != store.CauseSuperseded {
		t.Fatalf("cause of superseded turn = %q, %v", c, ok)
	}
	if _, ok := e.takeCause("s", g1); ok {
		t.Fatal("superseded cause drained twice")
	}
	if c, ok := e.takeCause("s", g2); ok {
		t.Fatalf("running turn has a cause: %q", c)
	}
	// The superseded turn's owner ends it: no effect on the new turn.
	e.endTurn("s", g1, false)
	if s := e.rtGet("s"); !s.Turn.Running || s.Turn.Generation != g2 || s.Turn.CancelCause != "" {
		t.Fatalf("turn state = %+v", s.Turn)
	}
	e.endTurn("s", g2, true)
	if s := e.rtGet("s"); s.Turn.Running || s.Turn.Generation != g2 {
		t.Fatalf("turn state after end = %+v", s.Turn)
	}
}

func testTurnFirstCauseWins(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	gen, tctx := e.beginTurn("s")
	e.cancel("s", store.CauseClientRequest)
	// Kill after a client cancel: the session goes, the cause stays the
	// one the context fired with.
	if !e.rtKill("s") {
		t.Fatal("Kill returned false")
	}
	wantFired(t, tctx, store.CauseClientRequest)
	if c, ok := e.takeCause("s", gen); !ok || c != store.CauseClientRequest {
		t.Fatalf("cause = %q, %v; want client_rpc", c, ok)
	}
	if _, ok := e.takeCause("s", gen); ok {
		t.Fatal("drained twice")
	}
	// Cancelling a superseded turn is impossible: only the running one is.
	e.rtInsert(rtNew("t"))
	g1, c1 := e.beginTurn("t")
	e.beginTurn("t")
	e.cancel("t", store.CauseAdminKill)
	checkCause(t, c1, store.CauseSuperseded)
	if c, _ := e.takeCause("t", g1); c != store.CauseSuperseded {
		t.Fatalf("superseded turn cause = %q", c)
	}
}

func testTurnCancelIdle(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	if e.cancel("s", store.CauseClientRequest) {
		t.Fatal("Cancel without a turn returned true")
	}
	gen, _ := e.beginTurn("s")
	e.endTurn("s", gen, true)
	if e.cancel("s", store.CauseClientRequest) {
		t.Fatal("Cancel after the turn ended returned true")
	}
	if c, ok := e.takeCause("s", gen); ok {
		t.Fatalf("a cancel without a running turn recorded %q", c)
	}
	if s := e.rtGet("s"); s.Turn.CancelCause != "" || s.Turn.Running {
		t.Fatalf("turn state = %+v", s.Turn)
	}
}

func testTurnEndReleases(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	e.clock.Advance(time.Second)
	gen, tctx := e.beginTurn("s")
	s := e.rtGet("s")
	if !s.Turn.Running || s.Turn.Generation != gen || s.Turn.Owner == "" || !s.Turn.StartedAt.Equal(e.clock.Now()) {
		t.Fatalf("turn state = %+v", s.Turn)
	}
	e.endTurn("s", gen, true)
	if !isDone(tctx) || !errors.Is(context.Cause(tctx), store.ErrTurnEnded) {
		t.Fatalf("ended turn context: done=%v cause=%v", isDone(tctx), context.Cause(tctx))
	}
	if _, ok := store.CancelCauseOf(tctx); ok {
		t.Fatal("an ended turn reads as cancelled")
	}
	if s := e.rtGet("s"); s.Turn.Running || s.Turn.Generation != gen {
		t.Fatalf("turn state after end = %+v", s.Turn)
	}
	e.endTurn("s", gen, false) // twice: no-op
	// Ending a turn of a removed session is not an error.
	g2, _ := e.beginTurn("s")
	e.rtRemove("s")
	e.endTurn("s", g2, false)
}

func testTurnRemoveCause(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	gen, tctx := e.beginTurn("s")
	e.rtRemove("s")
	wantFired(t, tctx, store.CauseSessionRemoved)
	if e.rtExists("s") {
		t.Fatal("session still there")
	}
	// Readable once after the session is gone, also after a restart.
	e.reopen()
	if c, ok := e.takeCause("s", gen); !ok || c != store.CauseSessionRemoved {
		t.Fatalf("cause = %q, %v", c, ok)
	}
	if _, ok := e.takeCause("s", gen); ok {
		t.Fatal("drained twice")
	}
	// Removing a session without a running turn records nothing.
	e.rtInsert(rtNew("s"))
	g2, _ := e.beginTurn("s")
	e.endTurn("s", g2, true)
	e.rtRemove("s")
	if c, ok := e.takeCause("s", g2); ok {
		t.Fatalf("idle remove recorded %q", c)
	}
}

func testTurnGenerations(t *testing.T, e *env) {
	e.rtInsert(rtNew("a"))
	e.rtInsert(rtNew("b"))
	var last uint64
	seen := map[uint64]bool{}
	for i := range 10 {
		id := []string{"a", "b"}[i%2]
		gen, _ := e.beginTurn(id)
		if gen <= last || seen[gen] {
			t.Fatalf("generation %d after %d", gen, last)
		}
		seen[gen] = true
		last = gen
		if i%3 == 0 {
			e.endTurn(id, gen, true)
		}
	}
	// A removed and re-created session never sees an old generation again,
	// so a stale EndTurn can never clear a new turn.
	e.rtRemove("a")
	e.rtInsert(rtNew("a"))
	gen, _ := e.beginTurn("a")
	if gen <= last {
		t.Fatalf("generation %d reused after re-create (last %d)", gen, last)
	}
	for old := range seen {
		e.endTurn("a", old, false)
	}
	if !e.rtGet("a").Turn.Running {
		t.Fatal("a stale generation cleared the new turn")
	}
}

func testTurnBeginMissing(t *testing.T, e *env) {
	_, ctx, err := e.rt().BeginTurn(e.ctx, "ghost")
	wantErr(t, err, store.ErrNotFound)
	if ctx != nil {
		t.Fatal("context returned with an error")
	}
}

func testTurnConcurrentBegin(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	const n = 16
	other := e.open().Runtime()
	type turn struct {
		gen uint64
		ctx context.Context
	}
	turns := make([]turn, n)
	var wg sync.WaitGroup
	for i := range n {
		rt := e.rt()
		if i%2 == 1 {
			rt = other
		}
		wg.Go(func() {
			gen, ctx, err := rt.BeginTurn(e.ctx, "s")
			if err != nil {
				t.Errorf("BeginTurn: %v", err)
				return
			}
			turns[i] = turn{gen, ctx}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var maxGen uint64
	for _, tu := range turns {
		maxGen = max(maxGen, tu.gen)
	}
	if s := e.rtGet("s"); s.Turn.Generation != maxGen || !s.Turn.Running {
		t.Fatalf("turn state %+v, want generation %d running", s.Turn, maxGen)
	}
	gens := map[uint64]bool{}
	for _, tu := range turns {
		if gens[tu.gen] {
			t.Fatalf("generation %d handed out twice", tu.gen)
		}
		gens[tu.gen] = true
		if tu.gen == maxGen {
			if isDone(tu.ctx) {
				t.Fatal("the last turn is cancelled")
			}
			continue
		}
		// Every other turn was superseded exactly once: by its successor.
		waitFired(t, tu.ctx, store.CauseSuperseded)
		if c, ok := e.takeCause("s", tu.gen); !ok || c != store.CauseSuperseded {
			t.Fatalf("turn %d cause = %q, %v", tu.gen, c, ok)
		}
	}
}

func testTurnCancelOtherStore(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	canceller := e.open().Runtime()
	observer := e.open().Runtime()
	for i := range 3 {
		gen, tctx := e.beginTurn("s")
		seen := make(chan store.CancelCause, 1)
		go func() {
			<-tctx.Done()
			s, _ := observer.Get(e.ctx, "s")
			seen <- s.Turn.CancelCause
		}()
		ok, err := canceller.Cancel(e.ctx, "s", store.CauseClientRequest)
		if err != nil || !ok {
			t.Fatalf("Cancel from other store: %v, %v", ok, err)
		}
		d := waitFired(t, tctx, store.CauseClientRequest)
		if c := <-seen; c != store.CauseClientRequest {
			t.Fatalf("cause not durable when the context fired: %q", c)
		}
		t.Logf("trial %d: cancel from another store delivered after %v", i, d)
		if c, ok := e.takeCause("s", gen); !ok || c != store.CauseClientRequest {
			t.Fatalf("cause = %q, %v", c, ok)
		}
		e.endTurn("s", gen, true)
	}
}

func testTurnSupersedeKillOtherStore(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	other := e.open().Runtime()
	g1, c1 := e.beginTurn("s")
	g2, c2, err := other.BeginTurn(e.ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	waitFired(t, c1, store.CauseSuperseded)
	if c, ok := e.takeCause("s", g1); !ok || c != store.CauseSuperseded {
		t.Fatalf("cause = %q, %v", c, ok)
	}
	// Kill from the first store reaches the turn of the second.
	if !e.rtKill("s") {
		t.Fatal("Kill returned false")
	}
	waitFired(t, c2, store.CauseAdminKill)
	if c, ok, err := other.TakeCancelCause(e.ctx, "s", g2); err != nil || !ok || c != store.CauseAdminKill {
		t.Fatalf("cause = %q, %v, %v", c, ok, err)
	}
	// Remove reaches it too.
	e.rtInsert(rtNew("s"))
	_, c3, err := other.BeginTurn(e.ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	e.rtRemove("s")
	waitFired(t, c3, store.CauseSessionRemoved)
}

func testTurnEndOtherStore(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	other := e.open().Runtime()
	gen, tctx := e.beginTurn("s")
	if ended, err := other.EndTurn(e.ctx, "s", gen); err != nil || !ended {
		t.Fatalf("EndTurn from other store: %v, %v", ended, err)
	}
	select {
	case <-tctx.Done():
	case <-time.After(crossStoreTimeout):
		t.Fatal("turn ended elsewhere: context not released")
	}
	if !errors.Is(context.Cause(tctx), store.ErrTurnEnded) {
		t.Fatalf("cause = %v", context.Cause(tctx))
	}
}

func testTurnCloseReleases(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	st := e.open()
	gen, tctx, err := st.Runtime().BeginTurn(e.ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if !isDone(tctx) || !errors.Is(context.Cause(tctx), store.ErrStoreClosed) {
		t.Fatalf("after Close: done=%v cause=%v", isDone(tctx), context.Cause(tctx))
	}
	// Closing records nothing: the turn is still running for the database.
	if s := e.rtGet("s"); !s.Turn.Running || s.Turn.Generation != gen || s.Turn.CancelCause != "" {
		t.Fatalf("turn state = %+v", s.Turn)
	}
	_, _, err = st.Runtime().BeginTurn(e.ctx, "s")
	wantErr(t, err, store.ErrStoreClosed)
}

func testTurnParentContext(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	parent, stop := context.WithCancel(e.ctx)
	gen, tctx, err := e.rt().BeginTurn(parent, "s")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !isDone(tctx) {
		t.Fatal("turn context outlives its parent")
	}
	if _, ok := store.CancelCauseOf(tctx); ok {
		t.Fatal("a parent cancel reads as a turn cancel")
	}
	// The turn itself is still registered until ended.
	if !e.rtGet("s").Turn.Running {
		t.Fatal("parent cancel ended the durable turn")
	}
	e.endTurn("s", gen, true)
	// BeginTurn with a context already cancelled writes nothing.
	_, _, err = e.rt().BeginTurn(parent, "s")
	wantErr(t, err, context.Canceled)
	if s := e.rtGet("s"); s.Turn.Running || s.Turn.Generation != gen {
		t.Fatalf("cancelled BeginTurn wrote: %+v", s.Turn)
	}
}

func testTurnSurvivesReopen(t *testing.T, e *env) {
	e.rtInsert(rtOwned("s", store.ChatModeChat, "tui"))
	e.rtInsert(rtOwned("me", store.ChatModeChat, "tui"))
	gen, _ := e.beginTurn("s")
	owner := e.rtGet("s").Turn.Owner
	e.reopen() // the process that began the turn is gone
	s := e.rtGet("s")
	if !s.Turn.Running || s.Turn.Generation != gen || s.Turn.Owner != owner {
		t.Fatalf("turn after reopen = %+v", s.Turn)
	}
	// Still mid-turn: not evicted.
	if ev := e.evict("tui", store.ChatModeChat, "me"); len(ev) != 0 {
		t.Fatalf("evicted a session with a running turn: %+v", ev)
	}
	// The restarted runtime clears it with the generation it reads.
	e.endTurn("s", gen, true)
	if ev := e.evict("tui", store.ChatModeChat, "me"); len(ev) != 1 {
		t.Fatalf("evicted %+v after clearing the turn", ev)
	}
}

func testTurnInvalidInput(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	gen, tctx := e.beginTurn("s")
	rt := e.rt()
	for name, err := range map[string]error{
		"begin empty":      func() error { _, _, err := rt.BeginTurn(e.ctx, ""); return err }(),
		"end empty":        func() error { _, err := rt.EndTurn(e.ctx, "", gen); return err }(),
		"end gen 0":        func() error { _, err := rt.EndTurn(e.ctx, "s", 0); return err }(),
		"end gen overflow": func() error { _, err := rt.EndTurn(e.ctx, "s", 1<<63); return err }(),
		"cancel empty":     func() error { _, err := rt.Cancel(e.ctx, "", store.CauseClientRequest); return err }(),
		"cancel no cause":  func() error { _, err := rt.Cancel(e.ctx, "s", ""); return err }(),
		"cancel unknown":   func() error { _, err := rt.Cancel(e.ctx, "s", "because"); return err }(),
		"cancel supersede": func() error { _, err := rt.Cancel(e.ctx, "s", store.CauseSuperseded); return err }(),
		"take gen 0":       func() error { _, _, err := rt.TakeCancelCause(e.ctx, "s", 0); return err }(),
		"take empty":       func() error { _, _, err := rt.TakeCancelCause(e.ctx, "", gen); return err }(),
	} {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
	if isDone(tctx) || e.rtGet("s").Turn.CancelCause != "" {
		t.Fatal("invalid calls touched the running turn")
	}
	if got := fmt.Sprint(store.CauseSuperseded.Valid(), store.CancelCause("x").Valid()); got != "true false" {
		t.Fatalf("Valid = %s", got)
	}
}
