package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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
		if !strings.Contains(body, "(in 1 h)") {
			t.Errorf("an active session's page does not say when it expires: %s", between(body, `id="expires"`, "</dd>"))
		}
		_, body = get(t, srv, prefix+"/governed")
		if n := strings.Count(body, ">in 1 h<"); n != 1 {
			t.Errorf("the list says \"in 1 h\" %d times, want once (the active session; the closed one does not expire)", n)
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

// TestOperatorFiguresEqualTheirLists: with rows of the default tenant and
// of tenant t1, every figure of the operator's overview and /metrics is
// of the default tenant's rows, equal to the list it links to (the active
// count to the list of active sessions, the conversations and runtime
// sessions to their lists), every conversation the overview names opens,
// no agent of t1 is in the calls chart, and the overview names t1 as a
// tenant it does not count.
func TestOperatorFiguresEqualTheirLists(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		st, clock := freshStore(t, b, func(st store.Store, clock *storetest.Clock) {
			ts, err := st.(store.Tenanter).Tenant("t1")
			if err != nil {
				t.Fatal(err)
			}
			write := func(gov store.Governance, conv store.Conversations, rt store.Runtime, prefix, agent string, active, closed int) {
				for i := range active + closed {
					id := fmt.Sprintf("%s-gov-%d", prefix, i)
					if _, err := gov.Create(ctx, store.CreateRequest{ID: id, AgentID: agent, AuthorizedTools: []string{"read"}, CallBudget: 10, TimeLimit: time.Hour}); err != nil {
						t.Fatal(err)
					}
					if _, err := gov.Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read", "read"}}); err != nil {
						t.Fatal(err)
					}
					if i >= active {
						if _, err := gov.Close(ctx, id); err != nil {
							t.Fatal(err)
						}
					}
				}
				for i := range 2 {
					id := fmt.Sprintf("%s-conv-%d", prefix, i)
					if _, err := conv.Save(ctx, store.NewConversation(id)); err != nil {
						t.Fatal(err)
					}
					clock.Advance(time.Second)
				}
				if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: prefix + "-rt", AgentAlias: agent, WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); err != nil {
					t.Fatal(err)
				}
			}
			write(st.Governance(), st.Conversations(), st.Runtime(), "def", "agent-default", 2, 1)
			// The tenant's rows come last: the most recent conversations.
			write(ts.Governance(), ts.Conversations(), ts.Runtime(), "t1", "agent-of-t1", 5, 2)
		})
		srv := newServer(t, st, fixture{Clock: clock}, console.Options{})
		var ov struct {
			Stats struct {
				Governed struct {
					Total    int64            `json:"total"`
					ByStatus map[string]int64 `json:"by_status"`
					Calls    int64            `json:"calls_made"`
				} `json:"governed"`
				Conversations struct {
					Total int64 `json:"total"`
				} `json:"conversations"`
				Runtime struct {
					Total int64 `json:"total"`
				} `json:"runtime"`
			} `json:"stats"`
			Top          []struct{ ID string } `json:"top_conversations_by_cost"`
			Recent       []struct{ ID string } `json:"recent_conversations"`
			OtherTenants []string              `json:"other_tenants"`
		}
		getJSON(t, srv, "/?format=json", &ov)
		count := func(path, field string) int64 {
			var doc map[string]json.RawMessage
			getJSON(t, srv, path, &doc)
			var items []json.RawMessage
			if err := json.Unmarshal(doc[field], &items); err != nil {
				t.Fatalf("%s: %s: %v", path, field, err)
			}
			return int64(len(items))
		}
		for _, c := range []struct {
			what       string
			figure     int64
			path, list string
		}{
			{"governed sessions", ov.Stats.Governed.Total, "/governed?format=json&limit=500", "sessions"},
			{"active", ov.Stats.Governed.ByStatus["active"], "/governed?format=json&limit=500&status=active", "sessions"},
			{"closed", ov.Stats.Governed.ByStatus["closed"], "/governed?format=json&limit=500&status=closed", "sessions"},
			{"conversations", ov.Stats.Conversations.Total, "/conversations?format=json&limit=500", "conversations"},
			{"runtime sessions", ov.Stats.Runtime.Total, "/runtime?format=json&limit=200", "sessions"},
		} {
			if n := count(c.path, c.list); n != c.figure {
				t.Errorf("the overview counts %d %s; the list it links to holds %d", c.figure, c.what, n)
			}
		}
		if ov.Stats.Governed.ByStatus["active"] != 2 || ov.Stats.Governed.Calls != 6 || ov.Stats.Conversations.Total != 2 || ov.Stats.Runtime.Total != 1 {
			t.Errorf("the overview's figures are not the default tenant's: %+v", ov.Stats)
		}
		for _, cv := range append(ov.Top, ov.Recent...) {
			if resp, _ := get(t, srv, prefix+"/conversations/"+url.PathEscape(cv.ID)); resp.StatusCode != 200 {
				t.Errorf("the overview names conversation %s, whose page answers %d", cv.ID, resp.StatusCode)
			}
		}
		if len(ov.OtherTenants) != 1 || ov.OtherTenants[0] != "t1" {
			t.Errorf("other tenants %v, want [t1]", ov.OtherTenants)
		}
		_, body := get(t, srv, prefix+"/")
		if strings.Contains(body, "agent-of-t1") {
			t.Errorf("the overview shows an agent of tenant t1 (calls by agent)")
		}
		if !strings.Contains(body, `id="scope"`) {
			t.Errorf("the overview does not say which rows it counts")
		}
		_, metrics := get(t, srv, prefix+"/metrics")
		for _, want := range []string{
			`sessionstore_governed_sessions{status="active"} 2`,
			`sessionstore_governed_sessions{status="closed"} 1`,
			`sessionstore_governed_calls_made 6`,
			`sessionstore_conversations{state="active"} 2`,
			`sessionstore_runtime_sessions{agent="agent-default"} 1`,
		} {
			if !strings.Contains(metrics, want+"\n") {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		if strings.Contains(metrics, "agent-of-t1") {
			t.Errorf("/metrics counts tenant t1's rows")
		}
	})
}

