package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunFeed runs the change-feed part of the suite: delivery of commits made
// through the same store, another store and another OS process; resuming
// from a position without gaps or duplicates; rewrites and deletions that
// end a feed; cancellation; a slow consumer; bad input.
func RunFeed(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"MessagesSameStore", testFeedSameStore},
		{"MessagesOtherStore", testFeedOtherStore},
		{"OtherProcessWrites", testFeedOtherProcess},
		{"OtherProcessWatches", testFeedOtherProcessWatches},
		{"ResumeWithoutGapsOrDuplicates", testFeedResume},
		{"ResumeAfterRewriteIsReset", testFeedResumeReset},
		{"RewritesEndTheFeed", testFeedRewrites},
		{"TrimKeepingNewestIsNoReset", testFeedTrimKeep},
		{"TracesAndRunEvents", testFeedTracesRuns},
		{"AgentSessionEvents", testFeedEvents},
		{"GovernedSessionStates", testFeedGoverned},
		{"GovernedSessionExpiry", testFeedGovernedExpiry},
		{"DeletedEndsWithNotFound", testFeedDeleted},
		{"MissingIsNotFound", testFeedMissing},
		{"Cancellation", testFeedCancel},
		{"BreakStopsTheFeed", testFeedBreak},
		{"StoreClosedEndsTheFeed", testFeedStoreClosed},
		{"StoreClosedWhileReading", testFeedClosedWhileReading},
		{"SlowConsumerGetsBoundedPages", testFeedSlowConsumer},
		{"ConcurrentWritersExactlyOnce", testFeedConcurrent},
		{"InvalidInput", testFeedInvalid},
		{"OpaqueResetError", testFeedOpaqueReset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func init() {
	registerRole("feed-writer", feedWriterRole)
	registerRole("feed-echo", feedEchoRole)
}

// watcher runs a feed in a goroutine and hands its batches over one by
// one, unbuffered: the feed's loop body blocks until the test takes the
// batch, as a slow consumer would.
type watcher[T any] struct {
	t       testing.TB
	batches chan store.Batch[T]
	end     chan error // the sequence's final error (nil: ended without)
	cancel  context.CancelFunc
	done    chan struct{}
	pending []T // items of a batch taken but not yet consumed by take
	last    store.Position
}

// watch starts the feed open(ctx) with a context the watcher cancels at
// test end.
func watch[T any](t testing.TB, open func(ctx context.Context) iter.Seq2[store.Batch[T], error]) *watcher[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher[T]{t: t, batches: make(chan store.Batch[T]), end: make(chan error, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for b, err := range open(ctx) {
			if err != nil {
				w.end <- err
				return
			}
			select {
			case w.batches <- b:
			case <-ctx.Done():
				// The consumer is gone; keep draining until the feed
				// reports the cancellation.
			}
		}
		w.end <- nil
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

// batch returns the next batch, failing the test on an error, the end of
// the feed or a timeout.
func (w *watcher[T]) batch() store.Batch[T] {
	w.t.Helper()
	select {
	case b := <-w.batches:
		if len(b.Items) == 0 {
			w.t.Fatalf("feed delivered an empty batch")
		}
		w.last = b.Next
		return b
	case err := <-w.end:
		w.t.Fatalf("feed ended while a batch was expected: %v", err)
	case <-time.After(crossStoreTimeout):
		w.t.Fatalf("no batch within %v", crossStoreTimeout)
	}
	panic("unreachable")
}

// take returns the next n items, across batches, and checks that no batch
// exceeds limit items (0: no check).
func (w *watcher[T]) take(n, limit int) []T {
	w.t.Helper()
	out := make([]T, 0, n)
	for len(out) < n {
		if len(w.pending) == 0 {
			b := w.batch()
			if limit > 0 && len(b.Items) > limit {
				w.t.Fatalf("batch of %d items, limit %d", len(b.Items), limit)
			}
			w.pending = b.Items
		}
		k := min(n-len(out), len(w.pending))
		out = append(out, w.pending[:k]...)
		w.pending = w.pending[k:]
	}
	return out
}

// quiet checks that nothing more is delivered while the store settles:
// it waits for the end of nothing, briefly, only to catch duplicates.
func (w *watcher[T]) quiet(d time.Duration) {
	w.t.Helper()
	if len(w.pending) > 0 {
		w.t.Fatalf("%d undelivered items left over", len(w.pending))
	}
	select {
	case b := <-w.batches:
		w.t.Fatalf("unexpected batch of %d items (next %+v)", len(b.Items), b.Next)
	case err := <-w.end:
		w.t.Fatalf("feed ended: %v", err)
	case <-time.After(d):
	}
}

// ended returns the feed's final error, failing on a batch or a timeout.
func (w *watcher[T]) ended() error {
	w.t.Helper()
	select {
	case b := <-w.batches:
		w.t.Fatalf("batch of %d items where the end of the feed was expected", len(b.Items))
	case err := <-w.end:
		return err
	case <-time.After(crossStoreTimeout):
		w.t.Fatalf("the feed did not end within %v", crossStoreTimeout)
	}
	panic("unreachable")
}

// stop cancels the feed and waits for it to return.
func (w *watcher[T]) stop() {
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(crossStoreTimeout):
		w.t.Fatalf("the feed did not stop within %v of its cancellation", crossStoreTimeout)
	}
}

// collect ranges over a feed that must end by itself (an error or the
// end of a governed session) and returns what it delivered. Build the
// feed with e.bounded(): a feed that does not end fails the test.
func collect[T any](t testing.TB, seq iter.Seq2[store.Batch[T], error]) ([]store.Batch[T], error) {
	t.Helper()
	var out []store.Batch[T]
	for b, err := range seq {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the feed did not end within %v (delivered %d batches)", crossStoreTimeout, len(out))
		}
		if err != nil {
			return out, err
		}
		out = append(out, b)
	}
	return out, nil
}

// bounded returns a context for a feed that must end by itself.
func (e *env) bounded() context.Context {
	ctx, cancel := context.WithTimeout(e.ctx, crossStoreTimeout)
	e.t.Cleanup(cancel)
	return ctx
}

func feedMsg(i int) store.Message { return store.UserMessage("m" + strconv.Itoa(i)) }

// checkSeqs checks that msgs are exactly positions from..from+len-1 with
// the texts feedMsg gives them (shifted by textOffset).
func checkMsgs(t testing.TB, msgs []store.Message, from int64, textOffset int) {
	t.Helper()
	for i, m := range msgs {
		if m.Seq != from+int64(i) {
			t.Fatalf("message %d has seq %d, want %d (gap or duplicate)", i, m.Seq, from+int64(i))
		}
		if want := "m" + strconv.Itoa(int(from)+i+textOffset); m.Text() != want {
			t.Fatalf("message %d: text %q, want %q", m.Seq, m.Text(), want)
		}
	}
}

// feedConv creates conversation id with n messages m0..m(n-1) through st.
func (e *env) feedConv(st store.Store, id string, n int) {
	e.t.Helper()
	c := store.NewConversation(id)
	for i := range n {
		c.Messages = append(c.Messages, feedMsg(i))
	}
	if _, err := st.Conversations().Save(e.ctx, c); err != nil {
		e.t.Fatalf("Save: %v", err)
	}
}

func (e *env) feedAppend(st store.Store, id string, from, n int) {
	e.t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := st.Conversations().AppendMessages(e.ctx, id, feedMsg(i)); err != nil {
			e.t.Fatalf("AppendMessages: %v", err)
		}
	}
}

func (e *env) watchMsgs(st store.Store, req store.MessageFeed) *watcher[store.Message] {
	return watch(e.t, func(ctx context.Context) iter.Seq2[store.Batch[store.Message], error] {
		return st.Feed().Messages(ctx, req)
	})
}

func testFeedSameStore(t *testing.T, e *env) {
	e.feedConv(e.st, "c/1", 3)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c/1", Limit: 2})
	got := w.take(3, 2)
	checkMsgs(t, got, 0, 0)
	epoch := w.last.Epoch
	if w.last.Seq != 3 {
		t.Fatalf("next after the history: %+v, want seq 3", w.last)
	}
	e.feedAppend(e.st, "c/1", 3, 2)
	checkMsgs(t, w.take(2, 2), 3, 0)
	if w.last.Seq != 5 || w.last.Epoch != epoch {
		t.Fatalf("next after two appends: %+v, want seq 5 epoch %d", w.last, epoch)
	}
	// A batch append lands as one commit; its messages arrive in order.
	if _, err := e.st.Conversations().AppendMessages(e.ctx, "c/1", feedMsg(5), feedMsg(6), feedMsg(7)); err != nil {
		t.Fatal(err)
	}
	checkMsgs(t, w.take(3, 2), 5, 0)
	w.quiet(50 * time.Millisecond)
}

func testFeedOtherStore(t *testing.T, e *env) {
	other := e.open()
	e.feedConv(e.st, "c", 1)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c"})
	checkMsgs(t, w.take(1, 0), 0, 0)
	for i := 1; i <= 5; i++ {
		e.feedAppend(other, "c", i, 1)
		checkMsgs(t, w.take(1, 0), int64(i), 0)
	}
	w.quiet(50 * time.Millisecond)
}

// feedWriterRole writes n items, one commit each, to one stream. Args:
// kind (messages, traces, runs, events, governed), the owner's id, n.
func feedWriterRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	kind, id := args[0], args[1]
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	conv := st.Conversations()
	for i := range n {
		switch kind {
		case "messages":
			_, err = conv.AppendMessages(ctx, id, feedMsg(i))
		case "traces":
			_, err = conv.AppendTraces(ctx, id, store.TraceEvent{Kind: store.TraceToolExecution, Name: "t" + strconv.Itoa(i)})
		case "runs":
			_, err = conv.AppendRunEvents(ctx, id, "run-1", store.RunEvent{Event: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)})
		case "events":
			_, err = st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{
				Key:   store.SessionKey{App: id, User: "u", Session: "s"},
				Event: store.AgentEvent{Data: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)},
			})
		case "governed":
			_, err = st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"t"}})
		default:
			return fmt.Errorf("unknown kind %q", kind)
		}
		if err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
	}
	return report(out, map[string]int{"written": n})
}

