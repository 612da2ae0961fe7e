package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"sync"
	"sync/atomic"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// How the change feed works
//
// A feed reads its stream by position, one page per read, in a read
// transaction that also reads the stream's epoch and tells whether its
// owner still exists (so a page and the epoch it belongs to are one
// snapshot). Between reads it waits for a wake-up. Correctness never
// depends on the wake-ups: a read always returns everything committed at
// and after the position; a wake-up only says when to read again.
//
// Wake-ups come from the feedHub: the backend's FeedWake, which runs while
// at least one feed of the Store is open (SQLite: PRAGMA data_version on a
// connection of its own; PostgreSQL: LISTEN), and FeedCommitted, which the
// backend calls after each of its own commits. A wake-up reaches every
// open feed through a one-slot channel, so wake-ups coalesce and a slow
// consumer never makes anything pile up.

// GovernedReader reads a governed session as stored (the status not
// adjusted for expiry) with its feed epoch; a missing session is
// *store.NotFoundError. Governance is the backends' own code, so each
// passes its reader to Feed.
type GovernedReader func(ctx context.Context, id string) (store.Session, int64, error)

// feedHub holds the open feeds of a Store and wakes them. Its zero value
// is ready to use.
type feedHub struct {
	open    atomic.Int64 // len(subs): FeedCommitted's fast path
	sources atomic.Int64 // FeedWake goroutines running, also ones stopping

	mu      sync.Mutex
	subs    map[*feedSub]struct{}
	closed  bool
	done    chan struct{} // closed by close
	stop    context.CancelFunc
	running sync.WaitGroup // FeedWake goroutines, also ones stopping
}

type feedSub struct{ wake chan struct{} }

func (h *feedHub) doneChan() chan struct{} {
	if h.done == nil {
		h.done = make(chan struct{})
	}
	return h.done
}

// subscribe registers a feed and starts the backend's FeedWake for the
// first one.
func (h *feedHub) subscribe(source func(ctx context.Context, wake func())) (*feedSub, <-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	done := h.doneChan()
	if h.closed {
		return nil, nil, store.ErrStoreClosed
	}
	if h.subs == nil {
		h.subs = make(map[*feedSub]struct{})
	}
	sub := &feedSub{wake: make(chan struct{}, 1)}
	h.subs[sub] = struct{}{}
	h.open.Store(int64(len(h.subs)))
	if source != nil && h.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		h.running.Add(1)
		h.sources.Add(1)
		go func() {
			defer h.running.Done()
			defer h.sources.Add(-1)
			source(ctx, h.wakeAll)
		}()
	}
	return sub, done, nil
}

// unsubscribe forgets a feed and stops FeedWake after the last one. It
// does not wait for FeedWake to return (close does).
func (h *feedHub) unsubscribe(sub *feedSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	h.open.Store(int64(len(h.subs)))
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// wakeAll wakes every open feed; wake-ups of one feed coalesce.
func (h *feedHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// close ends every feed with store.ErrStoreClosed and waits for FeedWake
// to return.
func (h *feedHub) close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.doneChan())
	}
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
	h.mu.Unlock()
	h.running.Wait()
}

// FeedCommitted tells the open feeds of this Store that the backend has
// committed a write: the backend calls it after each of its own commits
// (a call without a commit only costs the feeds a read). It is cheap when
// no feed is open.
func (s *Store) FeedCommitted() {
	if s.feeds.open.Load() == 0 {
		return
	}
	s.feeds.wakeAll()
}

// FeedState reports how many feeds of this Store are open, and how many of
// the backend's FeedWake loops run (one while a feed is open; a stopping
// one may linger briefly), for tests and diagnostics.
func (s *Store) FeedState() (open, waking int) {
	return int(s.feeds.open.Load()), int(s.feeds.sources.Load())
}

// pollFunc reads the next page of a feed's stream. more says that another
// page may follow at once; end that the stream can never change again
// (the sequence then ends after the page).
type pollFunc[T any] func(ctx context.Context) (b store.Batch[T], more, end bool, err error)