// getJSON decodes the JSON twin at path (under the prefix) into v.
func getJSON(t *testing.T, srv *httptest.Server, path string, v any) {
	t.Helper()
	resp, body := get(t, srv, prefix+path)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d", path, resp.StatusCode)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestHistoryTreeDrawsRunsUnderTheirParents: on a conversation's and an
// agent session's page, every node of the history tree is drawn under
// the node its JSON names as parent (p has forks f1 and f2; f1 is forked
// again and rewound: its superseded run is f1's child, drawn under f2
// before), and a superseded run links to the page of the session it was
// taken from.
func TestHistoryTreeDrawsRunsUnderTheirParents(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		key := store.SessionKey{App: "app", User: "u", Session: "p"}
		with := func(s string) store.SessionKey { k := key; k.Session = s; return k }
		st, clock := freshStore(t, b, func(st store.Store, clock *storetest.Clock) {
			c := st.Conversations()
			if _, err := c.Save(ctx, store.NewConversation("p")); err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if _, err := c.AppendMessages(ctx, "p", store.UserMessage(fmt.Sprint("m", i))); err != nil {
					t.Fatal(err)
				}
			}
			as := st.AgentSessions()
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: []byte(fmt.Sprint(i))}}); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []struct {
				id string
				at int64
			}{{"f1", 2}, {"f2", 3}} {
				if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "p", At: f.at, NewID: f.id}); err != nil {
					t.Fatal(err)
				}
				if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: f.at, Session: f.id}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 3 {
				if _, err := c.AppendMessages(ctx, "f1", store.UserMessage(fmt.Sprint("f1-", i))); err != nil {
					t.Fatal(err)
				}
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: with("f1"), Event: store.AgentEvent{Data: []byte(fmt.Sprint(i))}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "f1", At: 4, NewID: "g"}); err != nil {
				t.Fatal(err)
			}
			if _, err := as.Fork(ctx, store.ForkRequest{Key: with("f1"), At: 4, Session: "g"}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: "f1", To: 3}); err != nil {
				t.Fatal(err)
			}
			if _, err := as.Rewind(ctx, store.RewindRequest{Key: with("f1"), To: 3}); err != nil {
				t.Fatal(err)
			}
		})
		srv := newServer(t, st, fixture{Clock: clock}, console.Options{})

		var conv struct {
			Tree []struct {
				Depth int                    `json:"depth"`
				Node  store.ConversationNode `json:"node"`
			} `json:"tree"`
		}
		getJSON(t, srv, "/conversations/f1?format=json", &conv)
		var depths []int
		var ids, parents, names []string
		for _, r := range conv.Tree {
			depths, ids, parents = append(depths, r.Depth), append(ids, r.Node.ID), append(parents, r.Node.Parent)
			names = append(names, r.Node.Status+":"+r.Node.ID+"<"+r.Node.SupersededOf)
		}
		checkDrawn(t, "conversation f1", depths, ids, parents, names)
		_, body := get(t, srv, prefix+"/conversations/f1")
		if !strings.Contains(body, `<a href="/console/conversations/f1">(superseded run of f1)</a>`) {
			t.Errorf("the superseded run of f1 has no link to f1:\n%s", between(body, `id="tree"`, "</ul>"))
		}

		var agent struct {
			Tree []struct {
				Depth int               `json:"depth"`
				Node  store.LineageNode `json:"node"`
			} `json:"tree"`
		}
		getJSON(t, srv, "/agents/session?app=app&user=u&session=f1&format=json", &agent)
		depths, ids, parents, names = nil, nil, nil, nil
		for _, r := range agent.Tree {
			p := ""
			if r.Node.Parent != 0 {
				p = fmt.Sprint(r.Node.Parent)
			}
			depths, ids, parents = append(depths, r.Depth), append(ids, fmt.Sprint(r.Node.ID)), append(parents, p)
			names = append(names, r.Node.Status+":"+r.Node.Key.Session)
		}
		checkDrawn(t, "agent session f1", depths, ids, parents, names)
		_, body = get(t, srv, prefix+"/agents/session?app=app&user=u&session=f1")
		tree := between(body, `id="tree"`, "</ul>")
		if !strings.Contains(tree, `superseded"><a href="/console/agents/session?app=app&amp;session=f1&amp;user=u">f1</a>`) {
			t.Errorf("the superseded run of f1 has no link to f1:\n%s", tree)
		}
	})
}

