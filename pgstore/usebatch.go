package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Group commit of governed Use calls, PostgreSQL's counterpart of the
// SQLite writer's batches. Concurrent Use calls (without a request id) of
// one tenant in one process queue up, whatever their session, once more
// than directUses of them are in flight (up to that, each is decided at
// once by itself, useAlone: a few callers gain nothing from sharing a
// COMMIT); a leader runs what is queued in one READ COMMITTED
// transaction: the rows of the calls' sessions locked first, in id order,
// skipping any another transaction holds (useLockManySQL); then, of the
// sessions with one call in the batch, the calls of one tool in one
// UPDATE over arrays (govUseManySQL, when there are two or more) and the
// others each in its conditional UPDATE (with their audit events); and
// the rows of the sessions with several calls read (useReadGroupsSQL);
// all sent with the BEGIN in one round trip (a pipeline). Then the calls
// the UPDATEs refused, each decided on its session's row as the
// transaction has locked it (its reason, or its increment, exactly as
// alone); then the calls of each session with several are decided in Go,
// in queue order, on its row as read, and the row and their audit events
// written in one statement (usebatch_group.go), those of all such
// sessions sent in one pipeline with the COMMIT. A batch without
// sessions of several calls sends its COMMIT in the pipeline of its
// statements (one round trip), and the calls its UPDATEs refused are
// decided after it, on their rows locked by one more transaction
// (decideLate). When, besides, every call of such a batch goes in the
// UPDATE over arrays and no row of it is held by a batch of the queue
// that commits (32 callers on sessions of their own), the batch goes
// without the lock-first step: that UPDATE locks its rows itself, having
// bounded the transaction's lock waits to 1 ms (govUseManyFirstSQL), and
// a row held elsewhere makes it give up; the batch then reruns with the
// step (errWary), which finds which rows are held, as below. The server's
// CPU and round trips of a transaction, and of a statement, are then paid
// per batch instead of per call (per session for the calls of one
// session), and callers on one row, which wait for its lock anyway, wait
// together.
//
// Decisions stay exact:
//   - Each call is decided on its own session's row, locked by the
//     transaction from the lock-first step (or, without it, from the
//     UPDATE that decides the call) to the COMMIT; every call sees
//     the counters its predecessors left, and nothing is acknowledged
//     before the COMMIT. The calls of one session are decided in their
//     queue order, each as it would be alone after the ones before it,
//     and its audit chain is the one those calls made one at a time would
//     leave.
//   - Rows are locked in one order, by session id in byte order (the
//     column's "C" collation), and the lock-first step waits for no row
//     (a side queue's batch, which waits, holds one row): two batches, in
//     two processes, cannot deadlock each other. A batch without the
//     step locks in its UPDATE's order, but waits at most 1 ms for a row:
//     two such batches that hold what the other wants both give up, and
//     rerun with the step. A
//     deadlock with another kind of transaction (Cleanup removes many
//     rows), or a serialization failure, reruns the whole batch
//     (Store.retry, bounded): nothing of it was acknowledged.
//   - No statement of a batch fails on a call's refusal: the conditional
//     UPDATE matches nothing, and the refusal is decided and audited on the
//     locked row (in the batch's transaction, or in one after it when the
//     COMMIT rode with the statements: each such call is its session's
//     only call in the batch, so it is decided as alone, just after the
//     batch). An error (a statement that fails, or a batch still
//     failing after its reruns) rolls the batch back, and each of its calls
//     is then decided alone, so that an error reaches only the call it
//     belongs to; a statement that fails before a COMMIT in its pipeline
//     makes the server skip that COMMIT. A COMMIT that was sent but not
//     answered (the connection failed, or the server's session ended in
//     it) may have committed: its calls get the error, never a second
//     decision.
//
// A call waits on no other session's row (DESIGN.md: a decision commits
// within one agent's rows, and a Use waits on no other session's rows of
// its own agent either). A row that a batch of the same queue holds while
// it commits (useQueue.committing) is locked by the next batch first,
// waiting for that COMMIT, a WAL flush (useLockAfterSQL; a transaction of
// another process already queued for that row would go first: the one
// wait of a batch on a lock held elsewhere, behind a commit of its own
// process). The other rows are locked without waiting. When the
// lock-first step still finds a row of the batch held by another
// transaction (another process's batch or Close, a Cleanup, a sessionctl
// operation, a call of this process decided at once), the calls of that
// session are taken out of the batch: the statements already sent for
// them give up after a short lock wait (useLockManySQL), the batch rolls
// back and reruns without them, and they go to that session's side queue
// (sideQueue), whose leader decides them, and the session's calls that
// come while it runs, in batches of that session alone, each locking its
// row first if free and otherwise waiting for it (that row only) in the
// same pass, until a batch finds the row free at once; then the session
// goes back to the tenant's queue. A session whose row the last batch of
// its side queue found held is remembered as held for a while
// (useHeldFor): its calls go to a side queue at once, without making a
// shared batch pay the lock wait and the rerun. A call taken out is
// never in a committed batch, so it is counted once. A batch
// commits calls of several sessions, and of several agents, in one
// transaction: a call of one may wait for the COMMIT of another's (the
// price of sharing the commit). A
// decision still reads no row but its own session's, so it commits
// within one agent's rows. A batch without sessions of several calls is
// one round trip: its statements and the COMMIT. A batch with such
// sessions is two: the statements, and the COMMIT with the writes of
// their rows before it in its pipeline (commitWrites: a write the server
// refuses makes it skip the COMMIT). When every row of a batch is
// held by the queue's batch that commits, no lock-first step runs: the
// rows are locked waiting for that COMMIT, by useLockAfterSQL, or by the
// read of their rows when all are of sessions with several calls (the
// steady state of one session's callers: BEGIN and that read, then the
// write and the COMMIT).
//
// One batch of a tenant runs its statements at a time (useLeaders), and
// gives its turn to the next one before its COMMIT, so that one batch's
// WAL flush overlaps the next batch's statements; more batches at once
// split the callers into smaller batches, which cost more CPU per call
// (measured: 16 calls per transaction with one, 6 to 10 with two, 32
// callers on 32 sessions). A leader that took a lone call keeps its turn
// through the COMMIT (releasing it made every caller a leader of one
// call: 1.07 calls per transaction at 32 callers), which is why few calls
// in flight are decided at once instead (directUses): 2 to 4 callers on
// different sessions would otherwise wait for each other's WAL flush.
// Calls with a request id do not queue: they decide on the locked row in
// a transaction of their own (decideOnce), as the replay record of one id
// must be read and written under that row's lock.