// runFeed is the loop of every feed: read a page, deliver it, wait for a
// wake-up when the stream has nothing more, until an error, the end of
// the stream or the consumer stops.
func runFeed[T any](ctx context.Context, s *Store, poll pollFunc[T], yield func(store.Batch[T], error) bool) {
	var zero store.Batch[T]
	if err := ctx.Err(); err != nil {
		yield(zero, err)
		return
	}
	sub, done, err := s.feeds.subscribe(s.cfg.FeedWake)
	if err != nil {
		yield(zero, err)
		return
	}
	defer s.feeds.unsubscribe(sub)
	for {
		b, more, end, err := poll(ctx)
		if err != nil {
			select {
			case <-done:
				// The store closed under the read: whatever the
				// connection said, that is why it failed.
				err = store.ErrStoreClosed
			default:
				if ctx.Err() != nil {
					err = ctx.Err() // the read was cut short by the caller
				}
			}
			yield(zero, err)
			return
		}
		if len(b.Items) > 0 && !yield(b, nil) {
			return
		}
		if end {
			return
		}
		if more {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			continue
		}
		select {
		case <-ctx.Done():
			yield(zero, ctx.Err())
			return
		case <-done:
			yield(zero, store.ErrStoreClosed)
			return
		case <-sub.wake:
		}
	}
}

// feed returns the sequence of a feed whose request failed validation
// (err) or that polls with newPoll (a fresh poller per range).
func feed[T any](ctx context.Context, s *Store, err error, newPoll func() pollFunc[T]) iter.Seq2[store.Batch[T], error] {
	return func(yield func(store.Batch[T], error) bool) {
		if err != nil {
			yield(store.Batch[T]{}, err)
			return
		}
		runFeed(ctx, s, newPoll(), yield)
	}
}

// epochCheck follows a stream's epoch: the first read adopts it unless
// the consumer's position carries one; any later change is a reset.
type epochCheck struct {
	epoch int64
	known bool
}

func newEpochCheck(p store.Position) epochCheck {
	return epochCheck{epoch: p.Epoch, known: p.Epoch != 0}
}

// see records the epoch read; it returns false when it differs from the
// one followed.
func (e *epochCheck) see(epoch int64) bool {
	if e.known && epoch != e.epoch {
		return false
	}
	e.epoch, e.known = epoch, true
	return true
}

// Feed returns the change feed over this Store's facets; gov reads the
// backend's governed sessions.
func (s *Store) Feed(gov GovernedReader) store.Feed { return &feedFacet{s: s, gov: gov} }

type feedFacet struct {
	s   *Store
	gov GovernedReader
}

var _ store.Feed = (*feedFacet)(nil)

const (
	feedMsgEpochSQL   = `SELECT messages_epoch FROM conversations WHERE id = ? AND tenant = ?`
	feedTraceEpochSQL = `SELECT traces_epoch FROM conversations WHERE id = ? AND tenant = ?`
	feedRunEpochSQL   = `SELECT events_epoch FROM conversation_runs WHERE session_id = ? AND run_id = ? AND tenant = ?`
	feedRunEventsSQL  = `SELECT run_id, seq, at_ms, event FROM conversation_run_events
		WHERE session_id = ? AND run_id = ? AND seq >= ? ORDER BY seq LIMIT ?`
	// feedRunEventsKeyedSQL is feedRunEventsSQL with the conversation's
	// data key (conv_crypt.go).
	feedRunEventsKeyedSQL = `SELECT ` + convKeyCol + `run_id, seq, at_ms, event FROM conversation_run_events
		WHERE session_id = ? AND run_id = ? AND seq >= ? ORDER BY seq LIMIT ?`
	feedSessionSQL = `SELECT pk, epoch, COALESCE(lineage_parent, 0) AS lineage_parent, fork_seq, data_key FROM agent_sessions
		WHERE app = ? AND user_id = ? AND session_id = ? AND retired = 0 AND tenant = ?`
)

