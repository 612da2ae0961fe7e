package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/console"
	"github.com/agentstore/sessionstore/store"
)

// TestAgentTree: an agent session's page draws its fork tree (the
// session it was forked from, its forks, the events a rewind superseded)
// and lists the ranges compaction records summarise; the JSON twin
// carries both.
func TestAgentTree(t *testing.T) {
	st, f, loc := seeded(t, sqliteBackend)
	ctx := context.Background()
	w, err := sqliteBackend.open(ctx, loc, f.Clock.Now, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	as := w.AgentSessions()
	key := store.SessionKey{App: "tree", User: "u", Session: "root"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: json.RawMessage(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 3},
		Summary: store.AgentEvent{ID: "sum", Data: json.RawMessage(`"s"`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 7, Session: "branch"}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Rewind(ctx, store.RewindRequest{Key: key, To: 2}); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, st, f, console.Options{})
	_, body := get(t, srv, prefix+"/agents/session?app=tree&user=u&session=branch")
	for _, want := range []string{
		`<ul class="tree" id="tree">`,
		`<a href="/console/agents/session?app=tree&amp;session=root&amp;user=u">root</a> · live · events 1–2`,
		`<a href="/console/agents/session?app=tree&amp;session=root&amp;user=u">root</a> · superseded · forked at #2 · events 3–7 (superseded by a rewind)`,
		`class="d2 live current"`,
		`branch</a> · live · forked at #7 · no events of its own · this session`,
		`events #1–#3 summarised by the compaction record <a href="#e7">#7</a>`,
		`compaction record: summarises #1–#3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body[strings.Index(body, "<ul class"):strings.Index(body, "<h2>Merged")])
		}
	}
	_, body = get(t, srv, prefix+"/agents/session?app=tree&user=u&session=branch&format=json")
	var doc struct {
		Tree []struct {
			Depth int               `json:"depth"`
			Node  store.LineageNode `json:"node"`
		} `json:"tree"`
		Summarised []struct {
			Record int64                 `json:"record"`
			Range  store.CompactionRange `json:"range"`
		} `json:"summarised"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tree) != 3 || doc.Tree[2].Depth != 2 || !doc.Tree[2].Node.Current ||
		len(doc.Summarised) != 1 || doc.Summarised[0].Record != 7 || doc.Summarised[0].Range != (store.CompactionRange{From: 1, To: 3}) {
		t.Fatalf("JSON twin %s", body)
	}
	// A session without forks or records draws neither section.
	_, body = get(t, srv, prefix+"/agents/session?app="+f.AgentKey.App+"&user="+f.AgentKey.User+"&session="+f.AgentKey.Session)
	if strings.Contains(body, `id="tree"`) || strings.Contains(body, `id="summarised"`) {
		t.Error("a plain session's page draws a tree or summarised ranges")
	}
}

// TestConversationTree: a conversation's page draws its fork tree (the
// conversation it was forked from, the messages a rewind superseded) and
// the ranges its compaction records summarise; the JSON twin carries it.
func TestConversationTree(t *testing.T) {
	st, f, loc := seeded(t, sqliteBackend)
	ctx := context.Background()
	w, err := sqliteBackend.open(ctx, loc, f.Clock.Now, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := w.Conversations()
	root := store.NewConversation("tree-root")
	for _, s := range []string{"a", "b", "c", "d"} {
		root.Messages = append(root.Messages, store.UserMessage(s))
	}
	if _, err := c.Save(ctx, root); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "tree-root", At: 2, NewID: "tree-branch"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, store.ConversationCompactRequest{ID: "tree-branch", Range: store.CompactionRange{From: 0, To: 1},
		Summary: store.AssistantMessage("s")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: "tree-root", To: 0}); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, st, f, console.Options{})
	_, body := get(t, srv, prefix+"/conversations/tree-branch")
	for _, want := range []string{
		`<ul class="tree" id="tree">`,
		`<a href="/console/conversations/tree-root">tree-root</a> · live · 1 message`,
		`<a href="/console/conversations/tree-root">(superseded run of tree-root)</a> · superseded · forked at #0 · 3 messages (superseded by a rewind)`,
		`tree-branch</a> · live · forked at #2 · 4 messages · summarises 0–1 at #3 · this conversation`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
	// The branch read messages the rewind superseded: it now reads them
	// from the superseded run, one level down.
	_, body = get(t, srv, prefix+"/conversations/tree-branch?format=json")
	var doc struct {
		Tree []struct {
			Depth int                    `json:"depth"`
			Node  store.ConversationNode `json:"node"`
		} `json:"tree"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tree) != 3 || doc.Tree[2].Node.ID != "tree-branch" || !doc.Tree[2].Node.Current || doc.Tree[2].Depth != 2 {
		t.Fatalf("JSON twin %s", body)
	}
}
