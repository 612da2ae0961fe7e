package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// useTrace records the steps of the side queues of a store
// (pgstore.SetUseTrace), in order.
type useTrace struct {
	mu     sync.Mutex
	events []pgstore.UseEvent
	more   chan struct{}
}

func traceUses(st *pgstore.Store) *useTrace {
	tr := &useTrace{more: make(chan struct{}, 1)}
	st.SetUseTrace(func(ev pgstore.UseEvent) {
		tr.mu.Lock()
		tr.events = append(tr.events, ev)
		tr.mu.Unlock()
		select {
		case tr.more <- struct{}{}:
		default:
		}
	})
	return tr
}

// since returns the events from the mark'th on.
func (tr *useTrace) since(mark int) []pgstore.UseEvent {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.events[mark:])
}

// mark returns the number of events so far.
func (tr *useTrace) mark() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.events)
}

// wait waits until the events from the mark'th on satisfy ok (a deadlock
// guard bounds it, not a speed goal).
func (tr *useTrace) wait(t *testing.T, mark int, what string, ok func([]pgstore.UseEvent) bool) {
	t.Helper()
	guard := time.After(30 * time.Second)
	for !ok(tr.since(mark)) {
		select {
		case <-tr.more:
		case <-guard:
			t.Fatalf("%s: still waiting after 30s; events %+v", what, tr.since(mark))
		}
	}
}

// has reports whether one of events is of kind, of session id.
func has(events []pgstore.UseEvent, kind, id string) bool {
	return slices.ContainsFunc(events, func(ev pgstore.UseEvent) bool { return ev.Kind == kind && ev.Session == id })
}

// asideCalls counts the calls of session id moved to its side queue.
func asideCalls(events []pgstore.UseEvent, id string) int {
	n := 0
	for _, ev := range events {
		if ev.Kind == "aside" && ev.Session == id {
			n += ev.Calls
		}
	}
	return n
}

// committedCalls counts the calls of session id in committed batches, of
// side queues (side) or shared.
func committedCalls(events []pgstore.UseEvent, id string, side bool) int {
	n := 0
	for _, ev := range events {
		if ev.Kind == "commit" && ev.Side == side {
			for _, s := range ev.Sessions {
				if s == id {
					n++
				}
			}
		}
	}
	return n
}

// sideFixture opens a store on a manual clock (returned) with sessions
// "held", s-0, s-1 and s-2 (budget 1<<40), holds pgstore.DirectUses calls
// decided at once before their decision (so that every later call queues
// and batches; the returned function lets them go), and returns a
// connection for holding rows.
func sideFixture(t *testing.T) (*pgstore.Store, *storetest.Clock, *pgx.Conn, func()) {
	t.Helper()
	loc := newSchema(t)
	ctx := context.Background()
	clock := storetest.NewClock()
	st, err := pgstore.Open(ctx, loc, pgstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ids := []string{"held", "s-0", "s-1", "s-2"}
	for i := range pgstore.DirectUses {
		ids = append(ids, fmt.Sprintf("direct-%d", i))
	}
	for _, id := range ids {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: id, AgentID: "A", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
		}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	release := holdDirectUses(t, ctx, st)
	var once sync.Once
	letGo := func() { once.Do(release) }
	t.Cleanup(letGo)
	return st, clock, conn, letGo
}

// holdRow begins a transaction on conn that locks session id's row.
func holdRow(t *testing.T, conn *pgx.Conn, id string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT id FROM governed_sessions WHERE id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitBlocked waits until a backend waits for a lock that tx holds, as
// the server shows it (pg_blocking_pids); a deadlock guard bounds it.
func waitBlocked(t *testing.T, tx pgx.Tx, what string) {
	t.Helper()
	ctx := context.Background()
	pid := int64(tx.Conn().PgConn().PID())
	guard := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND $1::int = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(guard) {
			t.Fatalf("%s: still waiting after 30s", what)
		}
		time.Sleep(time.Millisecond) // a poll of the server's state, not a timing assertion
	}
}

// sideCommits returns the committed side batches of session id among events.
func sideCommits(events []pgstore.UseEvent, id string) []pgstore.UseEvent {
	var out []pgstore.UseEvent
	for _, ev := range events {
		if ev.Kind == "commit" && ev.Side && slices.Contains(ev.Sessions, id) {
			out = append(out, ev)
		}
	}
	return out
}

// useAsync runs one Use of session id (read_file) in a goroutine; the
// channel gets its error.
func useAsync(st *pgstore.Store, id string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := st.Governance().Use(context.Background(), store.UseRequest{SessionID: id, Tools: []string{"read_file"}})
		done <- err
	}()
	return done
}