// The feed of one process delivers every commit of another process, for
// every kind of stream, in order, each exactly once.
func testFeedOtherProcess(t *testing.T, e *env) {
	const n = 20
	e.feedConv(e.st, "c", 0)
	if err := e.st.Conversations().PutRuns(e.ctx, "c", store.RunRecord{Snapshot: store.RunSnapshot{ID: "run-1"}}); err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	e.asCreate(key, store.ScopedState{})
	// The helper process runs on the real clock.
	gov, err := e.st.Governance().Create(e.ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: n, TimeLimit: 100 * 365 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := e.st.Feed()
	msgs := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.Message], error] {
		return f.Messages(ctx, store.MessageFeed{ID: "c"})
	})
	traces := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.TraceEvent], error] {
		return f.Traces(ctx, store.TraceFeed{ID: "c"})
	})
	runs := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.RunEvent], error] {
		return f.RunEvents(ctx, store.RunEventFeed{ID: "c", RunID: "run-1"})
	})
	events := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.AgentEvent], error] {
		return f.Events(ctx, store.EventFeed{Key: key})
	})
	states := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.Session], error] {
		return f.GovernedSession(ctx, store.GovernedFeed{SessionID: gov.ID})
	})
	if s := states.take(1, 1)[0]; s.CallsMade != 0 {
		t.Fatalf("first governed state: %d calls made", s.CallsMade)
	}
	var cmds []func() error
	for _, w := range [][2]string{{"messages", "c"}, {"traces", "c"}, {"runs", "c"}, {"events", "app"}, {"governed", gov.ID}} {
		cmd, _ := e.spawn("feed-writer", w[0], w[1], strconv.Itoa(n))
		cmds = append(cmds, cmd.Wait)
	}
	checkMsgs(t, msgs.take(n, 0), 0, 0)
	for i, tr := range traces.take(n, 0) {
		if tr.Seq != int64(i) || tr.Name != "t"+strconv.Itoa(i) {
			t.Fatalf("trace %d: seq %d name %q", i, tr.Seq, tr.Name)
		}
	}
	for i, ev := range runs.take(n, 0) {
		if ev.Seq != int64(i) || string(ev.Event) != `{"i":`+strconv.Itoa(i)+`}` {
			t.Fatalf("run event %d: seq %d event %s", i, ev.Seq, ev.Event)
		}
	}
	for i, ev := range events.take(n, 0) {
		if ev.Seq != int64(i+1) || string(ev.Data) != `{"i":`+strconv.Itoa(i)+`}` {
			t.Fatalf("agent event %d: seq %d data %s", i, ev.Seq, ev.Data)
		}
	}
	// Governed states coalesce; they must grow and end at n calls.
	var last int64
	for last < n {
		s := states.take(1, 1)[0]
		if s.CallsMade <= last {
			t.Fatalf("governed state went from %d to %d calls", last, s.CallsMade)
		}
		last = s.CallsMade
	}
	for _, wait := range cmds {
		if err := wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	msgs.quiet(20 * time.Millisecond)
	traces.quiet(20 * time.Millisecond)
	runs.quiet(20 * time.Millisecond)
	events.quiet(20 * time.Millisecond)
	states.quiet(20 * time.Millisecond)
}

