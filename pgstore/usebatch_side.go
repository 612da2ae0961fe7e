package pgstore

import (
	"context"
	"errors"
	"time"
)

// The side queue of a Use batch (see usebatch.go): the calls of one
// session whose row a batch found held by another transaction are taken
// out of the shared batches and decided here, in batches of that session
// alone, each waiting for that row only, until a batch finds the row free
// and the session rejoins the tenant's queue.

// useHeldFor is how long a session whose row its side queue's last batch
// found held by another transaction is remembered as held (useQueue.held,
// by the store's clock): its calls skip the shared batches and go to its
// side queue at once, where a batch finds the row free (and forgets it)
// or waits for it. A row remembered as held while it is free costs the
// session's next calls one transaction of their own; a row held while it
// is thought free costs a shared batch, every call of it, up to a 1 ms
// lock wait and a rerun. A row held elsewhere again and again (another
// process's batches on the same session, each holding it through a
// COMMIT) is held most of the time.
const useHeldFor = time.Second

// sideQueue holds the calls of one session whose row a batch found held
// by another transaction: its leader decides them in batches of that
// session alone, each waiting for that row only, until a batch finds the
// row free, then gives the session back to the tenant's queue.
type sideQueue struct {
	calls []*useCall // guarded by useQueue.mu
}

// asideLocked queues c on its session's side queue, starting its leader
// if it has none. q.mu is held.
func (g *Governance) asideLocked(q *useQueue, c *useCall) {
	id := c.req.SessionID
	c.out, c.after = false, false
	g.s.uses.apart.Add(1)
	g.s.uses.event(useEvent{Kind: "aside", Session: id, Calls: 1})
	sq := q.side[id]
	if sq == nil {
		if q.side == nil {
			q.side = make(map[string]*sideQueue)
		}
		sq = &sideQueue{}
		q.side[id] = sq
		// It takes the calls under q.mu, once the caller has queued them.
		go g.leadSide(q, id, sq)
	}
	sq.calls = append(sq.calls, c)
}

// leadSide decides the calls of a session's side queue, in batches of
// that session alone, until the queue is empty or a batch found the row
// free: then the session goes back to the tenant's queue, and the calls
// queued meanwhile are decided as a batch of that queue (runUses, with its
// turn).
func (g *Governance) leadSide(q *useQueue, id string, sq *sideQueue) {
	free := false
	for {
		q.mu.Lock()
		calls := sq.calls
		sq.calls = nil
		back := len(calls) == 0 || free
		if back {
			delete(q.side, id)
		}
		q.mu.Unlock()
		if back {
			g.s.uses.event(useEvent{Kind: "back", Session: id, Free: free})
		}
		switch {
		case len(calls) == 0:
			return
		case free:
			// As a leader of the tenant's queue, taking its turn, so
			// that these calls' batch locks the session's row after the
			// queue's batches, not beside them (which would find it
			// held, and bring the session back here).
			q.acquireTurn()
			held := true
			release := func() {
				if held {
					held = false
					q.releaseTurn()
				}
			}
			g.runUses(q, calls, release)
			release()
			return
		}
		free = g.sideBatch(q, id, calls)
	}
}

// sideBatch decides calls of session id in one transaction and answers
// them: its row locked first if free (free), else waited for by the
// calls' statements, in the same pass. The queue remembers whether the
// row was held (useHeldFor). If the transaction fails, each call is
// decided alone.
func (g *Governance) sideBatch(q *useQueue, id string, calls []*useCall) (free bool) {
	ctx := context.WithoutCancel(calls[0].ctx)
	var held bool
	err := g.s.retry(ctx, func(ctx context.Context) error {
		var err error
		held, err = g.batchTx(ctx, q, calls, true, func() {})
		return err
	})
	var unknown *commitUnknownError
	switch {
	case err == nil:
		g.s.uses.count(calls)
		g.s.uses.committed(calls, true, held)
		q.remember(id, held, g.s.now())
	case errors.As(err, &unknown):
		for _, c := range calls {
			c.v, c.err = verdict{}, err
		}
	default:
		for _, c := range calls {
			c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
		}
	}
	for _, c := range calls {
		c.answer()
	}
	return err == nil && !held
}

// heldLocked reports whether session id's row is remembered as found held
// at now, forgetting it once useHeldFor has passed. q.mu is held.
func (q *useQueue) heldLocked(id string, now time.Time) bool {
	at, ok := q.held[id]
	if ok && now.Sub(at) >= useHeldFor {
		delete(q.held, id)
		return false
	}
	return ok
}

// remember records whether session id's row was found held at now (or
// forgets it), and forgets the rows found held useHeldFor ago.
func (q *useQueue) remember(id string, held bool, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for other := range q.held {
		q.heldLocked(other, now)
	}
	switch {
	case !held:
		delete(q.held, id)
	case q.held == nil:
		q.held = map[string]time.Time{id: now}
	default:
		q.held[id] = now
	}
}

// decideApart decides each call alone, at once, each in its own
// goroutine, so that a call waiting for its session's row keeps no other
// call waiting, and answers it.
func (g *Governance) decideApart(calls []*useCall) {
	for _, c := range calls {
		go func() {
			c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
			c.answer()
		}()
	}
}

// useEvent is one step of the calls of side queues, told to
// useBatcher.trace (tests only).
type useEvent struct {
	// Kind is "aside" (calls of Session moved to its side queue),
	// "commit" (a batch committed) or "back" (Session's side queue gave it
	// back to the tenant's queue).
	Kind    string
	Session string
	// Calls is the calls an "aside" moved.
	Calls int
	// Sessions holds the session of each call a "commit" decided, Side
	// whether that batch was a side queue's, and Held whether a side
	// batch found the row held (and waited for it).
	Sessions []string
	Side     bool
	Held     bool
	// Free reports whether the last batch of a side queue that gave its
	// session "back" found the row free.
	Free bool
}

// event tells ev to the trace, if any.
func (b *useBatcher) event(ev useEvent) {
	if b.trace != nil {
		b.trace(ev)
	}
}

// committed tells the trace, if any, of a committed batch of calls.
func (b *useBatcher) committed(calls []*useCall, side, held bool) {
	if b.trace == nil || len(calls) == 0 {
		return
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.req.SessionID
	}
	b.trace(useEvent{Kind: "commit", Sessions: ids, Side: side, Held: held})
}
