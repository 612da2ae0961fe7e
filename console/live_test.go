package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

// sseEvent is one server-sent event as an EventSource sees it.
type sseEvent struct {
	ID, Event, Data string
}

// sseStream reads the server-sent events of one response.
type sseStream struct {
	resp     *http.Response
	cancel   context.CancelFunc
	events   chan sseEvent
	comments chan string
	done     chan error // the body ended (nil on EOF)
}

// openSSE starts a live stream request; lastID, when set, is sent as
// Last-Event-ID.
func openSSE(t *testing.T, rawURL, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: %s", rawURL, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	s := &sseStream{resp: resp, cancel: cancel, events: make(chan sseEvent, 100), comments: make(chan string, 1000), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<22)
		var ev sseEvent
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Event != "" || data != nil {
					ev.Data = strings.Join(data, "\n")
					s.events <- ev
				}
				ev, data = sseEvent{}, nil
			case strings.HasPrefix(line, ":"):
				select {
				case s.comments <- line:
				default:
				}
			default:
				field, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				switch field {
				case "id":
					ev.ID = value
				case "event":
					ev.Event = value
				case "data":
					data = append(data, value)
				case "retry":
				default:
					t.Errorf("unexpected SSE field %q", line)
				}
			}
		}
		s.done <- sc.Err()
		close(s.events)
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// next returns the next event, failing after a while.
func (s *sseStream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return sseEvent{}
}

var messageSeqRE = regexp.MustCompile(`<li class="message[^"]*" id="m(\d+)"`)

// messageSeqs returns the positions of the messages an event carries.
func messageSeqs(t *testing.T, data string) []int64 {
	t.Helper()
	var seqs []int64
	for _, m := range messageSeqRE.FindAllStringSubmatch(data, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		seqs = append(seqs, n)
	}
	if len(seqs) == 0 {
		t.Fatalf("an event without messages: %q", data)
	}
	return seqs
}

