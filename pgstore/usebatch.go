package pgstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

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
