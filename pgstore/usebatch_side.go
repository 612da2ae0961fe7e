package pgstore

import (
	"context"
	"errors"
	"slices"
)

// The side queue of a Use batch (see usebatch.go): the calls of one
// session whose row a batch found held by another transaction are taken
// out of the shared batches and decided here, in batches of that session
// alone, each waiting for that row only, until a batch finds the row free
// and the session rejoins the tenant's queue.

// sideQueue holds the calls of one session whose row a batch found held
// by another transaction: its leader decides them in batches of that
// session alone, each waiting for that row only, until a batch finds the
// row free, then gives the session back to the tenant's queue.
type sideQueue struct {
	calls []*useCall // guarded by useQueue.mu
}

// toSide queues calls of one session on its side queue, starting its
// leader if it has none.
func (g *Governance) toSide(q *useQueue, calls []*useCall) {
	id := calls[0].req.SessionID
	for _, c := range calls {
		c.out, c.after = false, false
	}
	g.s.uses.event(useEvent{Kind: "aside", Session: id, Calls: len(calls)})
	q.mu.Lock()
	defer q.mu.Unlock()
	if sq := q.side[id]; sq != nil {
		sq.calls = append(sq.calls, calls...)
		return
	}
	if q.side == nil {
		q.side = make(map[string]*sideQueue)
	}
	sq := &sideQueue{calls: slices.Clone(calls)}
	q.side[id] = sq
	go g.leadSide(q, id, sq)
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
			q.token <- struct{}{}
			held := true
			release := func() {
				if held {
					held = false
					<-q.token
				}
			}
			g.runUses(q, calls, release)
			release()
			return
		}
		free = g.sideBatch(q, calls)
	}
}

// sideBatch decides calls of one session in one transaction and answers
// them: first as a batch that locks the row without waiting (true when it
// could), else locking it as it goes, waiting for that row only. If that
// fails, each call is decided alone.
func (g *Governance) sideBatch(q *useQueue, calls []*useCall) (free bool) {
	ctx := context.WithoutCancel(calls[0].ctx)
	err := g.s.retry(ctx, func(ctx context.Context) error { return g.batchTx(ctx, q, calls, false, func() {}) })
	if free = err == nil; errors.Is(err, errBusy) {
		g.s.uses.busy.Add(1)
		g.s.uses.event(useEvent{Kind: "wait", Session: calls[0].req.SessionID})
		for _, c := range calls {
			c.out = false
		}
		err = g.s.retry(ctx, func(ctx context.Context) error { return g.batchTx(ctx, q, calls, true, func() {}) })
	}
	var unknown *commitUnknownError
	switch {
	case err == nil:
		g.s.uses.count(calls)
		g.s.uses.committed(calls, true)
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
		close(c.done)
	}
	return free
}

// decideApart decides each call alone, at once, each in its own
// goroutine, so that a call waiting for its session's row keeps no other
// call waiting, and answers it.
func (g *Governance) decideApart(calls []*useCall) {
	for _, c := range calls {
		go func() {
			c.v, c.err = g.useAlone(c.ctx, c.req, c.tools)
			close(c.done)
		}()
	}
}

// useEvent is one step of the calls of side queues, told to
// useBatcher.trace (tests only).
type useEvent struct {
	// Kind is "aside" (calls of Session moved to its side queue), "wait"
	// (a batch of Session's side queue found its row held, and waits for
	// it), "commit" (a batch committed) or "back" (Session's side queue
	// gave it back to the tenant's queue).
	Kind    string
	Session string
	// Calls is the calls an "aside" moved.
	Calls int
	// Sessions holds the session of each call a "commit" decided, and Side
	// whether that batch was a side queue's.
	Sessions []string
	Side     bool
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
func (b *useBatcher) committed(calls []*useCall, side bool) {
	if b.trace == nil {
		return
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.req.SessionID
	}
	b.trace(useEvent{Kind: "commit", Sessions: ids, Side: side})
}