// waitAll waits for every call of calls to succeed.
func waitAll(t *testing.T, calls []<-chan error, what string) {
	t.Helper()
	guard := time.After(30 * time.Second)
	for i, done := range calls {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: call %d: %v", what, i, err)
			}
		case <-guard:
			t.Fatalf("%s: still waiting after 30s", what)
		}
	}
}

// sharedBatch queues calls of ids with the leader's turn held, so that
// they are all queued when it is released, and waits for them: one batch
// of the tenant's queue takes them all.
func sharedBatch(t *testing.T, st *pgstore.Store, ids ...string) {
	t.Helper()
	turn := st.HoldUseTurn()
	var calls []<-chan error
	for _, id := range ids {
		calls = append(calls, useAsync(st, id))
	}
	for st.UseQueued() < len(ids) {
		runtime.Gosched()
	}
	turn()
	waitAll(t, calls, fmt.Sprintf("a batch of %v", ids))
}

// TestUseBatchSideQueueGivesSessionBack: a session's row is held by
// another transaction; its calls, queued (more than pgstore.DirectUses
// calls in flight), are taken out of the shared batch and go to the
// session's side queue, whose batch waits for the row; calls that come
// meanwhile join that side queue. Once the row is released, the waiting
// batch commits, the next side batch finds the row free and gives the
// session back to the tenant's queue, without any batch paying a lock wait
// or waiting for a row after the release; the session's later calls are
// decided in a shared batch with other sessions' calls again, and every
// call is decided in exactly one committed batch, counted and audited once.
func TestUseBatchSideQueueGivesSessionBack(t *testing.T) {
	st, _, conn, letGo := sideFixture(t)
	ctx := context.Background()
	tr := traceUses(st)
	tx := holdRow(t, conn, "held")
	defer tx.Rollback(ctx)

	var heldCalls []<-chan error
	for range 3 {
		heldCalls = append(heldCalls, useAsync(st, "held"))
	}
	tr.wait(t, 0, "the held session's calls on its side queue", func(evs []pgstore.UseEvent) bool { return asideCalls(evs, "held") == 3 })
	waitBlocked(t, tx, "a side batch waiting for the held row")
	for range 2 {
		heldCalls = append(heldCalls, useAsync(st, "held"))
	}
	tr.wait(t, 0, "the held session's calls on its side queue", func(evs []pgstore.UseEvent) bool { return asideCalls(evs, "held") == 5 })
	for i, done := range heldCalls {
		select {
		case err := <-done:
			t.Fatalf("held call %d completed (%v) while its row was held", i, err)
		default:
		}
	}
	if n := committedCalls(tr.since(0), "held", true) + committedCalls(tr.since(0), "held", false); n != 0 {
		t.Fatalf("%d calls of the held session committed while its row was held", n)
	}

	busy, wary, release := st.UseBusy(), st.UseWary(), tr.mark()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitAll(t, heldCalls, "the held session's calls, its row released")
	tr.wait(t, release, "the session given back", func(evs []pgstore.UseEvent) bool { return has(evs, "back", "held") })
	after := tr.since(release)
	var back pgstore.UseEvent
	for _, ev := range after {
		switch ev.Kind {
		case "back":
			back = ev
		case "aside":
			t.Errorf("after the release: %+v", ev)
		}
	}
	if !back.Free {
		t.Fatalf("the side queue gave the session back after a batch that found its row held: %+v", after)
	}
	if n := committedCalls(after, "held", true); n != 5 {
		t.Fatalf("%d calls committed by the side queue after the release; want 5: %+v", n, after)
	}
	// Only the batch that waited at the release found the row held.
	commits := sideCommits(after, "held")
	if len(commits) < 2 || !commits[0].Held {
		t.Fatalf("side batches after the release: %+v; want the waiting one, then a batch that finds the row free", commits)
	}
	for _, ev := range commits[1:] {
		if ev.Held {
			t.Fatalf("a side batch found the row held after the release: %+v", commits)
		}
	}
	if n, w := st.UseBusy(), st.UseWary(); n != busy || w != wary {
		t.Fatalf("%d batches paid a lock wait after the release (%d after their lock-first step, %d without it)", n-busy+w-wary, n-busy, w-wary)
	}

	shared := tr.mark()
	sharedBatch(t, st, "held", "s-0", "held", "s-1", "held", "s-2")
	evs := tr.since(shared)
	if len(evs) != 1 || evs[0].Kind != "commit" || evs[0].Side || len(evs[0].Sessions) != 6 || committedCalls(evs, "held", false) != 3 {
		t.Fatalf("the session's later calls: %+v; want one shared batch of all six", evs)
	}
	letGo()
	wantCalls(t, st, map[string]int64{"held": 8, "s-0": 1, "s-1": 1, "s-2": 1})
	all := tr.since(0)
	if n := committedCalls(all, "held", true) + committedCalls(all, "held", false); n != 8 {
		t.Fatalf("%d calls of the held session in committed batches; want 8", n)
	}
	if n := useEvents(t, st)["held"][store.OutcomeAllowed]; n != 8 {
		t.Fatalf("%d allowed events of the held session; want 8", n)
	}
}