// waitNoLiveStreams waits until the console serves no live stream and no
// goroutine of one is left.
func waitNoLiveStreams(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		leaked := strings.Contains(stacks, "console.serveFeed")
		if console.LiveStreams() == 0 && !leaked {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("live streams still running after the client left (%d):\n%s", console.LiveStreams(), stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLiveMessages follows a conversation through the console's
// server-sent events while another store appends to it: every message
// once and in order, agent content escaped and unable to break the event
// framing, keep-alive comments, resumption with Last-Event-ID, the
// stream's end when the client leaves (nothing left running) and when the
// conversation is deleted.
func TestLiveMessages(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		defer console.SetHeartbeat(50 * time.Millisecond)()
		ctx := context.Background()
		ro, f, loc := seeded(t, b)
		w, err := b.open(ctx, loc, f.Clock.Now, false)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		srv := newServer(t, ro, f, console.Options{})
		conv := w.Conversations()
		lastMsgs, err := conv.LastMessages(ctx, f.Conv, 1)
		if err != nil {
			t.Fatal(err)
		}
		last := lastMsgs[0].Seq
		live := srv.URL + prefix + "/live/conversations/" + url.PathEscape(f.Conv) + "/messages"

		s := openSSE(t, live+"?after="+strconv.FormatInt(last, 10), "")
		// Nothing new yet: only keep-alive comments.
		select {
		case <-s.comments:
		case ev := <-s.events:
			t.Fatalf("an event before any append: %+v", ev)
		case <-time.After(10 * time.Second):
			t.Fatal("no keep-alive comment")
		}

		// Appends of the other store, one by one, one of them trying
		// to break out of its event and of the HTML.
		const n = 5
		evil := "<b>bold</b>\r\nevent: reset\rid: 999\n\ndata: x"
		go func() {
			for i := range n {
				text := fmt.Sprintf("live %d", i)
				if i == 2 {
					text = evil
				}
				if _, err := conv.AppendMessages(ctx, f.Conv, store.AssistantMessage(text)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var seen []int64
		var lastID string
		var all strings.Builder
		for len(seen) < n {
			ev := s.next(t)
			if ev.Event != "messages" {
				t.Fatalf("event %q (%q), want messages", ev.Event, ev.Data)
			}
			seqs := messageSeqs(t, ev.Data)
			seen = append(seen, seqs...)
			if want := fmt.Sprintf("%d.", seqs[len(seqs)-1]+1); !strings.HasPrefix(ev.ID, want) {
				t.Errorf("event id %q, want the position after its last message (%s…)", ev.ID, want)
			}
			lastID = ev.ID
			all.WriteString(ev.Data)
		}
		for i, seq := range seen {
			if seq != last+1+int64(i) {
				t.Fatalf("messages %v, want %d.. in order, each once", seen, last+1)
			}
		}
		if len(seen) != n {
			t.Fatalf("%d messages, want %d", len(seen), n)
		}
		got := all.String()
		if strings.Contains(got, "<b>") || !strings.Contains(got, "&lt;b&gt;bold&lt;/b&gt;") {
			t.Errorf("agent content not escaped: %q", got)
		}
		if !strings.Contains(got, "event: reset") {
			t.Errorf("the CR/LF content lost lines: %q", got)
		}

		// The client leaves: the stream and its feed end.
		s.cancel()
		waitNoLiveStreams(t)

		// Appends while nobody listens; a reconnect with Last-Event-ID
		// gets exactly them.
		if _, err := conv.AppendMessages(ctx, f.Conv, store.UserMessage("while away 1"), store.AssistantMessage("while away 2")); err != nil {
			t.Fatal(err)
		}
		s2 := openSSE(t, live+"?after=0", lastID) // the header wins over ?after
		var again []int64
		for len(again) < 2 {
			ev := s2.next(t)
			if ev.Event != "messages" {
				t.Fatalf("event %q, want messages", ev.Event)
			}
			again = append(again, messageSeqs(t, ev.Data)...)
		}
		if want := []int64{last + n + 1, last + n + 2}; fmt.Sprint(again) != fmt.Sprint(want) {
			t.Fatalf("resumed with messages %v, want %v", again, want)
		}

		// The same position as ?from (what the script sends after a
		// pause) resumes the same way.
		s3 := openSSE(t, live+"?from="+url.QueryEscape(lastID), "")
		if seqs := messageSeqs(t, s3.next(t).Data); seqs[0] != last+n+1 {
			t.Fatalf("?from resumed at %v", seqs)
		}
		s3.cancel()

		// The conversation is deleted: the stream says so and ends; a
		// reconnect is a 404, which stops an EventSource.
		if err := conv.Delete(ctx, f.Conv); err != nil {
			t.Fatal(err)
		}
		var ev sseEvent
		for ev = s2.next(t); ev.Event == "messages"; ev = s2.next(t) {
		}
		if ev.Event != "gone" {
			t.Fatalf("event %q after the delete, want gone", ev.Event)
		}
		select {
		case err := <-s2.done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the stream did not end after the delete")
		}
		resp, _ := get(t, srv, prefix+"/live/conversations/"+url.PathEscape(f.Conv)+"/messages")
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("live stream of a deleted conversation: %s", resp.Status)
		}
		waitNoLiveStreams(t)
	})
}

// TestLiveAgentAndGoverned follows an agent session's events and a
// governed session's state through server-sent events while another
// store writes them.
func TestLiveAgentAndGoverned(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		ro, f, loc := seeded(t, b)
		w, err := b.open(ctx, loc, f.Clock.Now, false)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		srv := newServer(t, ro, f, console.Options{})

		// Agent session: the page's live URL starts after its last event.
		_, page := get(t, srv, prefix+"/agents/session?app="+f.AgentKey.App+"&user="+f.AgentKey.User+"&session="+f.AgentKey.Session)
		m := regexp.MustCompile(`data-live-url="([^"]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatal("the agent session page has no live URL")
		}
		liveURL := strings.ReplaceAll(m[1], "&amp;", "&")
		s := openSSE(t, srv.URL+liveURL, "")
		if _, err := w.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: f.AgentKey,
			Event: store.AgentEvent{Data: []byte(`{"text":"<img src=x onerror=alert(1)>"}`)}}); err != nil {
			t.Fatal(err)
		}
		ev := s.next(t)
		if ev.Event != "events" || strings.Count(ev.Data, "<li id=\"e") != 1 {
			t.Fatalf("event %q with %q, want the one new agent event", ev.Event, ev.Data)
		}
		if strings.Contains(ev.Data, "<img") || !strings.Contains(ev.Data, "&lt;img") {
			t.Errorf("agent event data not escaped: %q", ev.Data)
		}
		s.cancel()

		// Governed session: each change is one JSON state; closing it
		// ends the stream.
		gov := w.Governance()
		cur, err := gov.Get(ctx, f.Governed)
		if err != nil {
			t.Fatal(err)
		}
		g := openSSE(t, srv.URL+prefix+"/live/governed/"+url.PathEscape(f.Governed)+"?after="+strconv.FormatInt(cur.FeedSeq(), 10), "")
		if _, err := gov.Use(ctx, store.UseRequest{SessionID: f.Governed, AgentID: "agent-7", Tools: []string{"read_file"}, RequestID: "live-1"}); err != nil {
			t.Fatal(err)
		}
		ev = g.next(t)
		if ev.Event != "governed" || !strings.Contains(ev.Data, fmt.Sprintf(`"calls_made":%d`, cur.CallsMade+1)) {
			t.Fatalf("event %q with %q, want the state after one more call", ev.Event, ev.Data)
		}
		if _, err := gov.Close(ctx, f.Governed); err != nil {
			t.Fatal(err)
		}
		for ev = g.next(t); ev.Event == "governed"; ev = g.next(t) {
		}
		if ev.Event != "end" {
			t.Fatalf("event %q after closing, want end", ev.Event)
		}
		g.cancel()
		waitNoLiveStreams(t)
	})
}