// feedEchoRole watches a conversation's messages from position 0 and
// prints one line per message as it is delivered: its seq and the wall
// clock (unix ns). It stops after the message with seq args[1] (or when
// the feed ends). Args: conversation id, last seq.
func feedEchoRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	last, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil {
		return err
	}
	flush := func() {
		if f, ok := out.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
	for b, err := range st.Feed().Messages(ctx, store.MessageFeed{ID: args[0]}) {
		if err != nil {
			return err
		}
		for _, m := range b.Items {
			fmt.Fprintf(out, "%d %d\n", m.Seq, time.Now().UnixNano())
			flush()
			if m.Seq >= last {
				return nil
			}
		}
	}
	return nil
}

// A feed in another process delivers the commits of this one.
func testFeedOtherProcessWatches(t *testing.T, e *env) {
	const n = 20
	e.feedConv(e.st, "c", 1)
	cmd, out := e.spawn("feed-echo", "c", strconv.Itoa(n))
	lines := make(chan string)
	go scanLines(out, lines)
	want := int64(0)
	expect := func() {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the watching process stopped before seq %d", want)
			}
			var seq, at int64
			if _, err := fmt.Sscan(l, &seq, &at); err != nil || seq != want {
				t.Fatalf("watcher printed %q, want seq %d", l, want)
			}
			want++
		case <-time.After(crossStoreTimeout):
			t.Fatalf("seq %d not delivered within %v", want, crossStoreTimeout)
		}
	}
	expect() // the history: the watcher is running
	for i := 1; i <= n; i++ {
		e.feedAppend(e.st, "c", i, 1)
		expect()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watcher process: %v", err)
	}
}

// scanLines sends the lines of r to lines and closes it at EOF.
func scanLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	buf := make([]byte, 0, 256)
	one := make([]byte, 1)
	for {
		n, err := r.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				lines <- string(buf)
				buf = buf[:0]
			} else {
				buf = append(buf, one[0])
			}
		}
		if err != nil {
			return
		}
	}
}

