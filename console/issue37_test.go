package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// freshStore opens a new writable store of b, lets write fill it, and
// returns it reopened read-only with its clock.
func freshStore(t *testing.T, b backend, write func(st store.Store, clock *storetest.Clock)) (store.Store, *storetest.Clock) {
	t.Helper()
	ctx := context.Background()
	loc := b.newLocation(t)
	clock := storetest.NewClock()
	w, err := b.open(ctx, loc, clock.Now, false)
	if err != nil {
		t.Fatal(err)
	}
	write(w, clock)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := b.open(ctx, loc, clock.Now, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro, clock
}

// rawControls returns the control characters of body that no page may
// hold (all but tab, newline and carriage return).
func rawControls(body string) []rune {
	var out []rune
	for _, r := range body {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			out = append(out, r)
		}
	}
	return out
}

// TestControlBytesAreEscapedOnEveryPage: text holding ESC and BEL (a
// message, a conversation's name, an agent event, a declared intent)
// reaches no page as raw bytes, /search included: each shows as \x1b and
// \x07, as sessionctl prints it. The JSON twin keeps the text exact.
func TestControlBytesAreEscapedOnEveryPage(t *testing.T) {
	const hostile = "ring\x07 \x1b[2J\x1b]0;pwned\x07 marker"
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		key := store.SessionKey{App: "app", User: "u", Session: "s-ctl"}
		st, clock := freshStore(t, b, func(st store.Store, clock *storetest.Clock) {
			conv := store.NewConversation("ctl-conv")
			conv.Config.Name = "name " + hostile
			if _, err := st.Conversations().Save(ctx, conv); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Conversations().AppendMessages(ctx, "ctl-conv", store.UserMessage("text "+hostile)); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "ctl-gov", AgentID: "agent-ctl", CallBudget: 1, TimeLimit: time.Hour,
				DeclaredIntent: "intent " + hostile}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
				Event: store.AgentEvent{Data: []byte(`{"text":"event ` + strings.ReplaceAll(strings.ReplaceAll(hostile, "\x1b", `\u001b`), "\x07", `\u0007`) + `"}`)}}); err != nil {
				t.Fatal(err)
			}
		})
		srv := newServer(t, st, fixture{Clock: clock}, console.Options{})
		for _, path := range []string{
			"/search?q=marker",
			"/search?q=" + url.QueryEscape("marker \x1b"),
			"/conversations/ctl-conv",
			"/conversations/ctl-conv/messages/0",
			"/conversations",
			"/",
			"/governed",
			"/governed/ctl-gov",
			"/agents/session?app=app&user=u&session=s-ctl",
		} {
			resp, body := get(t, srv, prefix+path)
			if resp.StatusCode != 200 {
				t.Errorf("%s: status %d", path, resp.StatusCode)
				continue
			}
			if bad := rawControls(body); len(bad) > 0 {
				t.Errorf("%s: the page holds %d raw control characters (%q)", path, len(bad), string(bad))
			}
		}
		_, body := get(t, srv, prefix+"/search?q=marker")
		if !strings.Contains(body, `ring\x07 \x1b[2J\x1b]0;pwned\x07`) {
			t.Errorf("/search does not show the control characters as \\x1b and \\x07:\n%s", body)
		}
		_, body = get(t, srv, prefix+"/conversations/ctl-conv/messages/0?format=json")
		if !strings.Contains(body, `ring\u0007 \u001b[2J`) {
			t.Errorf("the JSON twin changed the text: %s", body)
		}
	})
}

// TestTrimmedPagerAndClosedExpiry: a trimmed conversation's pager offers
// no older page when no message precedes the page (its first message is
// not position 0), and asking for one shows no message of the page again;
// a closed governed session shows no "expires in" on its page or in the
// list.
func TestTrimmedPagerAndClosedExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		st, clock := freshStore(t, b, func(st store.Store, clock *storetest.Clock) {
			if _, err := st.Conversations().Save(ctx, store.NewConversation("trimmed")); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if _, err := st.Conversations().AppendMessages(ctx, "trimmed", store.UserMessage(fmt.Sprintf("msg-%02d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Conversations().TrimMessages(ctx, "trimmed", 3); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"open-1", "closed-1"} {
				if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: id, AgentID: "agent-x", CallBudget: 1, TimeLimit: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.Governance().Close(ctx, "closed-1"); err != nil {
				t.Fatal(err)
			}
		})
		srv := newServer(t, st, fixture{Clock: clock}, console.Options{})
		_, body := get(t, srv, prefix+"/conversations/trimmed")
		for _, want := range []string{"msg-07", "msg-08", "msg-09"} {
			if !strings.Contains(body, want) {
				t.Fatalf("the latest page lacks %s", want)
			}
		}
		if strings.Contains(body, "← older") || strings.Contains(body, ">first<") {
			t.Errorf("the pager of a conversation trimmed to its last 3 messages offers older pages:\n%s", pagerOf(body))
		}
		_, body = get(t, srv, prefix+"/conversations/trimmed?limit=2")
		if !strings.Contains(body, "← older") || !strings.Contains(body, "before=8") {
			t.Errorf("a page with an older message before it offers no older page:\n%s", pagerOf(body))
		}
		_, body = get(t, srv, prefix+"/conversations/trimmed?limit=2&before=8")
		if !strings.Contains(body, "msg-07") || strings.Contains(body, "msg-08") || strings.Contains(body, "← older") {
			t.Errorf("the older page of a trimmed conversation:\n%s", pagerOf(body))
		}
		_, body = get(t, srv, prefix+"/conversations/trimmed?before=1")
		if strings.Contains(body, "msg-07") {
			t.Errorf("?before=1 of a conversation trimmed to 7..9 shows its messages again")
		}

		_, body = get(t, srv, prefix+"/governed/closed-1")
		if strings.Contains(body, "expires in") || strings.Contains(body, "(in ") {
			t.Errorf("a closed session's page says it expires: %s", between(body, `id="expires"`, "</dd>"))
		}
		_, body = get(t, srv, prefix+"/governed/open-1")
		if !strings.Contains(body, "(in 1h0m0s)") {
			t.Errorf("an active session's page does not say when it expires: %s", between(body, `id="expires"`, "</dd>"))
		}
		_, body = get(t, srv, prefix+"/governed")
		if n := strings.Count(body, ">in 1h0m0s<"); n != 1 {
			t.Errorf("the list says \"in 1h0m0s\" %d times, want once (the active session; the closed one does not expire)", n)
		}
	})
}

// pagerOf is the conversation page's pager, for failure messages.
func pagerOf(body string) string { return between(body, `<p class="pager">`, "</p>") }

// between is the part of s from the first from to the next to after it.
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		return s[i:]
	}
	return s[i : i+j]
}