// checkDrawn fails t when a row of a tree drawn by depth (each row one
// step deeper than its parent) would sit under another row than the
// parent its JSON names, or its depth is not its parent's plus one.
func checkDrawn(t *testing.T, what string, depths []int, ids, parents, names []string) {
	t.Helper()
	if len(ids) < 5 {
		t.Fatalf("%s: tree of %d nodes: %v", what, len(ids), names)
	}
	for i := range ids {
		under := ""
		for j := i - 1; j >= 0 && depths[i] > 0; j-- {
			if depths[j] == depths[i]-1 {
				under = ids[j]
				break
			}
		}
		if under != parents[i] {
			t.Errorf("%s: %s is drawn under %s; its parent is %s (tree %v)", what, names[i], under, parents[i], names)
		}
	}
}

// TestAuditPagesEveryChain: /audit pages through the head of every chain
// Verify checks — the agents' own and the governed sessions' — each once,
// in (agent, chain) order, and shows the digest audit verify prints.
func TestAuditPagesEveryChain(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		st, f, _ := seeded(t, b)
		srv := newServer(t, st, f, console.Options{})
		want, err := st.Audit().Heads(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		report, err := st.Audit().Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sessionChains := 0
		for _, h := range want {
			if h.Chain != "" {
				sessionChains++
			}
		}
		if sessionChains == 0 || len(want) < 4 {
			t.Fatalf("the fixture has %d chains, %d of sessions: too few to tell", len(want), sessionChains)
		}
		var got []store.AuditHead
		path := "/audit?format=json&limit=2"
		for pages := 0; path != ""; pages++ {
			if pages > len(want) {
				t.Fatal("paging does not end")
			}
			var doc struct {
				Report        store.AuditReport `json:"report"`
				Heads         []store.AuditHead `json:"heads"`
				NextHead      string            `json:"next_head"`
				NextHeadChain string            `json:"next_head_chain"`
			}
			getJSON(t, srv, path, &doc)
			if doc.Report.Digest != report.Digest {
				t.Fatalf("the page's digest %s, Verify's %s", doc.Report.Digest, report.Digest)
			}
			got = append(got, doc.Heads...)
			path = ""
			if doc.NextHead != "" {
				path = "/audit?format=json&limit=2&heads_after=" + url.QueryEscape(doc.NextHead) + "&heads_after_chain=" + url.QueryEscape(doc.NextHeadChain)
			}
		}
		if gj, wj := fmt.Sprint(got), fmt.Sprint(want); gj != wj {
			t.Errorf("/audit pages through the heads\n%s\nwant every chain's\n%s", gj, wj)
		}
		_, body := get(t, srv, prefix+"/audit")
		if !strings.Contains(body, report.Digest) || !strings.Contains(body, "session <a href=\"/console/audit?session="+f.Governed+"\">") {
			t.Errorf("/audit shows no digest or no session chain:\n%s", between(body, `id="heads"`, "</table>"))
		}
	})
}