// Resuming from the Next of the last batch continues exactly after it.
func testFeedResume(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 5)
	ctx, cancel := context.WithTimeout(e.ctx, crossStoreTimeout)
	defer cancel()
	var next store.Position
	var seen []store.Message
	for b, err := range e.st.Feed().Messages(ctx, store.MessageFeed{ID: "c", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, b.Items...)
		next = b.Next
		if len(seen) >= 3 {
			break // a consumer that stops (or is killed) after a batch
		}
	}
	checkMsgs(t, seen, 0, 0)
	if next.Seq != int64(len(seen)) || next.Epoch == 0 {
		t.Fatalf("next %+v after %d messages", next, len(seen))
	}
	// Meanwhile another store appends.
	e.feedAppend(e.open(), "c", 5, 3)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c", From: next})
	checkMsgs(t, w.take(8-len(seen), 0), next.Seq, 0)
	w.quiet(50 * time.Millisecond)
	// The position alone (no epoch) resumes as well.
	w2 := e.watchMsgs(e.st, store.MessageFeed{ID: "c", From: store.Position{Seq: 6}})
	checkMsgs(t, w2.take(2, 0), 6, 0)
	if w2.last.Epoch != next.Epoch {
		t.Fatalf("epoch %d, the feed before had %d", w2.last.Epoch, next.Epoch)
	}
}

