package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Live pages follow the store's change feed (Store.Feed) through
// server-sent events. Each batch of the feed is one event whose id is the
// feed position after it ("SEQ.EPOCH", Batch.Next), so that an EventSource
// that reconnects sends it back as Last-Event-ID and continues exactly
// after the last batch it received: no gap, no duplicate. The data of an
// event is the batch rendered as HTML fragments by the page's own
// templates (agent-written content escaped as on the page), or JSON for a
// governed session. A feed that ends sends one last event, "gone" (the
// object was deleted), "reset" (the stream was rewritten: reload) or "end"
// (a closed governed session), and the response ends. Comments keep idle
// connections open through proxies. The stream ends with the request.

// heartbeat is the interval of the keep-alive comments of a live stream.
var heartbeat = 15 * time.Second

// liveStreams counts the live streams being served (tests check that
// none outlives its request).
var liveStreams atomic.Int64

// livePosition is where a live stream starts: the Last-Event-ID header of
// a reconnecting EventSource, else ?from=SEQ.EPOCH (a position the script
// kept), else ?after=SEQ (the last row the page shows), else the
// beginning.
func livePosition(r *http.Request) (store.Position, error) {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return parsePosition(id)
	}
	q := r.URL.Query()
	if from := q.Get("from"); from != "" {
		return parsePosition(from)
	}
	if after := q.Get("after"); after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < -1 {
			return store.Position{}, store.Invalid("after", "must be a position")
		}
		return store.Position{Seq: n + 1}, nil
	}
	return store.Position{}, nil
}

// parsePosition reads "SEQ" or "SEQ.EPOCH".
func parsePosition(s string) (store.Position, error) {
	seq, epoch, _ := strings.Cut(s, ".")
	var p store.Position
	var err error
	if p.Seq, err = strconv.ParseInt(seq, 10, 64); err != nil || p.Seq < 0 {
		return p, store.Invalid("from", "must be a position")
	}
	if epoch != "" {
		if p.Epoch, err = strconv.ParseInt(epoch, 10, 64); err != nil {
			return p, store.Invalid("from", "must be a position")
		}
	}
	return p, nil
}

func formatPosition(p store.Position) string {
	return strconv.FormatInt(p.Seq, 10) + "." + strconv.FormatInt(p.Epoch, 10)
}

// liveMessages streams the messages of a conversation, as the <li>
// elements of the conversation page.
func (c *console) liveMessages(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	from, err := livePosition(r)
	if err != nil {
		return err
	}
	if ok, err := c.st.Conversations().Exists(r.Context(), id); err != nil {
		return err
	} else if !ok {
		return &store.NotFoundError{Resource: "conversation", ID: id}
	}
	show := c.showContent(r)
	t := c.pages["conversation"]
	feed := func(ctx context.Context, from store.Position) iter.Seq2[store.Batch[store.Message], error] {
		return c.st.Feed().Messages(ctx, store.MessageFeed{ID: id, From: from})
	}
	return serveFeed(c, w, r, from, feed, "messages", func(items []store.Message) ([]byte, error) {
		var buf bytes.Buffer
		for _, m := range items {
			out, err := execute(t, "message", newMessageView(id, c.cleanMessage(m, show)))
			if err != nil {
				return nil, err
			}
			buf.Write(out)
			buf.WriteByte('\n')
		}
		return buf.Bytes(), nil
	})
}

// liveEvents streams the event log of an agent session, as the <li>
// elements of the agent session page.
func (c *console) liveEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	key := store.SessionKey{App: q.Get("app"), User: q.Get("user"), Session: q.Get("session")}
	from, err := livePosition(r)
	if err != nil {
		return err
	}
	if _, err := c.st.AgentSessions().GetSession(r.Context(), store.GetAgentSessionRequest{Key: key}); err != nil {
		return err
	}
	show := c.showContent(r)
	t := c.pages["agent_detail"]
	feed := func(ctx context.Context, from store.Position) iter.Seq2[store.Batch[store.AgentEvent], error] {
		return c.st.Feed().Events(ctx, store.EventFeed{Key: key, From: from})
	}
	return serveFeed(c, w, r, from, feed, "events", func(items []store.AgentEvent) ([]byte, error) {
		var buf bytes.Buffer
		for _, e := range items {
			if show {
				e.Data = c.redactJSON("event.data", e.Data)
			} else {
				e.Data = hiddenJSON
			}
			out, err := execute(t, "event", e)
			if err != nil {
				return nil, err
			}
			buf.Write(out)
			buf.WriteByte('\n')
		}
		return buf.Bytes(), nil
	})
}