// TestUseBatchRemembersHeldRow: a session whose row its side queue's last
// batch found held is remembered as held for pgstore.UseHeldFor: its next
// calls skip the shared batches at once (no shared batch pays a lock wait
// and a rerun for them) and go to its side queue, whose batch waits for
// the row; the calls of other sessions in the same shared batch complete
// while the row is still held. A side batch that finds the row free
// forgets it, and the session's next calls share a batch again; once the
// clock passes pgstore.UseHeldFor, a row remembered as held is forgotten
// too. A shared batch that pays for the held row pays twice: its first
// try, without the lock-first step, gives up on the row (UseWary), and
// its rerun with the step finds it held (UseBusy). Every call is counted
// once.
func TestUseBatchRemembersHeldRow(t *testing.T) {
	st, clock, conn, letGo := sideFixture(t)
	ctx := context.Background()
	tr := traceUses(st)
	back := func(mark int, what string) pgstore.UseEvent {
		t.Helper()
		tr.wait(t, mark, what, func(evs []pgstore.UseEvent) bool { return has(evs, "back", "held") })
		for _, ev := range tr.since(mark) {
			if ev.Kind == "back" {
				return ev
			}
		}
		panic("unreachable")
	}
	// heldBatch holds the leader's turn while a call of the held session
	// and one of other queue, then lets them go as one batch; it returns
	// once the other call has completed and the held session's call waits
	// for its row on its side queue.
	var tx pgx.Tx
	heldBatch := func(other string) <-chan error {
		t.Helper()
		mark := tr.mark()
		turn := st.HoldUseTurn()
		held, done := useAsync(st, "held"), useAsync(st, other)
		for st.UseQueued() < 2 {
			runtime.Gosched()
		}
		turn()
		waitAll(t, []<-chan error{done}, "the other session's call, a row held")
		tr.wait(t, mark, "the held session's call on its side queue", func(evs []pgstore.UseEvent) bool { return asideCalls(evs, "held") == 1 })
		waitBlocked(t, tx, "the held session's side batch waiting")
		select {
		case err := <-held:
			t.Fatalf("the held session's call completed (%v) while its row was held", err)
		default:
		}
		return held
	}

	// A shared batch finds the row held and pays a lock wait; the side
	// queue's batch waits; released, the queue gives the session back, its
	// last batch having found the row held.
	tx = holdRow(t, conn, "held")
	mark := tr.mark()
	first := heldBatch("s-0")
	tx.Commit(ctx)
	waitAll(t, []<-chan error{first}, "the held session's call, its row released")
	if ev := back(mark, "the session given back"); ev.Free {
		t.Fatalf("given back as free: %+v", tr.since(mark))
	}
	if n, w := st.UseBusy(), st.UseWary(); n != 1 || w != 1 {
		t.Fatalf("%d batches paid a lock wait after their lock-first step, %d without it; want the shared batch's 1", n, w)
	}

	// Held again: remembered, its call skips the shared batch at once.
	tx = holdRow(t, conn, "held")
	mark = tr.mark()
	second := heldBatch("s-1")
	if n, w := st.UseBusy(), st.UseWary(); n != 1 || w != 1 {
		t.Fatalf("%d batches paid a lock wait after their lock-first step, %d without it; want none more (the row remembered as held)", n, w)
	}
	evs := tr.since(mark)
	if committedCalls(evs, "held", false) != 0 || committedCalls(evs, "s-1", false) != 1 || asideCalls(evs, "held") != 1 {
		t.Fatalf("a batch of a remembered session's call: %+v", evs)
	}
	tx.Commit(ctx)
	waitAll(t, []<-chan error{second}, "the held session's call, its row released")
	back(mark, "the session given back")

	// Free now, still remembered: its next call goes to its side queue
	// once, whose batch finds the row free and forgets it; the call after
	// shares a batch again.
	mark = tr.mark()
	waitAll(t, []<-chan error{useAsync(st, "held")}, "a remembered session's call, its row free")
	if ev := back(mark, "the session given back"); !ev.Free {
		t.Fatalf("given back after a batch that found the row held: %+v", tr.since(mark))
	}
	mark = tr.mark()
	sharedBatch(t, st, "held", "s-2")
	if evs := tr.since(mark); len(evs) != 1 || committedCalls(evs, "held", false) != 1 || len(evs[0].Sessions) != 2 {
		t.Fatalf("a forgotten session's call: %+v; want one shared batch", evs)
	}

	// Remembered again (a side batch found the row held), then forgotten
	// once the clock passes UseHeldFor: a shared batch pays a lock wait
	// for it again.
	tx = holdRow(t, conn, "held")
	mark = tr.mark()
	third := heldBatch("s-0")
	if n, w := st.UseBusy(), st.UseWary(); n != 2 || w != 2 {
		t.Fatalf("%d batches paid a lock wait after their lock-first step, %d without it; want 2", n, w)
	}
	tx.Commit(ctx)
	waitAll(t, []<-chan error{third}, "the held session's call, its row released")
	back(mark, "the session given back")
	tx = holdRow(t, conn, "held")
	fourth := heldBatch("s-1")
	if n, w := st.UseBusy(), st.UseWary(); n != 2 || w != 2 {
		t.Fatalf("%d batches paid a lock wait after their lock-first step, %d without it; want 2 (the row remembered)", n, w)
	}
	tx.Commit(ctx)
	waitAll(t, []<-chan error{fourth}, "the held session's call, its row released")
	back(mark, "the session given back")
	clock.Advance(pgstore.UseHeldFor)
	tx = holdRow(t, conn, "held")
	fifth := heldBatch("s-2")
	if n, w := st.UseBusy(), st.UseWary(); n != 3 || w != 3 {
		t.Fatalf("%d batches paid a lock wait after their lock-first step, %d without it; want 3 (the row forgotten after %v)", n, w, pgstore.UseHeldFor)
	}
	tx.Commit(ctx)
	waitAll(t, []<-chan error{fifth}, "the held session's call, its row released")

	letGo()
	wantCalls(t, st, map[string]int64{"held": 7, "s-0": 2, "s-1": 2, "s-2": 2})
	all := tr.since(0)
	if n := committedCalls(all, "held", true) + committedCalls(all, "held", false); n != 7 {
		t.Fatalf("%d calls of the held session in committed batches; want 7", n)
	}
	if n := useEvents(t, st)["held"][store.OutcomeAllowed]; n != 7 {
		t.Fatalf("%d allowed events of the held session; want 7", n)
	}
}