// A position taken before a rewrite is refused when resumed with its
// epoch: the consumer learns that its positions no longer name the same
// messages.
func testFeedResumeReset(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 3)
	bs, err := collectN(e, store.MessageFeed{ID: "c"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	next := bs[len(bs)-1].Next
	if _, err := e.st.Conversations().PopMessage(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	e.feedAppend(e.st, "c", 10, 2) // positions 2 and 3: 2 is not the message the consumer has
	_, err = collect(t, e.st.Feed().Messages(e.bounded(), store.MessageFeed{ID: "c", From: next}))
	var reset *store.FeedResetError
	if !errors.Is(err, store.ErrFeedReset) || !errors.Is(err, store.ErrConflict) || !errors.As(err, &reset) {
		t.Fatalf("resume after a pop: %v, want a *FeedResetError", err)
	}
	if reset.Stream != "messages" || reset.ID != "c" || reset.Epoch != next.Epoch || reset.Current == next.Epoch {
		t.Fatalf("reset details %+v (held epoch %d)", reset, next.Epoch)
	}
	// Deleted and created again: a new stream, whatever its numbers.
	if err := e.st.Conversations().Delete(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	e.feedConv(e.st, "c", 5)
	_, err = collect(t, e.st.Feed().Messages(e.bounded(), store.MessageFeed{ID: "c", From: store.Position{Seq: 2, Epoch: reset.Current}}))
	if !errors.Is(err, store.ErrFeedReset) {
		t.Fatalf("resume on a re-created conversation: %v, want ErrFeedReset", err)
	}
}

// collectN reads the first n messages of a feed and stops it.
func collectN(e *env, req store.MessageFeed, n int) ([]store.Batch[store.Message], error) {
	ctx, cancel := context.WithTimeout(e.ctx, crossStoreTimeout)
	defer cancel()
	var out []store.Batch[store.Message]
	got := 0
	for b, err := range e.st.Feed().Messages(ctx, req) {
		if err != nil {
			return out, err
		}
		out = append(out, b)
		if got += len(b.Items); got >= n {
			break
		}
	}
	return out, nil
}

// Every write that can reuse a position already delivered ends a running
// feed with a reset, whoever makes it.
func testFeedRewrites(t *testing.T, e *env) {
	other := e.open()
	rewrites := []struct {
		name string
		fn   func(id string) error
	}{
		{"PopMessage", func(id string) error { _, err := other.Conversations().PopMessage(e.ctx, id); return err }},
		{"Save", func(id string) error {
			c := store.NewConversation(id)
			c.Messages = []store.Message{feedMsg(0)}
			_, err := other.Conversations().Save(e.ctx, c)
			return err
		}},
		{"SaveSameLength", func(id string) error {
			c, err := other.Conversations().Load(e.ctx, id)
			if err != nil {
				return err
			}
			c.Version = 0
			c.Messages[0] = store.UserMessage("rewritten")
			_, err = other.Conversations().Save(e.ctx, c)
			return err
		}},
		{"TrimToNothing", func(id string) error { _, err := other.Conversations().TrimMessages(e.ctx, id, 0); return err }},
		// A fork with no messages of its own, rewound below its fork
		// point: no row of its own goes, its stream is rewritten all the
		// same.
		{"RewindForkWithoutOwnMessages", func(id string) error {
			_, err := other.Conversations().Rewind(e.ctx, store.ConversationRewindRequest{ID: id, To: 0})
			return err
		}},
	}
	for i, rw := range rewrites {
		id := "c/" + rw.name
		if rw.name == "RewindForkWithoutOwnMessages" {
			e.feedConv(e.st, id+"/parent", 3)
			if _, err := e.st.Conversations().Fork(e.ctx, store.ConversationForkRequest{ID: id + "/parent", At: 2, NewID: id}); err != nil {
				t.Fatal(err)
			}
		} else {
			e.feedConv(e.st, id, 3)
		}
		w := e.watchMsgs(e.st, store.MessageFeed{ID: id})
		checkMsgs(t, w.take(3, 0), 0, 0)
		if err := rw.fn(id); err != nil {
			t.Fatalf("%s: %v", rw.name, err)
		}
		err := w.ended()
		var reset *store.FeedResetError
		if !errors.As(err, &reset) || reset.Stream != "messages" || reset.ID != id {
			t.Fatalf("rewrite %d %s: feed ended with %v, want a *FeedResetError of the messages", i, rw.name, err)
		}
	}
}

func testFeedTrimKeep(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 5)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c"})
	checkMsgs(t, w.take(5, 0), 0, 0)
	n, err := e.open().Conversations().TrimMessages(e.ctx, "c", 2)
	if err != nil || n != 3 {
		t.Fatalf("TrimMessages: %d, %v", n, err)
	}
	e.feedAppend(e.st, "c", 5, 1)
	checkMsgs(t, w.take(1, 0), 5, 0)
	// A feed resumed from a trimmed position starts at the oldest kept
	// message, with its own seq.
	w2 := e.watchMsgs(e.st, store.MessageFeed{ID: "c", From: store.Position{Seq: 1, Epoch: w.last.Epoch}})
	checkMsgs(t, w2.take(3, 0), 3, 0)
	w.quiet(30 * time.Millisecond)
}

func testFeedTracesRuns(t *testing.T, e *env) {
	conv := e.st.Conversations()
	e.feedConv(e.st, "c", 0)
	trace := func(i int) store.TraceEvent {
		return store.TraceEvent{Kind: store.TraceToolExecution, Name: "t" + strconv.Itoa(i)}
	}
	if _, err := conv.AppendTraces(e.ctx, "c", trace(0), trace(1)); err != nil {
		t.Fatal(err)
	}
	run := store.RunRecord{Snapshot: store.RunSnapshot{ID: "r"}, Events: []store.RunEvent{
		{Seq: 0, Event: json.RawMessage(`{"e":0}`)}, {Seq: 1, Event: json.RawMessage(`{"e":1}`)}}}
	if err := conv.PutRuns(e.ctx, "c", run); err != nil {
		t.Fatal(err)
	}
	f := e.st.Feed()
	traces := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.TraceEvent], error] {
		return f.Traces(ctx, store.TraceFeed{ID: "c"})
	})
	runs := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.RunEvent], error] {
		return f.RunEvents(ctx, store.RunEventFeed{ID: "c", RunID: "r"})
	})
	if got := traces.take(2, 0); got[0].Name != "t0" || got[1].Seq != 1 {
		t.Fatalf("traces %+v", got)
	}
	if got := runs.take(2, 0); got[0].Seq != 0 || string(got[1].Event) != `{"e":1}` {
		t.Fatalf("run events %+v", got)
	}
	other := e.open()
	if _, err := other.Conversations().AppendTraces(e.ctx, "c", trace(2)); err != nil {
		t.Fatal(err)
	}
	if got := traces.take(1, 0); got[0].Seq != 2 || got[0].Name != "t2" {
		t.Fatalf("appended trace %+v", got)
	}
	if _, err := other.Conversations().AppendRunEvents(e.ctx, "c", "r", store.RunEvent{Event: json.RawMessage(`{"e":2}`)}); err != nil {
		t.Fatal(err)
	}
	if got := runs.take(1, 0); got[0].Seq != 2 || string(got[0].Event) != `{"e":2}` {
		t.Fatalf("appended run event %+v", got)
	}
	// Another run's events and messages are other streams.
	if err := other.Conversations().PutRuns(e.ctx, "c", store.RunRecord{Snapshot: store.RunSnapshot{ID: "r2"},
		Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	e.feedAppend(other, "c", 0, 1)
	traces.quiet(30 * time.Millisecond)
	runs.quiet(0)
	// Replacing the traces or the run resets their feeds.
	if err := other.Conversations().SaveTraces(e.ctx, "c", []store.TraceEvent{trace(9)}); err != nil {
		t.Fatal(err)
	}
	var reset *store.FeedResetError
	if err := traces.ended(); !errors.As(err, &reset) || reset.Stream != "traces" {
		t.Fatalf("SaveTraces: the trace feed ended with %v", err)
	}
	if err := other.Conversations().PutRuns(e.ctx, "c", run); err != nil {
		t.Fatal(err)
	}
	if err := runs.ended(); !errors.As(err, &reset) || reset.Stream != "run_events" || reset.RunID != "r" {
		t.Fatalf("PutRuns: the run feed ended with %v", err)
	}
}

func testFeedEvents(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	as := e.as()
	for i := range 3 {
		if _, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: asEvent("", "p", i)}); err != nil {
			t.Fatal(err)
		}
	}
	w := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.AgentEvent], error] {
		return e.st.Feed().Events(ctx, store.EventFeed{Key: key, Limit: 2})
	})
	got := w.take(3, 2)
	for i, ev := range got {
		if ev.Seq != int64(i+1) || ev.ID == "" || ev.InvocationID != "inv-p" {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if w.last.Seq != 4 {
		t.Fatalf("next %+v, want seq 4", w.last)
	}
	other := e.open()
	res, err := other.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: asEvent("ev-x", "o", 0),
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"k": raw(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	ev := w.take(1, 2)[0]
	if ev.Seq != 4 || ev.ID != "ev-x" || !ev.Timestamp.Equal(res.Event.Timestamp) || string(ev.Data) != string(res.Event.Data) {
		t.Fatalf("delivered %+v, stored %+v", ev, res.Event)
	}
	// A state update without an event and another session's events are
	// not in this log.
	if _, err := other.AgentSessions().UpdateState(e.ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"k": raw(2)}}}); err != nil {
		t.Fatal(err)
	}
	k2 := key
	k2.Session = "session-2"
	e.asCreate(k2, store.ScopedState{})
	if _, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: k2, Event: asEvent("", "p", 0)}); err != nil {
		t.Fatal(err)
	}
	w.quiet(30 * time.Millisecond)
	// Deleted, then created again under the same key before the feed
	// looked: the feed never mistakes the new log for the old one.
	w.stop()
	held := w.last
	if err := as.DeleteSession(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	e.asCreate(key, store.ScopedState{})
	for i := range 5 {
		if _, err := as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: asEvent("", "n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = collect(t, e.st.Feed().Events(e.bounded(), store.EventFeed{Key: key, From: held}))
	var reset *store.FeedResetError
	if !errors.As(err, &reset) || reset.Stream != "events" {
		t.Fatalf("resume on a re-created session: %v, want a *FeedResetError", err)
	}
}

func testFeedGoverned(t *testing.T, e *env) {
	gov := e.st.Governance()
	s, err := gov.Create(e.ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 10, TimeLimit: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.Session], error] {
		return e.st.Feed().GovernedSession(ctx, store.GovernedFeed{SessionID: s.ID})
	})
	first := w.take(1, 1)[0]
	if first.ID != s.ID || first.CallsMade != 0 || first.Status != store.StatusActive || w.last.Seq != 1 {
		t.Fatalf("first state %+v, next %+v", first, w.last)
	}
	other := e.open()
	if _, err := other.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	if got := w.take(1, 1)[0]; got.CallsMade != 2 || got.FeedSeq() != 2 || w.last.Seq != 3 {
		t.Fatalf("after a use of two tools: %+v, next %+v", got, w.last)
	}
	// A refused use and an empty one change nothing.
	if _, err := other.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "b", Tools: []string{"x"}}); !errors.Is(err, store.ErrAgentMismatch) {
		t.Fatalf("use by another agent: %v", err)
	}
	if _, err := other.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID}); err != nil {
		t.Fatal(err)
	}
	w.quiet(30 * time.Millisecond)
	held := w.last
	if _, err := other.Governance().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got := w.take(1, 1)[0]; got.Status != store.StatusClosed || got.CallsMade != 2 {
		t.Fatalf("after close: %+v", got)
	}
	if err := w.ended(); err != nil {
		t.Fatalf("the feed of a closed session ended with %v, want the end of the sequence", err)
	}
	// Resuming after the closed state ends at once; from before it
	// delivers it.
	if bs, err := collect(t, e.govFeed(s.ID, w.last)); err != nil || len(bs) != 0 {
		t.Fatalf("resume after close: %d batches, %v", len(bs), err)
	}
	bs, err := collect(t, e.govFeed(s.ID, held))
	if err != nil || len(bs) != 1 || bs[0].Items[0].Status != store.StatusClosed {
		t.Fatalf("resume before close: %+v, %v", bs, err)
	}
	// Cleanup removes it: a feed of it is not found.
	if n, err := gov.Cleanup(e.ctx); err != nil || n != 1 {
		t.Fatalf("Cleanup: %d, %v", n, err)
	}
	if _, err := collect(t, e.govFeed(s.ID, store.Position{})); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("feed of a cleaned-up session: %v", err)
	}
}

