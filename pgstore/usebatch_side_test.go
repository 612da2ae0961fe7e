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
	gate := make(chan struct{})
	st.SetUseDirectHook(func(string) { <-gate })
	var direct sync.WaitGroup
	for i := range pgstore.DirectUses {
		direct.Go(func() {
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: fmt.Sprintf("direct-%d", i), Tools: []string{"read_file"}}); err != nil {
				t.Errorf("direct use: %v", err)
			}
		})
	}
	for st.UseDirect() < pgstore.DirectUses {
		runtime.Gosched()
	}
	var once sync.Once
	letGo := func() { once.Do(func() { close(gate); direct.Wait() }) }
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
	tr.wait(t, 0, "a side batch waiting for the held row", func(evs []pgstore.UseEvent) bool { return has(evs, "wait", "held") })
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

	busy, release := st.UseBusy(), tr.mark()
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
		case "wait", "aside":
			t.Errorf("after the release: %+v", ev)
		}
	}
	if !back.Free {
		t.Fatalf("the side queue gave the session back after a batch that found its row held: %+v", after)
	}
	if n := committedCalls(after, "held", true); n != 5 {
		t.Fatalf("%d calls committed by the side queue after the release; want 5: %+v", n, after)
	}
	if n := st.UseBusy(); n != busy {
		t.Fatalf("%d batches paid a lock wait after the release", n-busy)
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