// maxUseBatch bounds the calls of one transaction.
const maxUseBatch = 64

// useLeaders bounds the batches of one tenant that run their statements
// at once in a process (their COMMITs are not counted).
const useLeaders = 1

// useCall is one queued Use.
type useCall struct {
	ctx   context.Context
	req   store.UseRequest
	tools []string
	state atomic.Int32 // callQueued, callTaken, callAbandoned
	out   bool         // taken out of its batch: its row is held elsewhere
	after bool         // its row is held by a batch of its queue that commits
	late  bool         // refused by its UPDATE in a batch whose COMMIT rode with it: decided after it
	v     verdict
	err   error
	// wary is set when a batch of the call that went without the
	// lock-first step found a row held elsewhere: the batches it is rerun
	// in take that step.
	wary bool
	// lead is set, under useQueue.mu, when a turn is passed to this
	// call's caller (passTurnLocked); its caller clears it when it takes
	// the turn.
	lead atomic.Bool
	// wake is sent to (never closed) when the call is answered (answer)
	// and when a turn is passed to its caller: its capacity, 2, holds
	// both, so neither send ever blocks (a turn goes only to a queued
	// call, and to none that holds one not yet taken).
	wake chan struct{}
}

// newUseCall returns a queued call.
func newUseCall(ctx context.Context, req store.UseRequest, tools []string) *useCall {
	return &useCall{ctx: ctx, req: req, tools: tools, wake: make(chan struct{}, 2)}
}

// answer wakes c's caller with its outcome (c.v, c.err, set before).
func (c *useCall) answer() { c.wake <- struct{}{} }

const (
	callQueued int32 = iota
	callTaken
	callAbandoned
)

// useQueue is the queue of one tenant.
type useQueue struct {
	mu    sync.Mutex
	calls []*useCall
	// Guarded by mu: the leaders' turns held (at most useLeaders; a
	// leader holds one until its COMMIT), and the goroutines without a
	// queued call waiting for one (acquireTurn), first served.
	turns   int
	waiting []chan struct{}
	users   int // guarded by useBatcher.mu: calls in flight
	pins    int // guarded by useBatcher.mu: holders keeping the queue (tests)
	// Guarded by mu: the sessions whose rows a batch of the queue holds
	// while it commits (closed once it has), and the sessions whose calls
	// are decided apart, on a queue of their own (sideQueue).
	committing map[string]chan struct{}
	side       map[string]*sideQueue
	// Guarded by mu: the sessions whose row the last batch of their side
	// queue found held by another transaction, and when (the store's
	// clock); see useHeldFor.
	held map[string]time.Time
}

// useBatcher holds the queues of the tenants with calls in flight.
type useBatcher struct {
	mu     sync.Mutex
	queues map[string]*useQueue
	// shared counts the transactions that decided more than one call,
	// sharedCalls those calls, mixed the transactions that decided calls
	// of more than one session, apart the calls taken out of a batch and
	// decided alone, and direct the calls decided without queueing (for
	// tests and benchmarks).
	shared, sharedCalls, mixed, apart, direct atomic.Int64
	// busy counts the batches rolled back and rerun because their
	// lock-first step found a row of theirs held by another transaction
	// (each paid a lock wait), wary those that went without the step
	// (govUseManyFirstSQL) and gave up on a held row, rerun with it; for
	// tests.
	busy, wary atomic.Int64
	// trace, when set (tests only), is told where the calls of side
	// queues go (useEvent).
	trace func(useEvent)
	// hook, when set (tests only), runs in each batch's transaction after
	// its decisions, before the COMMIT; its error is the transaction's.
	hook func(ctx context.Context, q querier) error
	// directHook, when set (tests only), runs before a call decided
	// without queueing is decided.
	directHook func(sessionID string)
}

// directUses is the number of calls of a tenant in flight in a process
// up to which a call is decided at once, by itself, without queueing
// (useAlone): a few callers gain nothing from sharing a COMMIT, and a
// lone call that kept the leader's turn through its COMMIT would make the
// others wait for its WAL flush before they even send their statements.
// Above it, calls queue and share transactions.
const directUses = 4

// acquire returns the queue of key, and the calls in flight with the
// caller's.
func (b *useBatcher) acquire(key string) (*useQueue, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = make(map[string]*useQueue)
	}
	q := b.queues[key]
	if q == nil {
		q = &useQueue{}
		b.queues[key] = q
	}
	q.users++
	return q, q.users
}