func testFeedGovernedExpiry(t *testing.T, e *env) {
	s, err := e.st.Governance().Create(e.ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 10, TimeLimit: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.Session], error] {
		return e.st.Feed().GovernedSession(ctx, store.GovernedFeed{SessionID: s.ID})
	})
	w.take(1, 1)
	if _, err := e.st.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	w.take(1, 1)
	e.clock.Advance(10 * time.Second)
	// Past expiry without a commit: no state change is committed yet.
	w.quiet(30 * time.Millisecond)
	if _, err := e.st.Governance().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"x"}}); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("use past expiry: %v", err)
	}
	got := w.take(1, 1)[0]
	if got.Status != store.StatusExpired || got.CallsMade != 1 || got.FeedSeq() != 2 {
		t.Fatalf("after the expired use: %+v", got)
	}
	if _, err := e.st.Governance().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got := w.take(1, 1)[0]; got.Status != store.StatusClosed || got.FeedSeq() != 3 {
		t.Fatalf("closing the expired session: %+v", got)
	}
	if err := w.ended(); err != nil {
		t.Fatal(err)
	}
}

func (e *env) govFeed(id string, from store.Position) iter.Seq2[store.Batch[store.Session], error] {
	return e.st.Feed().GovernedSession(e.bounded(), store.GovernedFeed{SessionID: id, From: from})
}

