package console_test

import (
	"context"
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