// liveGoverned streams the state changes of a governed session as JSON
// (the page reloads its gauges and chart on each).
func (c *console) liveGoverned(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	from, err := livePosition(r)
	if err != nil {
		return err
	}
	if _, err := c.st.Governance().Get(r.Context(), id); err != nil {
		return err
	}
	show := c.showContent(r)
	feed := func(ctx context.Context, from store.Position) iter.Seq2[store.Batch[store.Session], error] {
		return c.st.Feed().GovernedSession(ctx, store.GovernedFeed{SessionID: id, From: from})
	}
	return serveFeed(c, w, r, from, feed, "governed", func(items []store.Session) ([]byte, error) {
		s := items[len(items)-1]
		s.DeclaredIntent = c.cleanText("governed.intent", s.DeclaredIntent, show)
		return json.Marshal(struct {
			Session   govSession   `json:"session"`
			Effective store.Status `json:"effective_status"`
		}{govSession{s}, s.EffectiveStatus(c.now())})
	})
}

// serveFeed answers r with the server-sent events of one feed from from.
// The feed runs in a goroutine of its own so that the keep-alive comments
// go out while it waits; it hands over one batch at a time (the next one
// is read only once this one is written), and it is cancelled and waited
// for before serveFeed returns.
func serveFeed[T any](c *console, w http.ResponseWriter, r *http.Request, from store.Position,
	feed func(context.Context, store.Position) iter.Seq2[store.Batch[T], error], event string,
	encode func([]T) ([]byte, error)) error {
	liveStreams.Add(1)
	defer liveStreams.Add(-1)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	// A write that the client does not take within this time ends the
	// stream (a stuck client must not hold a feed for ever).
	deadline := func() { rc.SetWriteDeadline(time.Now().Add(heartbeat + 30*time.Second)) }
	send := func(s string) error {
		deadline()
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send("retry: 2000\n\n"); err != nil {
		return nil
	}

	ctx, cancel := context.WithCancel(r.Context())
	batches := make(chan store.Batch[T])
	ended := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for b, err := range feed(ctx, from) {
			if err != nil {
				ended <- err
				return
			}
			select {
			case batches <- b:
			case <-ctx.Done():
				return
			}
		}
		ended <- nil
	}()
	defer func() {
		cancel()
		<-done
	}()

	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if send(": keep-alive\n\n") != nil {
				return nil
			}
		case b := <-batches:
			data, err := encode(b.Items)
			if err != nil {
				c.log.Error("console: render live batch", "path", r.URL.Path, "err", err)
				send("event: error\ndata: render failed\n\n")
				return nil
			}
			if send(sseEvent(formatPosition(b.Next), event, data)) != nil {
				return nil
			}
		case err := <-ended:
			var last string
			switch {
			case err == nil:
				last = "end"
			case errors.Is(err, store.ErrNotFound):
				last = "gone"
			case errors.Is(err, store.ErrFeedReset):
				last = "reset"
			case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
				return nil
			default:
				c.log.Error("console: live feed failed", "path", r.URL.Path, "err", err)
				last = "error"
			}
			send("event: " + last + "\ndata: " + last + "\n\n")
			return nil
		}
	}
}

// sseEvent formats one event. Every line break of data (CR, LF or CRLF,
// all line ends to an EventSource) starts a new data line, so that
// nothing in the data can end the event or add a field to it.
func sseEvent(id, event string, data []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "id: %s\nevent: %s\n", id, event)
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimSuffix(s, "\n")
	for line := range strings.SplitSeq(s, "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}