func testFeedDeleted(t *testing.T, e *env) {
	other := e.open()
	e.feedConv(e.st, "c", 2)
	if err := e.st.Conversations().PutRuns(e.ctx, "c", store.RunRecord{Snapshot: store.RunSnapshot{ID: "r"}}); err != nil {
		t.Fatal(err)
	}
	f := e.st.Feed()
	msgs := e.watchMsgs(e.st, store.MessageFeed{ID: "c"})
	traces := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.TraceEvent], error] {
		return f.Traces(ctx, store.TraceFeed{ID: "c"})
	})
	runs := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.RunEvent], error] {
		return f.RunEvents(ctx, store.RunEventFeed{ID: "c", RunID: "r"})
	})
	msgs.take(2, 0)
	if err := other.Conversations().Delete(e.ctx, "c"); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{"messages": msgs.ended(), "traces": traces.ended(), "runs": runs.ended()} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s feed of a deleted conversation ended with %v, want ErrNotFound", name, err)
		}
	}
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	events := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.AgentEvent], error] {
		return f.Events(ctx, store.EventFeed{Key: key})
	})
	events.quiet(20 * time.Millisecond)
	if err := other.AgentSessions().DeleteSession(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := events.ended(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("event feed of a deleted session ended with %v", err)
	}
}

func testFeedMissing(t *testing.T, e *env) {
	f := e.st.Feed()
	e.feedConv(e.st, "c", 0)
	checks := map[string]error{}
	_, checks["messages"] = collect(t, f.Messages(e.bounded(), store.MessageFeed{ID: "missing"}))
	_, checks["traces"] = collect(t, f.Traces(e.bounded(), store.TraceFeed{ID: "missing"}))
	_, checks["runs of a missing conversation"] = collect(t, f.RunEvents(e.bounded(), store.RunEventFeed{ID: "missing", RunID: "r"}))
	_, checks["events"] = collect(t, f.Events(e.bounded(), store.EventFeed{Key: asKey()}))
	_, checks["governed"] = collect(t, f.GovernedSession(e.bounded(), store.GovernedFeed{SessionID: "missing"}))
	for name, err := range checks {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	_, err := collect(t, f.RunEvents(e.bounded(), store.RunEventFeed{ID: "c", RunID: "missing"}))
	var nf *store.NotFoundError
	if !errors.As(err, &nf) || nf.Resource != "run" {
		t.Fatalf("missing run: %v, want a run NotFoundError", err)
	}
}

func testFeedCancel(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 1)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c"})
	w.take(1, 0)
	w.quiet(20 * time.Millisecond) // waiting for commits
	w.cancel()
	if err := w.ended(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled feed ended with %v", err)
	}
	// A context cancelled before the feed starts ends it at once, before
	// anything is read.
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if bs, err := collect(t, e.st.Feed().Messages(ctx, store.MessageFeed{ID: "c"})); !errors.Is(err, context.Canceled) || len(bs) != 0 {
		t.Fatalf("feed with a cancelled context: %d batches, %v", len(bs), err)
	}
	// A deadline ends a waiting feed too.
	dctx, dcancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer dcancel()
	var err error
	for _, err = range e.st.Feed().Messages(dctx, store.MessageFeed{ID: "c"}) {
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("feed with a deadline: %v", err)
	}
}

// Breaking out of the loop ends the feed: the store keeps working and
// closes cleanly, and a new feed starts afresh.
func testFeedBreak(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 3)
	for range 3 {
		n := 0
		for b, err := range e.st.Feed().Messages(e.bounded(), store.MessageFeed{ID: "c", Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			n += len(b.Items)
			if n == 2 {
				break
			}
		}
		if n != 2 {
			t.Fatalf("read %d messages", n)
		}
	}
	e.feedAppend(e.st, "c", 3, 1)
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
}

func testFeedStoreClosed(t *testing.T, e *env) {
	st := e.open()
	e.feedConv(st, "c", 1)
	w := e.watchMsgs(st, store.MessageFeed{ID: "c"})
	w.take(1, 0)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.ended(); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("feed of a closed store ended with %v", err)
	}
	if _, err := collect(t, st.Feed().Messages(e.bounded(), store.MessageFeed{ID: "c"})); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("feed opened on a closed store: %v", err)
	}
}

// A store closed while its feed is reading (another store keeps
// committing) ends the feed with ErrStoreClosed, not with whatever the
// closing connection said.
func testFeedClosedWhileReading(t *testing.T, e *env) {
	e.feedConv(e.st, "c", 0)
	writer := e.open()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := writer.Conversations().AppendMessages(e.ctx, "c", feedMsg(i)); err != nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	})
	for round := range 5 {
		st := e.open()
		w := e.watchMsgs(st, store.MessageFeed{ID: "c", Limit: 1})
		w.take(3, 1)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case <-w.batches: // delivered before the close took effect
				continue
			case err := <-w.end:
				if !errors.Is(err, store.ErrStoreClosed) {
					t.Fatalf("round %d: the feed of a store closed while reading ended with %v", round, err)
				}
			case <-time.After(crossStoreTimeout):
				t.Fatalf("round %d: the feed did not end after Close", round)
			}
			break
		}
	}
}

