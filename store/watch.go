package store

import (
	"context"
	"fmt"
	"iter"
)

// Feed is the change feed of a Store: it delivers what was committed to one
// stream after a given position, as it commits, to a consumer that may run
// in another process than the writers. Obtain it with Store.Feed.
//
// The streams are the messages of a conversation, its trace events, the
// events of one of its runs, the event log of an agent session, and the
// state of a governed session. Each method returns a sequence to range
// over:
//
//	feed := st.Feed().Messages(ctx, store.MessageFeed{ID: "session/42", From: next})
//	for batch, err := range feed {
//		if err != nil {
//			return err // see below: the sequence has ended
//		}
//		for _, m := range batch.Items {
//			show(m)
//		}
//		next = batch.Next // resume here after a restart or a lost connection
//	}
//
// Ranging blocks: the batches are delivered in the caller's goroutine, in
// order, each at most the request's Limit items, and the next one is read
// only when the loop body has returned, so a slow consumer holds one batch
// and nothing piles up in memory. Without new commits the loop waits. A
// commit made through the same Store wakes its feeds at once; commits of
// other stores and processes are noticed by the backend while at least one
// feed of the Store is open, and only then: on SQLite by polling PRAGMA
// data_version on a connection of its own (sqlstore.WithFeedPoll), on
// PostgreSQL by LISTEN/NOTIFY. A wake-up costs each open feed of the Store
// one read of its stream, whichever stream the commit touched. Breaking
// out of the loop ends the feed and releases everything it held; no
// goroutine is left behind.
//
// The sequence ends after one non-nil error: ctx's error when ctx is done;
// ErrNotFound (a *NotFoundError) when the watched object does not exist, or
// no longer does (a deleted conversation, run, agent session or governed
// session ends its feeds); ErrFeedReset (a *FeedResetError) when the
// positions held are no longer valid (see Position); ErrStoreClosed when
// the Store is closed; ErrInvalidInput for a bad request, before anything
// is read; or a storage error. A feed of a governed session also ends,
// without an error, once it has delivered the closed state (nothing changes
// after it).
//
// Ordered, no gaps, no duplicates: within a stream, rows are delivered in
// position order, each once. Resuming from the Next of the last batch
// delivered continues exactly after it, whatever was committed meanwhile.
type Feed interface {
	// Messages delivers the messages of a conversation with Seq >= From.Seq,
	// oldest first.
	Messages(ctx context.Context, req MessageFeed) iter.Seq2[Batch[Message], error]
	// Traces delivers the trace events of a conversation with Seq >=
	// From.Seq, oldest first.
	Traces(ctx context.Context, req TraceFeed) iter.Seq2[Batch[TraceEvent], error]
	// RunEvents delivers the events of one run of a conversation with Seq
	// >= From.Seq, in sequence order. The run must exist when the feed
	// starts.
	RunEvents(ctx context.Context, req RunEventFeed) iter.Seq2[Batch[RunEvent], error]
	// Events delivers the event log of an agent session with Seq >=
	// From.Seq (the first event has Seq 1; From.Seq 0 starts there too).
	Events(ctx context.Context, req EventFeed) iter.Seq2[Batch[AgentEvent], error]
	// GovernedSession delivers the state of a governed session each time
	// it changes (see GovernedFeed): each batch holds one Session.
	GovernedSession(ctx context.Context, req GovernedFeed) iter.Seq2[Batch[Session], error]
}

// Position is a place in one stream of a Feed: where a feed starts, and
// where it stands after a batch (Batch.Next).
//
// Positions are the stream's own numbers: a message's, a trace event's or a
// run event's Seq, an agent event's Seq, a governed session's FeedSeq. Some
// writes let the next append reuse a number already handed out:
// Conversations.PopMessage, Save (it renumbers the history from 0),
// TrimMessages that empties the history, SaveTraces, and PutRuns of an
// existing run; and a conversation, run or session deleted and created
// again under the same name starts its numbering anew. Every stream
// therefore has an epoch that such a write changes. A feed that sees the
// epoch of its stream change ends with a *FeedResetError instead of
// delivering rows under numbers the consumer already holds for other rows:
// reload the stream, then watch again from where the reload ended (From 0
// reloads through the feed itself). TrimMessages that keeps the newest
// messages changes no position and no epoch; a feed resumed from a position
// it removed starts at the oldest kept message (its Seq tells).
type Position struct {
	// Seq is the first position wanted; 0 starts at the beginning.
	Seq int64 `json:"seq"`
	// Epoch is the stream's epoch the position was taken in, as the Next
	// of a batch carries it. 0 means not known: the feed then trusts Seq,
	// and checks the epoch only from its first read on (a stream rewritten
	// between an earlier read of the consumer's and the start of the feed
	// goes unnoticed). Pass the Next of the last batch to resume exactly.
	Epoch int64 `json:"epoch,omitempty"`
}