func (b *useBatcher) release(key string, q *useQueue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q.users--; q.users == 0 && q.pins == 0 {
		delete(b.queues, key)
	}
}

// acquireTurn waits for a leader's turn of q, for a goroutine without a
// queued call (a side queue's leader giving its session back; tests).
func (q *useQueue) acquireTurn() {
	q.mu.Lock()
	if q.turns < useLeaders {
		q.turns++
		q.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	q.waiting = append(q.waiting, ch)
	q.mu.Unlock()
	<-ch
}

// releaseTurn gives a leader's turn back (passTurnLocked).
func (q *useQueue) releaseTurn() {
	q.mu.Lock()
	q.passTurnLocked()
	q.mu.Unlock()
}

// passTurnLocked passes a turn that its leader gives back to the first
// goroutine waiting for one (acquireTurn), else to the caller of the
// first queued call, woken (it leads the next batch), else to no one:
// one goroutine is woken per turn, and a caller whose call is in a batch
// waits only for its answer. A queue with queued calls thus always has a
// leader running or woken. q.mu is held.
func (q *useQueue) passTurnLocked() {
	if len(q.waiting) > 0 {
		close(q.waiting[0])
		q.waiting = q.waiting[1:]
		return
	}
	for _, c := range q.calls {
		if c.state.Load() == callQueued && !c.lead.Load() {
			c.lead.Store(true)
			c.wake <- struct{}{}
			return
		}
	}
	q.turns--
}

// lead runs one batch of q with a turn its caller holds: what is queued,
// up to maxUseBatch calls, then gives the turn back (runUses gives it
// back before the batch's COMMIT).
func (g *Governance) lead(q *useQueue) {
	held := true
	release := func() {
		if held {
			held = false
			q.releaseTurn()
		}
	}
	g.runUses(q, q.take(), release)
	release()
}

// take moves up to maxUseBatch queued calls out of q.
func (q *useQueue) take() []*useCall {
	q.mu.Lock()
	defer q.mu.Unlock()
	var batch []*useCall
	i := 0
	for ; i < len(q.calls) && len(batch) < maxUseBatch; i++ {
		c := q.calls[i]
		q.calls[i] = nil
		if c.state.CompareAndSwap(callQueued, callTaken) {
			batch = append(batch, c)
		}
	}
	q.calls = q.calls[i:]
	if len(q.calls) == 0 {
		q.calls = nil
	}
	return batch
}

// useBatched decides a Use without a request id, with the concurrent
// calls of the tenant (see above). A call whose context ends while it is
// queued is withdrawn (ctx.Err(), nothing consumed); once taken, its true
// outcome is returned.
func (g *Governance) useBatched(ctx context.Context, req store.UseRequest, tools []string) (verdict, error) {
	if err := ctx.Err(); err != nil {
		return verdict{}, err
	}
	// Queues are per tenant: a batch runs in the leader's facet, so every
	// call of it must be of the same tenant.
	key := g.tenant()
	q, inFlight := g.s.uses.acquire(key)
	defer g.s.uses.release(key, q)
	if inFlight <= directUses {
		g.s.uses.direct.Add(1)
		if g.s.uses.directHook != nil {
			g.s.uses.directHook(req.SessionID)
		}
		return g.useAlone(ctx, req, tools)
	}
	c := newUseCall(ctx, req, tools)
	q.mu.Lock()
	q.calls = append(q.calls, c)
	lead := q.turns < useLeaders
	if lead {
		q.turns++
	}
	q.mu.Unlock()
	// The caller leads when it finds a turn free, or when a leader
	// passes it one (passTurnLocked); otherwise it waits for its answer,
	// or, while its call is queued, for its context's end.
	done := ctx.Done()
	for {
		if lead {
			lead = false
			g.lead(q)
		}
		if done == nil {
			return c.waitOrLead(g, q)
		}
		select {
		case <-c.wake:
			if c.lead.Swap(false) {
				lead = true
				continue
			}
			return c.v, c.err
		case <-done:
			// Withdrawn while queued (under q.mu, so that no turn is
			// passed to it meanwhile; one passed before goes on).
			q.mu.Lock()
			if c.state.CompareAndSwap(callQueued, callAbandoned) {
				if c.lead.Swap(false) {
					q.passTurnLocked()
				}
				q.mu.Unlock()
				return verdict{}, ctx.Err()
			}
			q.mu.Unlock()
			return c.waitOrLead(g, q)
		}
	}
}

// waitOrLead waits for c's answer, leading a batch whenever a turn is
// passed to its caller (c queued, or taken by another leader after).
func (c *useCall) waitOrLead(g *Governance, q *useQueue) (verdict, error) {
	for {
		<-c.wake
		if !c.lead.Swap(false) {
			return c.v, c.err
		}
		g.lead(q)
	}
}

// errBusy rolls back a batch whose lock-first step found rows of its
// sessions locked by other transactions; runUses reruns it without the
// calls of those sessions, which are decided apart.
var errBusy = errors.New("pgstore: use batch reruns without the calls of sessions locked elsewhere")

// errWary rolls back a batch that went without the lock-first step
// (govUseManyFirstSQL) and found a row of its sessions held by another
// transaction; runUses reruns it with that step, which finds which.
var errWary = errors.New("pgstore: use batch reruns with its rows locked first")

// useLockManySQL locks the rows of sessions $2 of tenant $1 that no other
// transaction holds, in id order, without waiting for any (SKIP LOCKED),
// and returns the ids of the others: the rows that exist but are locked by
// another transaction. (Ids of no row are in neither: their calls are
// refused on the locked row, which locks nothing.) EXCEPT reads both sides
// whole, so every row the first can lock is locked.
//
// It also bounds how long the statements after it in the transaction wait
// for a lock, to 1 ms (set_config(…, true) is SET LOCAL, and this
// statement waits for no row itself, so it can set it): the calls'
// statements touch only rows it locked, so they wait for none, unless it
// found a row held elsewhere: their statements on that row, sent in the
// same pipeline before its answer is read, then give up after that wait,
// and the batch reruns without them. Set here rather than by a statement
// of its own, it costs a batch no statement; set on the connection rather
// than the transaction, it would have to be reset before the connection
// served any other work. useLockAfterSQL, which waits for the COMMIT of a
// batch of the same queue, runs before it.
const useLockManySQL = useLockSideSQL + `, set_config('lock_timeout', '1ms', true)`

// useLockSideSQL is useLockManySQL for a side queue's batch: it sets no
// lock wait, so that the statements after it wait for the row it found
// held.
const useLockSideSQL = `WITH locked AS MATERIALIZED (
		SELECT id FROM governed_sessions
		WHERE tenant = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE SKIP LOCKED)
	SELECT ARRAY(SELECT id FROM governed_sessions WHERE tenant = $1 AND id = ANY($2::text[])
		EXCEPT SELECT id FROM locked)`

// useLockAfterSQL locks the rows of sessions $2 of tenant $1 that a batch
// of the same queue holds while it commits, in id order, waiting for that
// COMMIT (before useLockManySQL bounds the waits).
const useLockAfterSQL = `SELECT id FROM governed_sessions
	WHERE tenant = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`

// runUses decides a batch and answers every call of it. release gives
// the leader's turn back; it is called once the batch's statements have
// run, before its COMMIT, so that the next batch's statements run while
// this one's commit waits for its WAL flush (a lone call keeps it through
// its COMMIT). Calls whose session's row another transaction holds are
// taken out of the batch and decided apart (decideApart), each waiting
// only for its own row, after release.
func (g *Governance) runUses(q *useQueue, batch []*useCall, release func()) {
	if len(batch) == 0 {
		return
	}
	// The order rows are locked in (see above); a stable sort keeps the
	// calls of one session in their queue order.
	slices.SortStableFunc(batch, func(a, b *useCall) int { return strings.Compare(a.req.SessionID, b.req.SessionID) })
	// A session decided apart (q.side), or whose row its side queue's
	// last batch found held a moment ago (q.held, useHeldFor): its calls
	// join its side queue, and no batch pays a lock wait for them. A
	// session whose row a batch of the queue holds while it commits: its
	// row is locked waiting for that COMMIT (a WAL flush, not a lock held
	// elsewhere), before the others.
	kept := make([]*useCall, 0, len(batch))
	var now time.Time
	q.mu.Lock()
	for i, c := range batch {
		id := c.req.SessionID
		if q.side[id] == nil && len(q.held) > 0 && now.IsZero() {
			now = g.s.now()
		}
		if q.side[id] != nil || q.heldLocked(id, now) {
			g.asideLocked(q, c)
			continue
		}
		kept = append(kept, c)
		if i > 0 && batch[i-1].req.SessionID == c.req.SessionID {
			c.after = batch[i-1].after
			continue
		}
		c.after = q.committing[c.req.SessionID] != nil
	}
	q.mu.Unlock()
	if batch = kept; len(batch) == 0 {
		release()
		return
	}
	// The transaction serves every caller: it does not end with the
	// leader's context.
	ctx := context.WithoutCancel(batch[0].ctx)
	turn := release
	if len(batch) == 1 {
		turn = func() {}
	}
	var err error
	for {
		in := 0
		for _, c := range batch {
			if !c.out {
				in++
			}
		}
		if in == 0 {
			break
		}
		err = g.s.retry(ctx, func(ctx context.Context) error {
			_, err := g.batchTx(ctx, q, batch, false, turn)
			return err
		})
		// Each rerun has taken the calls of at least one more session
		// out, or follows the one try without the lock-first step (its
		// calls marked wary): the loop ends.
		if errors.Is(err, errWary) {
			g.s.uses.wary.Add(1)
		} else if errors.Is(err, errBusy) {
			g.s.uses.busy.Add(1)
		} else {
			break
		}
		err = nil
	}
	release()
	in := make([]*useCall, 0, len(batch))
	var out []*useCall
	for _, c := range batch {
		if c.out {
			out = append(out, c)
		} else {
			in = append(in, c)
		}
	}
	var unknown *commitUnknownError
	switch {
	case err == nil:
		g.s.uses.count(in)
		g.s.uses.committed(in, false, false)
		var late []*useCall
		for _, c := range in {
			if c.late {
				late = append(late, c)
			} else {
				c.answer()
			}
		}
		if late != nil {
			g.decideLate(ctx, late)
			for _, c := range late {
				c.answer()
			}
		}
	case errors.As(err, &unknown):
		// The COMMIT was sent and its answer lost: the batch may have
		// committed. Deciding its calls again could count them twice, so
		// each gets the error.
		for _, c := range in {
			c.v, c.err = verdict{}, err
			c.answer()
		}
	default:
		// Nothing was committed. Decide each call on its own, so that an
		// error reaches only the calls it belongs to.
		g.s.uses.apart.Add(int64(len(batch)))
		g.decideApart(batch)
		return
	}
	// The calls taken out: to their sessions' side queues.
	if len(out) > 0 {
		q.mu.Lock()
		for _, c := range out {
			g.asideLocked(q, c)
		}
		q.mu.Unlock()
	}
}

// decideLate decides the calls that the UPDATEs of a committed batch
// refused, when its COMMIT rode in its statements' pipeline (decideBatch):
// each on its session's row locked by one transaction for them all, in
// id order (its reason, or its increment if the row changed meanwhile,
// exactly as alone; each was its session's only call in the batch). When
// that transaction fails, each call is decided alone, unless its COMMIT
// may have committed (an error the server did not answer, or its session
// ended): then each gets the error, never a second decision.
func (g *Governance) decideLate(ctx context.Context, late []*useCall) {
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		for _, c := range late {
			var err error
			if c.v, err = g.decideLocked(ctx, tx, c.req, c.tools); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	var unknown *commitUnknownError
	if errors.As(commitErr(err), &unknown) {
		for _, c := range late {
			c.v, c.err = verdict{}, err
		}
		return
	}
	for _, c := range late {
		c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
	}
}

// count adds a committed batch's calls to the counters.
func (b *useBatcher) count(in []*useCall) {
	if len(in) > 1 {
		b.shared.Add(1)
		b.sharedCalls.Add(int64(len(in)))
		if in[0].req.SessionID != in[len(in)-1].req.SessionID {
			b.mixed.Add(1)
		}
	}
}

// commitUnknownError is a batch whose COMMIT was sent but not answered
// (the connection failed): whether it committed is unknown.
type commitUnknownError struct{ err error }

func (e *commitUnknownError) Error() string {
	return "pgstore: commit outcome unknown: " + e.err.Error()
}
func (e *commitUnknownError) Unwrap() error { return e.err }

// useBeginSQL opens a batch's transaction, as the first statement of its
// pipeline.
const useBeginSQL = `BEGIN ISOLATION LEVEL READ COMMITTED`

// batchTx decides the calls of batch not taken out in one transaction on
// a connection of its own: BEGIN rides in the pipeline of the calls'
// statements, and so does the COMMIT when no session has several calls
// (decideBatch: one round trip); otherwise the rows of the sessions with
// several calls are written in the COMMIT's pipeline (two round trips,
// when no call is refused). Nothing is left open on the connection
// whatever fails. An error before a pipeline with the COMMIT is sent
// means nothing was committed, as does an error the server reports for a
// statement before the COMMIT in it (the server skips the COMMIT); a
// pipeline sent without an answer to its COMMIT is a commitUnknownError.
// side is a side queue's batch (see decideBatch); held reports that its
// lock-first step found the row held. release is called once the
// statements have run, before the COMMIT's answer (handover).
func (g *Governance) batchTx(ctx context.Context, q *useQueue, batch []*useCall, side bool, release func()) (held bool, err error) {
	conn, err := g.s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// A connection left inside a transaction (a failed ROLLBACK) is
	// destroyed by Release, never reused.
	defer conn.Release()
	rollback := func() {
		if conn.Conn().PgConn().TxStatus() != 'I' {
			conn.Exec(ctx, `ROLLBACK`)
		}
	}
	// handover runs once the batch's statements have run, before the
	// answer to its COMMIT: the next batches of the queue wait for this
	// COMMIT before locking these rows, rather than finding them held,
	// and the leader's turn is given back.
	var done chan struct{}
	handover := func() {
		if done != nil {
			return
		}
		done = make(chan struct{})
		if q != nil {
			q.mu.Lock()
			if q.committing == nil {
				q.committing = make(map[string]chan struct{})
			}
			for i, c := range batch {
				if !c.out && (i == 0 || batch[i-1].req.SessionID != c.req.SessionID) {
					q.committing[c.req.SessionID] = done
				}
			}
			q.mu.Unlock()
		}
		release()
	}
	defer func() {
		if done == nil {
			return
		}
		if q != nil {
			q.mu.Lock()
			for id, ch := range q.committing {
				if ch == done {
					delete(q.committing, id)
				}
			}
			q.mu.Unlock()
		}
		close(done)
	}()
	held, writes, committed, err := g.decideBatch(ctx, conn, batch, side, handover)
	if err != nil {
		rollback()
		return held, err
	}
	if committed {
		return held, nil
	}
	handover()
	var tag pgconn.CommandTag
	var refused bool
	if writes == nil {
		tag, err = conn.Exec(ctx, `COMMIT`)
	} else {
		tag, refused, err = commitWrites(ctx, conn, writes)
	}
	switch {
	case err != nil && refused:
		// The server answered a write with an error, and skipped the
		// COMMIT after it (or its session ended there): nothing
		// committed.
		rollback()
		return held, err
	case err != nil:
		var unknown *commitUnknownError
		if err = commitErr(err); !errors.As(err, &unknown) {
			rollback()
		}
		return held, err
	}
	return held, committedTag(tag)
}

// committedTag is the error of a COMMIT the server answered with tag:
// none when it committed; a transaction that had failed is rolled back
// by its COMMIT, whose tag then says ROLLBACK.
func committedTag(tag pgconn.CommandTag) error {
	if tag.String() != "COMMIT" {
		return fmt.Errorf("pgstore: use batch rolled back at commit (%s)", tag)
	}
	return nil
}

// commitErr is the error of a COMMIT that failed: the server's refusal
// (rolled back), or, when no answer came or the server's session ended in
// it (a COMMIT may have committed locally before such an end), a
// commitUnknownError.
func commitErr(err error) error {
	if pgCode(err) == "" || sessionEnded(err) {
		return &commitUnknownError{err: err}
	}
	return err
}

// pipelineErr is the error met reading the answer to a statement of a
// pipeline that holds the COMMIT after it, once the pipeline is closed:
// an error the server answered makes it skip the COMMIT (nothing
// committed), as does any error that leaves the connection in a failed
// transaction; otherwise the COMMIT may have run, and its outcome is
// unknown.
func pipelineErr(conn *pgxpool.Conn, err error) error {
	if pgCode(err) != "" {
		return err
	}
	if st := conn.Conn().PgConn().TxStatus(); st == 'E' || st == 'T' {
		return err
	}
	return &commitUnknownError{err: err}
}

// commitWrites sends the rows a batch writes (useWriteGroupSQL, one
// statement per session) and the COMMIT in one pipeline, and returns the
// COMMIT's tag, or the first error; refused reports an error the server
// answered to a write. The pipeline ends in one Sync, so a write the
// server refuses makes it skip every message up to that Sync, the COMMIT
// too: the transaction is then left failed, never committed. A write
// that finds no row fails in the server (useWriteGroupSQL), for the same
// reason: its COMMIT must not run. An error without the server's answer
// (the connection failed) is the COMMIT's: it was sent.
func commitWrites(ctx context.Context, conn *pgxpool.Conn, writes *pgx.Batch) (tag pgconn.CommandTag, refused bool, err error) {
	n := writes.Len()
	writes.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, writes)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			if pgCode(err) == codeDivisionByZero {
				err = fmt.Errorf("%w: %w", errNoGroupRow, err)
			}
			return pgconn.CommandTag{}, pgCode(err) != "", err
		}
	}
	tag, err = br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, false, err
}