// A consumer that does not keep up gets the backlog in pages of at most
// Limit, in order, and nothing is lost or repeated.
func testFeedSlowConsumer(t *testing.T, e *env) {
	const limit, history, burst = 50, 120, 300
	e.feedConv(e.st, "c", history)
	w := e.watchMsgs(e.st, store.MessageFeed{ID: "c", Limit: limit})
	first := w.batch()
	if len(first.Items) != limit {
		t.Fatalf("first batch of %d, want a full page of %d", len(first.Items), limit)
	}
	checkMsgs(t, first.Items, 0, 0)
	// The consumer is busy: the feed is blocked handing over its next
	// batch while writers commit a burst in several commits.
	other := e.open()
	for i := history; i < history+burst; i += 30 {
		msgs := make([]store.Message, 30)
		for j := range msgs {
			msgs[j] = feedMsg(i + j)
		}
		if _, err := other.Conversations().AppendMessages(e.ctx, "c", msgs...); err != nil {
			t.Fatal(err)
		}
	}
	rest := w.take(history+burst-limit, limit)
	checkMsgs(t, rest, limit, 0)
	w.quiet(30 * time.Millisecond)
}

// Writers in several goroutines and two stores race; the feed delivers
// every message once, in position order.
func testFeedConcurrent(t *testing.T, e *env) {
	const writers, each = 4, 25
	e.feedConv(e.st, "c", 0)
	w := e.watchMsgs(e.open(), store.MessageFeed{ID: "c", Limit: 7})
	stores := []store.Store{e.st, e.open()}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			st := stores[g%len(stores)]
			for i := range each {
				m := store.UserMessage(fmt.Sprintf("w%d-%d", g, i))
				if _, err := st.Conversations().AppendMessages(e.ctx, "c", m); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	got := w.take(writers*each, 7)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	next := map[int]int{}
	for i, m := range got {
		if m.Seq != int64(i) {
			t.Fatalf("item %d has seq %d", i, m.Seq)
		}
		if seen[m.Text()] {
			t.Fatalf("%q delivered twice", m.Text())
		}
		seen[m.Text()] = true
		var g, k int
		if _, err := fmt.Sscanf(m.Text(), "w%d-%d", &g, &k); err != nil || k != next[g] {
			t.Fatalf("writer %d's message %q out of its order (want %d)", g, m.Text(), next[g])
		}
		next[g]++
	}
	w.quiet(30 * time.Millisecond)
}

func testFeedInvalid(t *testing.T, e *env) {
	f := e.st.Feed()
	e.feedConv(e.st, "c", 1)
	checks := map[string]error{}
	_, checks["empty id"] = collect(t, f.Messages(e.bounded(), store.MessageFeed{}))
	_, checks["negative from"] = collect(t, f.Messages(e.bounded(), store.MessageFeed{ID: "c", From: store.Position{Seq: -1}}))
	_, checks["negative limit"] = collect(t, f.Messages(e.bounded(), store.MessageFeed{ID: "c", Limit: -1}))
	_, checks["trace id"] = collect(t, f.Traces(e.bounded(), store.TraceFeed{ID: "bad\x00id"}))
	_, checks["run id"] = collect(t, f.RunEvents(e.bounded(), store.RunEventFeed{ID: "c"}))
	_, checks["session key"] = collect(t, f.Events(e.bounded(), store.EventFeed{Key: store.SessionKey{App: "a"}}))
	_, checks["governed id"] = collect(t, f.GovernedSession(e.bounded(), store.GovernedFeed{}))
	_, checks["governed from"] = collect(t, f.GovernedSession(e.bounded(), store.GovernedFeed{SessionID: "s", From: store.Position{Seq: -2}}))
	for name, err := range checks {
		var inv *store.InvalidInputError
		if !errors.Is(err, store.ErrInvalidInput) || !errors.As(err, &inv) {
			t.Errorf("%s: %v, want an *InvalidInputError", name, err)
		}
	}
	// A limit above the maximum is capped, not refused.
	bs, err := collectN(e, store.MessageFeed{ID: "c", Limit: store.MaxPageSize * 10}, 1)
	if err != nil || len(bs) != 1 {
		t.Fatalf("large limit: %d batches, %v", len(bs), err)
	}
	// Nothing was written.
	if n, err := e.st.Conversations().MessageCount(e.ctx, "c"); err != nil || n != 1 {
		t.Fatalf("MessageCount after bad feeds: %d, %v", n, err)
	}
}

func testFeedOpaqueReset(t *testing.T, e *env) {
	err := error(&store.FeedResetError{Stream: "messages", ID: "secret-conversation", Epoch: 7, Current: 9})
	if err.Error() != store.ErrFeedReset.Error() {
		t.Fatalf("Error() = %q", err.Error())
	}
	for _, leak := range []string{"secret", "7", "9"} {
		if containsStr(err.Error(), leak) {
			t.Fatalf("Error() %q reveals %q", err.Error(), leak)
		}
	}
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