// readEpoch reads a stream's epoch in r; found is false when the owner row
// is missing.
func readEpoch(r Tx, query string, args ...any) (epoch int64, found bool, err error) {
	err = r.Get(&epoch, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return epoch, err == nil, err
}

// Messages delivers a conversation's messages (see store.Feed).
func (f *feedFacet) Messages(ctx context.Context, req store.MessageFeed) iter.Seq2[store.Batch[store.Message], error] {
	req, err := req.Normalize()
	return feed(ctx, f.s, err, func() pollFunc[store.Message] {
		next, ep := req.From.Seq, newEpochCheck(req.From)
		return func(ctx context.Context) (store.Batch[store.Message], bool, bool, error) {
			var b store.Batch[store.Message]
			var rows []msgRow
			var epoch int64
			var found bool
			err := f.s.readTx(ctx, func(r Tx) error {
				var err error
				if epoch, found, err = readEpoch(r, feedMsgEpochSQL, req.ID, f.s.tenant); err != nil || !found {
					return err
				}
				// A fork's stream reads its lineage (conv_lineage.go).
				var l lineRow
				if err := r.Get(&l, convLineSQL, req.ID, f.s.tenant); err != nil {
					return err
				}
				rows, err = (&Conversations{s: f.s}).readView(r, l.view(req.ID), next, math.MaxInt64, req.Limit)
				return err
			})
			if err != nil {
				return b, false, false, err
			}
			if !found {
				return b, false, false, notFound(req.ID)
			}
			if !ep.see(epoch) {
				return b, false, false, &store.FeedResetError{Stream: "messages", ID: req.ID, Epoch: ep.epoch, Current: epoch}
			}
			if b.Items, err = decodeMessages(req.ID, rows); err != nil {
				return b, false, false, err
			}
			if n := len(b.Items); n > 0 {
				next = b.Items[n-1].Seq + 1
			}
			b.Next = store.Position{Seq: next, Epoch: ep.epoch}
			return b, len(rows) == req.Limit, false, nil
		}
	})
}

// Traces delivers a conversation's trace events (see store.Feed).
func (f *feedFacet) Traces(ctx context.Context, req store.TraceFeed) iter.Seq2[store.Batch[store.TraceEvent], error] {
	req, err := req.Normalize()
	return feed(ctx, f.s, err, func() pollFunc[store.TraceEvent] {
		next, ep := req.From.Seq, newEpochCheck(req.From)
		return func(ctx context.Context) (store.Batch[store.TraceEvent], bool, bool, error) {
			var b store.Batch[store.TraceEvent]
			var rows []traceRow
			var epoch int64
			var found bool
			err := f.s.readTx(ctx, func(r Tx) error {
				var err error
				if epoch, found, err = readEpoch(r, feedTraceEpochSQL, req.ID, f.s.tenant); err != nil || !found {
					return err
				}
				rows = nil
				return r.Select(&rows, traceRangeKeyedSQL, req.ID, req.ID, f.s.tenant, next, req.Limit)
			})
			if err != nil {
				return b, false, false, err
			}
			if !found {
				return b, false, false, notFound(req.ID)
			}
			if !ep.see(epoch) {
				return b, false, false, &store.FeedResetError{Stream: "traces", ID: req.ID, Epoch: ep.epoch, Current: epoch}
			}
			b.Items = make([]store.TraceEvent, len(rows))
			var dk *keys.DataKey // conv_crypt.go: the rows' conversation's
			if len(rows) > 0 {
				if dk, err = f.s.dataKey(ctx, rows[0].DataKey); err != nil {
					return b, false, false, err
				}
			}
			for i, r := range rows {
				doc, err := opened(dk, []byte(r.Event), adTrace, seqAD(r.Seq))
				if err != nil {
					return b, false, false, err
				}
				ev, err := rowcodec.DecodeTraceEvent(doc)
				if err != nil {
					return b, false, false, corrupt(req.ID, fmt.Sprintf("trace event %d", r.Seq), err)
				}
				ev.Seq, ev.CreatedAt = r.Seq, rowcodec.FromMillis(r.CreatedAtMS)
				b.Items[i] = ev
			}
			if n := len(rows); n > 0 {
				next = rows[n-1].Seq + 1
			}
			b.Next = store.Position{Seq: next, Epoch: ep.epoch}
			return b, len(rows) == req.Limit, false, nil
		}
	})
}

// RunEvents delivers the events of one run (see store.Feed).
func (f *feedFacet) RunEvents(ctx context.Context, req store.RunEventFeed) iter.Seq2[store.Batch[store.RunEvent], error] {
	req, err := req.Normalize()
	return feed(ctx, f.s, err, func() pollFunc[store.RunEvent] {
		next, ep := req.From.Seq, newEpochCheck(req.From)
		return func(ctx context.Context) (store.Batch[store.RunEvent], bool, bool, error) {
			var b store.Batch[store.RunEvent]
			var rows []runEventRow
			var epoch, convs int64
			var found bool
			err := f.s.readTx(ctx, func(r Tx) error {
				var err error
				if epoch, found, err = readEpoch(r, feedRunEpochSQL, req.ID, req.RunID, f.s.tenant); err != nil {
					return err
				}
				if !found {
					return r.Get(&convs, convExistsSQL, req.ID, f.s.tenant)
				}
				rows = nil
				return r.Select(&rows, feedRunEventsKeyedSQL, req.ID, req.ID, req.RunID, next, req.Limit)
			})
			if err != nil {
				return b, false, false, err
			}
			if !found {
				if convs == 0 {
					return b, false, false, notFound(req.ID)
				}
				return b, false, false, &store.NotFoundError{Resource: "run", ID: req.RunID}
			}
			if !ep.see(epoch) {
				return b, false, false, &store.FeedResetError{Stream: "run_events", ID: req.ID, RunID: req.RunID, Epoch: ep.epoch, Current: epoch}
			}
			b.Items = make([]store.RunEvent, len(rows))
			var dk *keys.DataKey // conv_crypt.go: the rows' conversation's
			if len(rows) > 0 {
				if dk, err = f.s.dataKey(ctx, rows[0].DataKey); err != nil {
					return b, false, false, err
				}
			}
			for i := range rows {
				if b.Items[i], err = rows[i].event(req.ID, dk); err != nil {
					return b, false, false, err
				}
			}
			if n := len(rows); n > 0 {
				next = rows[n-1].Seq + 1
			}
			b.Next = store.Position{Seq: next, Epoch: ep.epoch}
			return b, len(rows) == req.Limit, false, nil
		}
	})
}

// Events delivers an agent session's event log (see store.Feed).
func (f *feedFacet) Events(ctx context.Context, req store.EventFeed) iter.Seq2[store.Batch[store.AgentEvent], error] {
	req, err := req.Normalize()
	return feed(ctx, f.s, err, func() pollFunc[store.AgentEvent] {
		next, ep := req.From.Seq, newEpochCheck(req.From)
		k := req.Key
		return func(ctx context.Context) (store.Batch[store.AgentEvent], bool, bool, error) {
			var b store.Batch[store.AgentEvent]
			var head struct {
				PK      int64  `db:"pk"`
				Epoch   int64  `db:"epoch"`
				Parent  int64  `db:"lineage_parent"`
				ForkSeq int64  `db:"fork_seq"`
				DataKey string `db:"data_key"`
			}
			found := true
			err := f.s.readTx(ctx, func(r Tx) error {
				err := r.Get(&head, feedSessionSQL, k.App, k.User, k.Session, f.s.tenant)
				if errors.Is(err, sql.ErrNoRows) {
					found = false
					return nil
				}
				if err != nil {
					return err
				}
				found = true
				// A fork is a stream of its own: its history up to the fork
				// point is read along its lineage, then its own events.
				as := &AgentSessions{s: f.s}
				segs, err := as.lineage(r, asRow{PK: head.PK, Parent: head.Parent, ForkSeq: head.ForkSeq, DataKey: head.DataKey})
				if err != nil {
					return err
				}
				b.Items, err = as.readAscending(r, segs, next-1, req.Limit, "", false, nil)
				return err
			})
			if err != nil {
				return b, false, false, err
			}
			if !found {
				return b, false, false, sessionNotFound(k)
			}
			if !ep.see(head.Epoch) {
				return b, false, false, &store.FeedResetError{Stream: "events", ID: k.Session, Epoch: ep.epoch, Current: head.Epoch}
			}
			if n := len(b.Items); n > 0 {
				next = b.Items[n-1].Seq + 1
			}
			b.Next = store.Position{Seq: next, Epoch: ep.epoch}
			return b, len(b.Items) == req.Limit, false, nil
		}
	})
}

// GovernedSession delivers the state changes of a governed session (see
// store.GovernedFeed).
func (f *feedFacet) GovernedSession(ctx context.Context, req store.GovernedFeed) iter.Seq2[store.Batch[store.Session], error] {
	req, err := req.Normalize()
	if err == nil && f.gov == nil {
		err = errors.New("sqlcore: the backend has no governed-session reader")
	}
	return feed(ctx, f.s, err, func() pollFunc[store.Session] {
		next, ep := req.From.Seq, newEpochCheck(req.From)
		return func(ctx context.Context) (store.Batch[store.Session], bool, bool, error) {
			var b store.Batch[store.Session]
			sess, epoch, err := f.gov(ctx, req.SessionID)
			if err != nil {
				return b, false, false, err
			}
			if !ep.see(epoch) {
				return b, false, false, &store.FeedResetError{Stream: "governed_session", ID: req.SessionID, Epoch: ep.epoch, Current: epoch}
			}
			closed := sess.Status == store.StatusClosed
			if seq := sess.FeedSeq(); seq >= next {
				next = seq + 1
				b.Items = []store.Session{sess}
			}
			b.Next = store.Position{Seq: next, Epoch: ep.epoch}
			return b, false, closed, nil
		}
	})
}