// Batch is one delivery of a Feed: the next items of the stream, in order.
type Batch[T any] struct {
	// Items holds at least one item and at most the request's Limit.
	Items []T `json:"items"`
	// Next is the position after the last item: pass it as From to resume
	// without a gap or a duplicate.
	Next Position `json:"next"`
}

// MessageFeed asks for the messages of a conversation.
type MessageFeed struct {
	// ID is the conversation. Required.
	ID string
	// From is the first position wanted (see Position).
	From Position
	// Limit bounds the messages of one batch; 0 means DefaultPageSize, at
	// most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r MessageFeed) Normalize() (MessageFeed, error) {
	if err := ValidateID("id", r.ID); err != nil {
		return r, err
	}
	return r, normalizeFeed(&r.From, &r.Limit)
}

// TraceFeed asks for the trace events of a conversation.
type TraceFeed struct {
	// ID is the conversation. Required.
	ID string
	// From is the first position wanted (see Position).
	From Position
	// Limit bounds the events of one batch; 0 means DefaultPageSize, at
	// most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r TraceFeed) Normalize() (TraceFeed, error) {
	if err := ValidateID("id", r.ID); err != nil {
		return r, err
	}
	return r, normalizeFeed(&r.From, &r.Limit)
}

// RunEventFeed asks for the events of one run of a conversation.
type RunEventFeed struct {
	// ID is the conversation and RunID the run. Both required.
	ID    string
	RunID string
	// From is the first position wanted (see Position).
	From Position
	// Limit bounds the events of one batch; 0 means DefaultPageSize, at
	// most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r RunEventFeed) Normalize() (RunEventFeed, error) {
	if err := ValidateID("id", r.ID); err != nil {
		return r, err
	}
	if err := checkShort("run_id", r.RunID); err != nil {
		return r, err
	}
	return r, normalizeFeed(&r.From, &r.Limit)
}

// EventFeed asks for the event log of an agent session.
type EventFeed struct {
	// Key names the session. Required.
	Key SessionKey
	// From is the first position wanted (see Position).
	From Position
	// Limit bounds the events of one batch; 0 means DefaultPageSize, at
	// most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r EventFeed) Normalize() (EventFeed, error) {
	if err := r.Key.Validate(); err != nil {
		return r, err
	}
	return r, normalizeFeed(&r.From, &r.Limit)
}

// GovernedFeed asks for the state changes of a governed session.
//
// A governed session is state, not a log: the feed delivers the session as
// committed each time its calls made or its status change, and several
// changes committed between two reads arrive as one state (the calls made
// only grow, so the latest state says everything). The position of a state
// is Session.FeedSeq, which grows with every such change. The status is
// the stored one: an active session past its expiry reads as active until
// a Use marks it expired durably (Session.EffectiveStatus tells at a given
// time).
type GovernedFeed struct {
	// SessionID is the governed session. Required.
	SessionID string
	// From is the first position wanted: 0 delivers the current state at
	// once; the Next of a batch waits for the next change.
	From Position
}

// Normalize validates r.
func (r GovernedFeed) Normalize() (GovernedFeed, error) {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return r, err
	}
	limit := 1
	return r, normalizeFeed(&r.From, &limit)
}

// FeedSeq is the position of the session's state in its governed-session
// feed: the calls made, plus 1 once expired, plus 2 once closed. A session
// only ever changes by a Use (more calls), by expiring and by closing, so
// the number grows with every change of its state.
func (s *Session) FeedSeq() int64 {
	switch s.Status {
	case StatusExpired:
		return s.CallsMade + 1
	case StatusClosed:
		return s.CallsMade + 2
	}
	return s.CallsMade
}

func normalizeFeed(from *Position, limit *int) error {
	if from.Seq < 0 {
		return Invalid("from.seq", "must not be negative")
	}
	return normalizeLimit(limit)
}

// ErrFeedReset: the positions a feed consumer holds are no longer valid,
// because the stream was rewritten (a message popped or a history saved
// over, traces or a run replaced) or its owner deleted and created again.
// Reload the stream and watch again. It matches ErrConflict too.
var ErrFeedReset = fmt.Errorf("feed reset, reload and watch again: %w", ErrConflict)

// FeedResetError reports the end of a feed whose stream changed its epoch
// (see Position). Nothing was delivered from the new epoch.
type FeedResetError struct {
	// Stream is "messages", "traces", "run_events", "events" or
	// "governed_session".
	Stream string
	// ID is the conversation, the agent session id or the governed
	// session; RunID the run of a run-events feed.
	ID    string
	RunID string
	// Epoch is the epoch the consumer's position was taken in, Current
	// the stream's epoch now.
	Epoch   int64
	Current int64
}

// Error returns the constant text of ErrFeedReset; the details stay in
// the fields.
func (e *FeedResetError) Error() string { return ErrFeedReset.Error() }

// Unwrap makes errors.Is(err, ErrFeedReset) and errors.Is(err,
// ErrConflict) true.
func (e *FeedResetError) Unwrap() error { return ErrFeedReset }
