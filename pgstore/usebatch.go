package pgstore

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/store"
)

// Group commit of governed Use calls, PostgreSQL's counterpart of the
// SQLite writer's batches. Concurrent Use calls (without a request id) of
// one session in one process queue up; one of them, the leader, runs
// everything queued in one READ COMMITTED transaction: each call's
// conditional UPDATE (with its audit event) in queue order, all sent in one round trip (a
// pipeline), then the calls they refused, each decided on the row the
// transaction has locked (its reason, or its increment, exactly as
// alone), then one COMMIT. A hot session is then bounded by a commit per batch instead
// of a commit per call: callers on one row wait for its lock anyway, and
// now they wait together. Decisions stay exact: the row is locked by the
// transaction from its first UPDATE to its COMMIT, every call sees the
// counters its predecessors left, and nothing is acknowledged before the
// COMMIT. Calls of different sessions never share a transaction (a
// decision commits within one agent's rows). A lone call takes the
// one-statement path of old, without BEGIN and COMMIT round trips.

// maxUseBatch bounds the calls of one transaction.
const maxUseBatch = 64

// useCall is one queued Use.
type useCall struct {
	ctx   context.Context
	req   store.UseRequest
	tools []string
	state atomic.Int32 // reqQueued, reqTaken, reqAbandoned
	v     verdict
	err   error
	done  chan struct{}
}

const (
	callQueued int32 = iota
	callTaken
	callAbandoned
)

// useQueue is the queue of one session.
type useQueue struct {
	token chan struct{} // capacity 1: held by the leader
	mu    sync.Mutex
	calls []*useCall
	users int // guarded by useBatcher.mu: callers holding the queue
}

// useBatcher holds the queues of the sessions with calls in flight.
type useBatcher struct {
	mu     sync.Mutex
	queues map[string]*useQueue
	// shared counts the transactions that decided more than one call,
	// and sharedCalls those calls (for tests and benchmarks).
	shared, sharedCalls atomic.Int64
}

func (b *useBatcher) acquire(id string) *useQueue {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = make(map[string]*useQueue)
	}
	q := b.queues[id]
	if q == nil {
		q = &useQueue{token: make(chan struct{}, 1)}
		b.queues[id] = q
	}
	q.users++
	return q
}

func (b *useBatcher) release(id string, q *useQueue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q.users--; q.users == 0 {
		delete(b.queues, id)
	}
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
// calls of the same session (see above). A call whose context ends while
// it is queued is withdrawn (ctx.Err(), nothing consumed); once taken,
// its true outcome is returned.
func (g *Governance) useBatched(ctx context.Context, req store.UseRequest, tools []string) (verdict, error) {
	if err := ctx.Err(); err != nil {
		return verdict{}, err
	}
	// Queues are per tenant and session: a batch runs in the leader's
	// facet, so every call of it must be of the same tenant.
	key := g.tenant() + "\x00" + req.SessionID
	q := g.s.uses.acquire(key)
	defer g.s.uses.release(key, q)
	c := &useCall{ctx: ctx, req: req, tools: tools, done: make(chan struct{})}
	q.mu.Lock()
	q.calls = append(q.calls, c)
	q.mu.Unlock()
	for {
		select {
		case <-c.done:
			return c.v, c.err
		case <-ctx.Done():
			if c.state.CompareAndSwap(callQueued, callAbandoned) {
				return verdict{}, ctx.Err()
			}
			<-c.done
			return c.v, c.err
		case q.token <- struct{}{}:
			select {
			case <-c.done: // a previous leader answered us
			default:
				g.runUses(q.take())
			}
			<-q.token
		}
	}
}

// runUses decides a batch and answers every call of it.
func (g *Governance) runUses(batch []*useCall) {
	defer func() {
		for _, c := range batch {
			close(c.done)
		}
	}()
	if len(batch) == 1 {
		c := batch[0]
		c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
		return
	}
	// The transaction serves every caller: it does not end with the
	// leader's context.
	ctx := context.WithoutCancel(batch[0].ctx)
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		// Every call's conditional UPDATE, in one round trip.
		now := g.s.now()
		b := &pgx.Batch{}
		for _, c := range batch {
			query, args, err := g.useStatement(now, c.req, c.tools)
			if err != nil {
				return err
			}
			b.Queue(query, args...)
		}
		br := tx.SendBatch(ctx, b)
		var refused []*useCall
		for _, c := range batch {
			sess, err := scanGov(br.Query())
			switch {
			case err == nil:
				c.v = verdict{sess: sess}
			case errNoRows(err):
				refused = append(refused, c)
			default:
				br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		// The calls the UPDATE refused are decided after the others, on
		// the row the transaction holds locked: all the calls of a batch
		// were in flight together, so any order of them is one a caller
		// could have seen, and this one needs no savepoints.
		for _, c := range refused {
			var err error
			if c.v, err = g.decideLocked(ctx, tx, c.req, c.tools); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		g.s.uses.shared.Add(1)
		g.s.uses.sharedCalls.Add(int64(len(batch)))
		return
	}
	// Nothing was committed. Decide each call on its own, so that an
	// error reaches only the calls it belongs to.
	for _, c := range batch {
		c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
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