// sessionEnded reports whether err is the server ending its session (an
// error of severity FATAL or PANIC: a terminated backend, a shutdown).
func sessionEnded(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	sev := pe.SeverityUnlocalized
	if sev == "" {
		sev = pe.Severity
	}
	return sev == "FATAL" || sev == "PANIC"
}

// decideBatch opens a transaction on conn and decides the calls of batch
// not taken out (sorted by session id) in it, in one round trip with the
// BEGIN: the rows of their sessions locked first, in id order, skipping
// those other transactions hold; of the sessions with one call, the calls
// of one tool in one statement for them all (govUseManySQL, when there
// are two or more), the other calls each in its conditional UPDATE; the
// rows of the sessions with several calls read; then the calls the
// UPDATEs refused, on their locked rows; then the calls of the sessions
// with several decided on their rows (decideGroup). It returns the writes
// of those rows, one statement per session (nil: none), which the caller
// sends in the COMMIT's pipeline (commitWrites). When the lock-first step
// found rows held elsewhere, and a statement gave up on them, it marks
// their calls out and returns errBusy. The caller commits, or rolls back
// on error.
//
// A batch without sessions of several calls, of a tenant's queue, sends
// the COMMIT in the statements' pipeline, with a Flush message before it
// (pipeline_flush.go: the server answers the statements before it runs
// the COMMIT), calls handover once their answers are read, and returns
// committed once the COMMIT's answer is;
// the calls its UPDATEs refused are marked late, to be decided after it
// (decideLate). Such a batch whose calls all go in the statement for
// many, none of whose rows a batch of the queue holds, and none of whose
// calls is wary, sends no lock-first step (govUseManyFirstSQL); when that
// statement gives up on a row held elsewhere, it marks its calls wary
// and returns errWary. An error the server did not answer, in that pipeline, is
// a commitUnknownError unless the connection is left in a failed
// transaction (pipelineErr).
//
// A side queue's batch (side: the calls of one session) sets no lock
// wait: when its lock-first step finds the row held (held), its
// statements wait for it, in the same pass, and it returns no errBusy.
func (g *Governance) decideBatch(ctx context.Context, conn *pgxpool.Conn, batch []*useCall, side bool, handover func()) (held bool, writes *pgx.Batch, committed bool, err error) {
	now := g.s.now()
	nowMS, nowUS := rowcodec.ToMillis(now), rowcodec.ToMicros(now)
	// The calls of sessions with two or more calls in the batch, decided
	// together on their rows (groups, usebatch_group.go); of the others,
	// the calls of the statement for many, and the rest.
	in, many := make([]*useCall, 0, len(batch)), make([]*useCall, 0, len(batch))
	var single []*useCall
	var groups [][]*useCall
	ids := make([]string, 0, len(batch))
	var after, grouped []string
	for i := 0; i < len(batch); {
		// The calls of one session not taken out: a run of in.
		start, j := len(in), i
		for ; j < len(batch) && batch[j].req.SessionID == batch[i].req.SessionID; j++ {
			if !batch[j].out {
				in = append(in, batch[j])
			}
		}
		i = j
		run := in[start:len(in):len(in)]
		if len(run) == 0 {
			continue
		}
		id := run[0].req.SessionID
		if run[0].after && !side {
			after = append(after, id)
		} else {
			ids = append(ids, id)
		}
		switch {
		case len(run) > 1:
			groups = append(groups, run)
			grouped = append(grouped, id)
		case len(run[0].tools) == 1 && !g.s.cfg.auditOff:
			many = append(many, run[0])
		default:
			single = append(single, run[0])
		}
	}
	if len(many) < 2 {
		single = append(single, many...)
		many = nil
	}
	// The lock-first step, when a row of the batch is not held by a
	// batch of the queue that commits (ids; a side batch's one row is
	// always there). When every row is, and each is of a session with
	// several calls (one session's callers, batch after batch), the read
	// of their rows locks them, in id order, waiting for that COMMIT as
	// useLockAfterSQL would: no lock-first step bounds its wait.
	lockFirst := len(ids) > 0
	lockAfter := len(after) > 0 && (lockFirst || len(many)+len(single) > 0)
	// A batch without sessions of several calls (nothing to write after
	// its statements) sends its COMMIT in their pipeline: one round trip.
	// The server skips the COMMIT when a statement before it fails. The
	// calls its UPDATEs refuse are then decided after it (late, see
	// decideLate).
	early := !side && groups == nil && g.s.uses.hook == nil
	wary := false
	for _, c := range in {
		c.late = false
		wary = wary || c.wary
	}
	// Such a batch whose calls all go in the statement for many, and
	// whose rows no batch of the queue holds, goes without the lock-first
	// step: that statement locks its rows itself, waiting at most 1 ms
	// for any (govUseManyFirstSQL). A row held elsewhere then fails it,
	// and the batch reruns with the step (wary), which finds which rows.
	// The step is a statement of its own that writes a lock to every row
	// before the UPDATE writes it again: 32 callers on sessions of their
	// own cost the server 71-76 µs per call with it, 59-71 without (four
	// alternated pairs).
	first := early && !wary && many != nil && single == nil && len(after) == 0
	if first {
		lockFirst = false
	}
	b := &pgx.Batch{}
	b.Queue(useBeginSQL)
	tenant := g.tenant()
	if tenant != "" {
		b.Queue(govTenantSQL, tenant)
	}
	if lockAfter {
		b.Queue(useLockAfterSQL, tenant, after)
	}
	setup := b.Len()
	switch {
	case side:
		b.Queue(useLockSideSQL, tenant, ids)
	case lockFirst:
		b.Queue(useLockManySQL, tenant, ids)
	}
	if groups != nil {
		b.Queue(useReadGroupsSQL, tenant, grouped)
	}
	if many != nil {
		sids, agents, tools := make([]string, len(many)), make([]string, len(many)), make([]string, len(many))
		payloads, details := make([][]byte, len(many)), make([]string, len(many))
		var audits useAudits
		for i, c := range many {
			_, payload, detail, err := audits.payload(nowUS, "", c.req.SessionID, c.tools)
			if err != nil {
				return false, nil, false, err
			}
			sids[i], agents[i], tools[i], payloads[i], details[i] = c.req.SessionID, c.req.AgentID, c.tools[0], payload, detail
		}
		query := govUseManySQL
		if first {
			query = govUseManyFirstSQL
		}
		b.Queue(query, nowMS, sids, agents, tools, payloads, tenant, details, nowUS)
	}
	for _, c := range single {
		query, args, err := g.useStatement(now, c.req, c.tools)
		if err != nil {
			return false, nil, false, err
		}
		b.Queue(query, args...)
	}
	if early {
		b.Queue(`COMMIT`)
	}
	// With the COMMIT in the pipeline, the statements' answers are asked
	// for before it (pipeline_flush.go), so that handover runs while the
	// COMMIT waits for its WAL flush.
	var br pipelineResults
	if early && g.s.flush.on {
		fb, err := g.s.flush.sendFlushed(ctx, conn.Conn(), b)
		if err != nil { // nothing sent
			return false, nil, false, err
		}
		br = fb
	} else {
		br = conn.SendBatch(ctx, b)
	}
	var busy []string
	// fail closes the pipeline after err. With the COMMIT in it, an
	// error the server did not answer leaves its outcome unknown
	// (pipelineErr). When the lock-first step found rows held, the
	// statements on them gave up after the lock wait: the batch reruns
	// without their calls (errBusy).
	fail := func(err error) error {
		br.Close()
		if early {
			err = pipelineErr(conn, err)
		}
		var unknown *commitUnknownError
		if first && pgCode(err) == codeLockNotAvailable {
			// A row held elsewhere, found without the lock-first step:
			// rerun with it.
			for _, c := range in {
				c.wary = true
			}
			return errWary
		}
		if len(busy) > 0 && !side && !errors.As(err, &unknown) {
			for _, c := range in {
				if slices.Contains(busy, c.req.SessionID) {
					c.out = true
				}
			}
			return errBusy
		}
		return err
	}
	for range setup { // BEGIN, the tenant, the rows after a COMMIT
		if _, err := br.Exec(); err != nil {
			return false, nil, false, fail(err)
		}
	}
	switch {
	case side:
		err = br.QueryRow().Scan(&busy)
	case lockFirst:
		err = br.QueryRow().Scan(&busy, nil)
	}
	if err != nil {
		busy = nil
		return false, nil, false, fail(err)
	}
	// A side batch's statements wait for the row (the server answers
	// once they have run: it flushes its answers at the pipeline's end).
	// Other statements on a held row give up after the lock wait, and
	// their error is the rerun's cause, errBusy; without the COMMIT in
	// the pipeline, the batch need not read their answers. (With it, the
	// answers tell whether it committed: a row held by a lock that its
	// UPDATE does not wait for, a foreign key's, lets it commit.)
	if held = len(busy) > 0; held && !side && !early {
		return held, nil, false, fail(errBusy)
	}
	var groupRows map[string]*govHeadRow
	if groups != nil {
		if groupRows, err = readGroups(br.Query()); err != nil {
			return held, nil, false, fail(err)
		}
	}
	var refused []*useCall
	if many != nil {
		rows, err := br.Query()
		if err != nil {
			return held, nil, false, fail(err)
		}
		granted, err := pgx.AppendRows(make([]govRow, 0, len(many)), rows, govRowByPos)
		if err != nil {
			return held, nil, false, fail(err)
		}
		// Rows come back in no set order; a call without one was refused.
		byID := make(map[string]store.Session, len(granted))
		for i := range granted {
			byID[granted[i].ID] = granted[i].session()
		}
		for _, c := range many {
			if sess, ok := byID[c.req.SessionID]; ok {
				c.v = verdict{sess: sess}
			} else {
				refused = append(refused, c)
			}
		}
	}
	for _, c := range single {
		sess, err := scanGov(br.Query())
		switch {
		case err == nil:
			c.v = verdict{sess: sess}
		case errNoRows(err):
			refused = append(refused, c)
		default:
			return held, nil, false, fail(err)
		}
	}
	if early {
		// The statements have run, and the server commits.
		handover()
		tag, err := br.Exec()
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return held, nil, false, commitErr(err)
		}
		if err := committedTag(tag); err != nil {
			return held, nil, false, err
		}
		for _, c := range refused {
			c.late = true
		}
		return held, nil, true, nil
	}
	if err := br.Close(); err != nil {
		return held, nil, false, err
	}
	// The calls the UPDATEs refused are decided on the row the
	// transaction has locked: each is its session's only call in the
	// batch, so no other call of the batch saw that row.
	for _, c := range refused {
		var err error
		if c.v, err = g.decideLocked(ctx, conn, c.req, c.tools); err != nil {
			return held, nil, false, err
		}
	}
	// The calls of a session with several in the batch: decided in Go on
	// the row read under the lock, in queue order, and written with their
	// audit events in one statement per session, sent with the COMMIT
	// (batchTx).
	for _, run := range groups {
		w, err := g.decideGroup(now, groupRows[run[0].req.SessionID], run)
		if err != nil {
			return held, nil, false, err
		}
		if w != nil {
			if writes == nil {
				writes = &pgx.Batch{}
			}
			writes.Queue(useWriteGroupSQL, w.args(tenant)...)
		}
	}
	if g.s.uses.hook != nil {
		return held, writes, false, g.s.uses.hook(ctx, conn)
	}
	return held, writes, false, nil
}

// useAlone decides one call by itself: one conditional UPDATE … RETURNING
// (one round trip, its own transaction), and when it matches nothing, a
// transaction that locks the row and decides on it.
func (g *Governance) useAlone(ctx context.Context, req store.UseRequest, tools []string) (verdict, error) {
	var sess store.Session
	var err error
	if g.tenant() == "" {
		err = g.s.retry(ctx, func(ctx context.Context) error {
			// The update and its audit event, in one statement.
			query, args, err := g.useStatement(g.s.now(), req, tools)
			if err != nil {
				return err
			}
			sess, err = scanGov(g.s.pool.Query(ctx, query, args...))
			return err
		})
	} else {
		// A tenant's: the tenant's setting and the statement in one
		// pipelined batch, which runs as one implicit transaction (one
		// round trip, as the default tenant's), so that the row-level
		// security of a tenant role lets the statement's rows by.
		err = g.s.retry(ctx, func(ctx context.Context) error {
			query, args, err := g.useStatement(g.s.now(), req, tools)
			if err != nil {
				return err
			}
			b := &pgx.Batch{}
			b.Queue(govTenantSQL, g.tenant())
			b.Queue(query, args...)
			br := g.s.pool.SendBatch(ctx, b)
			if _, err := br.Exec(); err != nil {
				br.Close()
				return err
			}
			sess, err = scanGov(br.Query())
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			return err
		})
	}
	if err == nil {
		return verdict{sess: sess}, nil
	}
	if !errNoRows(err) {
		return verdict{}, err
	}
	var v verdict
	err = g.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		v, err = g.decideLocked(ctx, tx, req, tools)
		return err
	})
	return v, err
}

// useAudits gives the payloads and details of the audit events of allowed
// uses (sqlcore.AuditPayload of sqlcore.UseAudit), for the calls of one
// batch: a call's detail depends only on its tools, and is encoded (as
// JSON) once for the calls of one tool in a row, rather than once per
// call; the payload, which holds the session's id, is built per call from
// the same record.
type useAudits struct {
	tool, detail string
	ok           bool
}

// payload returns the record of the event of an allowed use of tools by
// agent (which the payload does not hold) on session id, at atUS, with
// its payload and detail.
func (m *useAudits) payload(atUS int64, agent, id string, tools []string) (rec sqlcore.AuditRecord, payload []byte, detail string, err error) {
	rec = sqlcore.UseAudit(agent, id, "", tools)
	if len(tools) == 1 && m.ok && tools[0] == m.tool {
		return rec, rowcodec.AuditPayload(atUS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, m.detail), m.detail, nil
	}
	payload, detail, err = sqlcore.AuditPayload(atUS, rec)
	if err == nil && len(tools) == 1 {
		m.tool, m.detail, m.ok = tools[0], detail, true
	}
	return rec, payload, detail, err
}
