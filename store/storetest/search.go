package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunSearch checks store.Searcher where the backend's Store implements it:
// ranking on a fixed corpus, filters, paging without gaps or repeats, CJK
// text and short terms, snippets and windows, deleted content never found,
// cross-session reads, the index check and reindex, and an index equal to
// the content after a second process is killed while it writes.
func RunSearch(t *testing.T, h Harness) {
	if _, ok := newEnv(t, h).st.(store.Searcher); !ok {
		t.Skip("the backend's Store does not implement store.Searcher")
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Ranking", testSearchRanking},
		{"Filters", testSearchFilters},
		{"Paging", testSearchPaging},
		{"CJKAndShortTerms", testSearchCJK},
		{"SnippetAndWindow", testSearchSnippetWindow},
		{"DeletedNeverFound", testSearchDeleted},
		{"UnfoldedUnderSnapshot", testSearchUnfoldedSnapshot},
		{"UnfoldedScore", testSearchUnfoldedScore},
		{"LargeTermPages", testSearchLargeTermPages},
		{"History", testSearchHistory},
		{"BadInput", testSearchBadInput},
		{"CheckAndReindex", testSearchReindex},
		{"KilledWriter", testSearchKilledWriter},
		{"ReindexUnderWrites", testSearchReindexUnderWrites},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t, h)) })
	}
}

func (e *env) searcher() store.Searcher { return e.st.(store.Searcher) }

func (e *env) search(q store.SearchQuery) store.SearchResult {
	e.t.Helper()
	r, err := e.searcher().Search(e.ctx, q)
	if err != nil {
		e.t.Fatalf("Search(%+v): %v", q, err)
	}
	return r
}

// hitKeys names hits as "session#seq" (or "session@ref").
func hitKeys(hits []store.SearchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		if h.Ref != "" {
			out[i] = h.SessionID + "@" + h.Ref
		} else {
			out[i] = h.SessionID + "#" + strconv.FormatInt(h.Seq, 10)
		}
	}
	return out
}

func text(role, s string) store.Message {
	return store.Message{Role: role, Content: []store.ContentBlock{store.TextBlock(s)}}
}

func (e *env) newConv(id string, msgs ...store.Message) {
	e.t.Helper()
	e.save(store.NewConversation(id))
	if len(msgs) > 0 {
		e.appendMsgs(id, msgs...)
	}
}

func adkEvent(author, txt string) json.RawMessage {
	return raw(map[string]any{"author": author, "content": map[string]any{"role": author, "parts": []any{map[string]any{"text": txt}}}})
}

func testSearchRanking(t *testing.T, e *env) {
	e.newConv("rank-a", text("user", "kafka kafka kafka lag"))
	e.newConv("rank-b", text("user", "we looked at the broker and at kafka once, then at many other things entirely unrelated to queues"))
	e.newConv("rank-c", text("user", "kafka partitions and kafka consumers"))
	e.newConv("rank-d", text("user", "nothing to see here"))
	got := hitKeys(e.search(store.SearchQuery{Query: "kafka"}).Hits)
	want := []string{"rank-a#0", "rank-c#0", "rank-b#0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ranked hits = %v, want %v", got, want)
	}
	// Every term must occur.
	got = hitKeys(e.search(store.SearchQuery{Query: "kafka consumers"}).Hits)
	if fmt.Sprint(got) != "[rank-c#0]" {
		t.Fatalf("two terms: %v", got)
	}
	// Case does not matter; substrings match.
	got = hitKeys(e.search(store.SearchQuery{Query: "KAFK", Order: store.SearchByTime}).Hits)
	if len(got) != 3 {
		t.Fatalf("substring, any case: %v", got)
	}
	if r := e.search(store.SearchQuery{Query: "zookeeper"}); len(r.Hits) != 0 || r.Next != "" {
		t.Fatalf("no match: %+v", r)
	}
}

func testSearchFilters(t *testing.T, e *env) {
	e.newConv("f-conv", text("user", "deploy the canary"))
	if err := e.conv().PutArtifacts(e.ctx, "f-conv", store.Artifact{URI: "a3s://out/canary-log", ID: "art-1", ToolName: "shell", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	k1 := store.SessionKey{App: "shop", User: "alice", Session: "s1"}
	k2 := store.SessionKey{App: "shop", User: "bob", Session: "s2"}
	k3 := store.SessionKey{App: "bank", User: "alice", Session: "s3"}
	for _, k := range []store.SessionKey{k1, k2, k3} {
		e.asCreate(k, store.ScopedState{})
		e.asAppend(k, store.AgentEvent{Data: adkEvent("user", "canary for "+k.User)}, store.ScopedState{}, 0)
	}
	count := func(q store.SearchQuery) []string {
		t.Helper()
		q.Query = "canary"
		q.Order = store.SearchByTime
		return hitKeys(e.search(q).Hits)
	}
	if got := count(store.SearchQuery{}); len(got) != 5 {
		t.Fatalf("all: %v", got)
	}
	if got := count(store.SearchQuery{Kinds: []store.SearchKind{store.SearchArtifact}}); fmt.Sprint(got) != "[f-conv@a3s://out/canary-log]" {
		t.Fatalf("kind artifact: %v", got)
	}
	if got := count(store.SearchQuery{Facet: "conversations"}); len(got) != 2 {
		t.Fatalf("facet conversations: %v", got)
	}
	if got := count(store.SearchQuery{Facet: "agent_sessions"}); len(got) != 3 {
		t.Fatalf("facet agent_sessions: %v", got)
	}
	if got := count(store.SearchQuery{App: "shop"}); fmt.Sprint(got) != "[s2#1 s1#1]" {
		t.Fatalf("app shop: %v", got)
	}
	if got := count(store.SearchQuery{App: "shop", User: "alice"}); fmt.Sprint(got) != "[s1#1]" {
		t.Fatalf("app shop user alice: %v", got)
	}
	if got := count(store.SearchQuery{User: "alice"}); len(got) != 2 {
		t.Fatalf("user alice: %v", got)
	}
	if got := count(store.SearchQuery{Session: "f-conv"}); len(got) != 2 {
		t.Fatalf("session f-conv: %v", got)
	}
	cut := e.clock.Now().Add(-time.Minute)
	if got := count(store.SearchQuery{Until: cut}); len(got) != 2 {
		t.Fatalf("until: %v", got)
	}
	if got := count(store.SearchQuery{Since: cut}); len(got) != 3 {
		t.Fatalf("since: %v", got)
	}
	if got := count(store.SearchQuery{Facet: "conversations", App: "shop"}); len(got) != 0 {
		t.Fatalf("conversations have no app: %v", got)
	}
}

func testSearchPaging(t *testing.T, e *env) {
	n := 13 + 14*searchScale // 27 under -race, else 55
	for i := range n {
		// Different lengths, so that ranks differ, and some ties.
		e.newConv(fmt.Sprintf("page-%02d", i), text("user", "needle "+strings.Repeat("hay ", i%7)))
		if i%5 == 0 {
			e.clock.Advance(time.Second)
		}
	}
	e.newConv("page-none", text("user", "nothing"))
	for _, order := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
		for _, q := range []string{"needle", "ne"} { // indexed, and scanned
			seen := map[string]bool{}
			var all []store.SearchHit
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > n {
					t.Fatalf("%s %q: paging does not end", order, q)
				}
				r := e.search(store.SearchQuery{Query: q, Order: order, Limit: 7, Cursor: cursor})
				for _, h := range r.Hits {
					k := hitKeys([]store.SearchHit{h})[0]
					if seen[k] {
						t.Fatalf("%s %q: %s returned twice", order, q, k)
					}
					seen[k] = true
					all = append(all, h)
				}
				if r.Next == "" {
					break
				}
				cursor = r.Next
			}
			if len(all) != n {
				t.Fatalf("%s %q: %d hits over all pages, want %d", order, q, len(all), n)
			}
			for i := 1; i < len(all); i++ {
				a, b := all[i-1], all[i]
				if order == store.SearchByTime && a.At.Before(b.At) {
					t.Fatalf("time order broken at %d: %v before %v", i, a.At, b.At)
				}
				if order == store.SearchByRank && a.Score < b.Score {
					t.Fatalf("rank order broken at %d: %v < %v", i, a.Score, b.Score)
				}
			}
		}
	}
}

func testSearchCJK(t *testing.T, e *env) {
	e.newConv("cjk-1", text("user", "私は東京都に住んでいます"))
	e.newConv("cjk-2", text("user", "大阪府の天気は晴れ"))
	e.newConv("cjk-3", text("user", "东京 is Tokyo in Chinese"))
	for _, tc := range []struct {
		q       string
		want    string
		scanned bool
	}{
		{"東京都", "[cjk-1#0]", false},
		{"住んでいます", "[cjk-1#0]", false},
		{"東京", "[cjk-1#0]", true},        // two characters: no trigram
		{"京", "[cjk-3#0 cjk-1#0]", true}, // 东京 has it too
		{"晴", "[cjk-2#0]", true},
		{"东京", "[cjk-3#0]", true},
		{"東京都 住", "[cjk-1#0]", false}, // a short term with an indexed one
		{"名古屋", "[]", false},
		{"名古", "[]", true},
	} {
		r := e.search(store.SearchQuery{Query: tc.q})
		if got := fmt.Sprint(hitKeys(r.Hits)); got != tc.want || r.Scanned != tc.scanned || r.Partial {
			t.Errorf("%q: %s scanned=%v partial=%v; want %s scanned=%v", tc.q, got, r.Scanned, r.Partial, tc.want, tc.scanned)
		}
	}
	// A scan that stops at its limit says so.
	r := e.search(store.SearchQuery{Query: "京", ScanLimit: 1})
	if !r.Scanned || !r.Partial {
		t.Errorf("scan limited to the newest item: scanned=%v partial=%v", r.Scanned, r.Partial)
	}
	// Latin two-letter terms go through the same fallback.
	r = e.search(store.SearchQuery{Query: "is"})
	if fmt.Sprint(hitKeys(r.Hits)) != "[cjk-3#0]" || !r.Scanned {
		t.Errorf("%q: %v scanned=%v", "is", hitKeys(r.Hits), r.Scanned)
	}
}

func testSearchSnippetWindow(t *testing.T, e *env) {
	var msgs []store.Message
	for i := range 10 {
		s := fmt.Sprintf("message %d", i)
		if i == 5 {
			s = strings.Repeat("padding ", 40) + "the Quarterly REPORT is <b>late</b> " + strings.Repeat("tail ", 40)
		}
		msgs = append(msgs, text("user", s))
	}
	msgs = append(msgs, store.Message{Role: "assistant", Content: []store.ContentBlock{
		store.ToolUseBlock("call-1", "fetch_report", raw(map[string]any{"quarter": "q3", "format": "<table> & <tr>"})),
	}})
	e.newConv("win", msgs...)
	r := e.search(store.SearchQuery{Query: "quarterly report", Window: 2})
	if len(r.Hits) != 1 {
		t.Fatalf("hits: %v", hitKeys(r.Hits))
	}
	h := r.Hits[0]
	if h.Seq != 5 || h.Role != "user" || h.Kind != store.SearchMessage {
		t.Fatalf("hit %+v", h)
	}
	sn := h.Snippet
	if len(sn.Matches) != 2 || !sn.Before || !sn.After || len(sn.Text) > store.SnippetWidth {
		t.Fatalf("snippet %+v", sn)
	}
	for i, want := range []string{"Quarterly", "REPORT"} {
		m := sn.Matches[i]
		if got := sn.Text[m.Start:m.End]; got != want {
			t.Fatalf("match %d = %q, want %q", i, got, want)
		}
	}
	if !strings.Contains(sn.Text, "<b>late</b>") {
		t.Fatalf("snippet text is not the stored text as it is: %q", sn.Text)
	}
	var seqs []int64
	for _, it := range h.Window {
		seqs = append(seqs, it.Seq)
	}
	if fmt.Sprint(seqs) != "[3 4 5 6 7]" || h.Window[0].Text != "message 3" {
		t.Fatalf("window %v", h.Window)
	}
	// Tool names and arguments are indexed.
	r = e.search(store.SearchQuery{Query: "fetch_report q3"})
	if fmt.Sprint(hitKeys(r.Hits)) != "[win#10]" {
		t.Fatalf("tool call: %v", hitKeys(r.Hits))
	}
	// A tool input holds "<" as the character, whatever escape the caller's
	// json.Marshal wrote: stored, read back and in a snippet alike.
	r = e.search(store.SearchQuery{Query: "<table> &"})
	if len(r.Hits) != 1 || !strings.Contains(r.Hits[0].Snippet.Text, `"<table> & <tr>"`) {
		t.Fatalf("tool input with HTML characters: %+v", r.Hits)
	}
	if in := string(e.load("win").Messages[10].Content[0].Input); !strings.Contains(in, `"<table> & <tr>"`) {
		t.Fatalf("stored tool input %s: the characters are escaped", in)
	}
	// The window of an event hit.
	k := store.SessionKey{App: "w", User: "u", Session: "s"}
	e.asCreate(k, store.ScopedState{})
	for i := range 4 {
		e.asAppend(k, store.AgentEvent{Data: adkEvent("model", fmt.Sprintf("turn %d of the walrus talk", i))}, store.ScopedState{}, 0)
	}
	r = e.search(store.SearchQuery{Query: "turn 0 of", Window: 1, App: "w"})
	if len(r.Hits) != 1 || r.Hits[0].Seq != 1 || len(r.Hits[0].Window) != 2 || r.Hits[0].Window[1].Seq != 2 || r.Hits[0].Event != nil {
		t.Fatalf("event window: %+v", r.Hits)
	}
	// The stored events come with the hits when asked for, in every path
	// (index, and a scan of short terms).
	for _, q := range []string{"walrus", "of"} {
		r = e.search(store.SearchQuery{Query: q, App: "w", IncludeEvents: true, Order: store.SearchByTime})
		if len(r.Hits) != 4 {
			t.Fatalf("%q: %d hits", q, len(r.Hits))
		}
		want := e.asGet(k).Events
		for i, h := range r.Hits {
			w := want[len(want)-1-i]
			if h.Event == nil || h.Event.ID != w.ID || h.Event.Seq != w.Seq || !h.Event.Timestamp.Equal(w.Timestamp) || string(h.Event.Data) != string(w.Data) {
				t.Fatalf("%q: hit %d event %+v, want %+v", q, i, h.Event, w)
			}
		}
	}
	r = e.search(store.SearchQuery{Query: "quarterly", IncludeEvents: true})
	if len(r.Hits) != 1 || r.Hits[0].Event != nil {
		t.Fatalf("a message hit has no event: %+v", r.Hits)
	}
}

func testSearchDeleted(t *testing.T, e *env) {
	found := func(q string) int {
		t.Helper()
		return len(e.search(store.SearchQuery{Query: q}).Hits)
	}
	e.newConv("del-1", text("user", "alpha-token one"), text("user", "bravo-token two"), text("user", "charlie-token three"))
	if found("alpha-token") != 1 || found("charlie-token") != 1 {
		t.Fatal("not indexed")
	}
	if _, err := e.conv().PopMessage(e.ctx, "del-1"); err != nil {
		t.Fatal(err)
	}
	if n := found("charlie-token"); n != 0 {
		t.Fatalf("popped message found %d times", n)
	}
	if _, err := e.conv().TrimMessages(e.ctx, "del-1", 1); err != nil {
		t.Fatal(err)
	}
	if found("alpha-token") != 0 || found("bravo-token") != 1 {
		t.Fatal("trimmed message still found, or kept one lost")
	}
	// Save replaces the history.
	c := e.load("del-1")
	c.Messages = []store.Message{text("user", "delta-token")}
	e.save(c)
	if found("bravo-token") != 0 || found("delta-token") != 1 {
		t.Fatal("a replaced history is still found")
	}
	if _, err := e.conv().AppendTraces(e.ctx, "del-1", store.TraceEvent{Kind: "tool", Name: "echo-trace-name"}); err != nil {
		t.Fatal(err)
	}
	if found("echo-trace-name") != 1 {
		t.Fatal("trace name not indexed")
	}
	if err := e.conv().Delete(e.ctx, "del-1"); err != nil {
		t.Fatal(err)
	}
	if found("delta-token") != 0 || found("echo-trace-name") != 0 {
		t.Fatal("a deleted conversation is still found")
	}
	k := store.SessionKey{App: "del", User: "u", Session: "s"}
	e.asCreate(k, store.ScopedState{})
	e.asAppend(k, store.AgentEvent{Data: adkEvent("user", "echo-token")}, store.ScopedState{}, 0)
	if found("echo-token") != 1 {
		t.Fatal("event not indexed")
	}
	if err := e.as().DeleteSession(e.ctx, k); err != nil {
		t.Fatal(err)
	}
	if found("echo-token") != 0 {
		t.Fatal("a deleted agent session's event is still found")
	}
	if r := e.search(store.SearchQuery{Query: "to"}); len(r.Hits) != 0 {
		t.Fatalf("scan finds deleted content: %v", hitKeys(r.Hits))
	}
	// Lineage: a rewind supersedes what follows its point, and a deleted
	// parent's events live on only in its fork (which reads them), so
	// neither is found as a session's content.
	p := store.SessionKey{App: "del", User: "u", Session: "parent"}
	e.asCreate(p, store.ScopedState{})
	e.asAppend(p, store.AgentEvent{Data: adkEvent("user", "kept-token")}, store.ScopedState{}, 0)
	e.asAppend(p, store.AgentEvent{Data: adkEvent("user", "rewound-token")}, store.ScopedState{}, 0)
	e.rewind(p, 1)
	if found("rewound-token") != 0 || found("kept-token") != 1 {
		t.Fatalf("after a rewind: rewound found %d times, kept %d (want 0, 1)", found("rewound-token"), found("kept-token"))
	}
	e.fork(p, 1, "child")
	if err := e.as().DeleteSession(e.ctx, p); err != nil {
		t.Fatal(err)
	}
	if found("kept-token") != 0 {
		t.Fatal("a deleted parent's event is still found")
	}
	if h, err := e.searcher().History(e.ctx, store.HistoryRequest{App: "del", User: "u"}); err != nil || len(h.Items) != 0 {
		t.Fatalf("History after the deletes: %d items, %v", len(h.Items), err)
	}
	e.wantIndexOK()
}

// testSearchUnfoldedSnapshot: a search that cannot fold the queue first
// (under ReadSnapshot, and in a read-only store) is exact all the same:
// it finds an item written since the last fold, never an item deleted
// since, an item changed since by its new text only, pages without gaps
// or repeats across indexed items and items not yet folded, and says
// nothing waits (SearchResult.Pending 0). Every answer is the one the
// store gives once it has folded (ranked answers: the same hits; their
// scores depend on the whole index).
func testSearchUnfoldedSnapshot(t *testing.T, e *env) {
	// No background indexer: what is written stays queued until a
	// search of this store folds it.
	e.st.Close()
	e.st = e.openWith(Options{NoIndexer: true})
	step := func() { e.clock.Advance(time.Second) }
	e.newConv("unf-old", text("user", "oldtoken-alpha"), text("user", "keeptoken-kilo"))
	step()
	k := store.SessionKey{App: "unf", User: "u", Session: "s"}
	e.asCreate(k, store.ScopedState{})
	e.asAppend(k, store.AgentEvent{Data: adkEvent("user", "oldevent-bravo")}, store.ScopedState{}, 0)
	k3 := store.SessionKey{App: "unf", User: "u", Session: "s3"}
	e.asCreate(k3, store.ScopedState{})
	e.newConv("unf-page")
	for i := range 6 {
		step()
		e.appendMsgs("unf-page", text("user", fmt.Sprintf("pagetoken folded %d", i)))
		e.asAppend(k3, store.AgentEvent{Data: adkEvent("user", fmt.Sprintf("histtoken folded %d", i))}, store.ScopedState{}, 0)
	}
	for _, q := range []string{"oldtoken-alpha", "keeptoken-kilo", "oldevent-bravo"} {
		if r := e.search(store.SearchQuery{Query: q}); len(r.Hits) != 1 || r.Pending != 0 {
			t.Fatalf("%s before the deletes: %d hits, pending %d (want 1, 0)", q, len(r.Hits), r.Pending)
		}
	}
	// Deletes, a change and new items, none folded yet.
	step()
	if _, err := e.conv().PopMessage(e.ctx, "unf-old"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conv().PopMessage(e.ctx, "unf-old"); err != nil {
		t.Fatal(err)
	}
	// The changed item: seq 0 of unf-old held oldtoken-alpha.
	e.appendMsgs("unf-old", text("user", "newtoken-charlie"))
	if err := e.as().DeleteSession(e.ctx, k); err != nil {
		t.Fatal(err)
	}
	k2 := store.SessionKey{App: "unf", User: "u", Session: "s2"}
	e.asCreate(k2, store.ScopedState{})
	e.asAppend(k2, store.AgentEvent{Data: adkEvent("user", "newevent-delta")}, store.ScopedState{}, 0)
	for i := range 5 {
		step()
		e.appendMsgs("unf-page", text("user", fmt.Sprintf("pagetoken new %d", i)))
		e.asAppend(k2, store.AgentEvent{Data: adkEvent("model", fmt.Sprintf("histtoken new %d", i))}, store.ScopedState{}, 0)
	}

	queries := []store.SearchQuery{
		{Query: "oldtoken-alpha"}, {Query: "keeptoken-kilo"}, {Query: "oldevent-bravo"},
		{Query: "newtoken-charlie", Window: 3}, {Query: "newevent-delta", IncludeEvents: true},
		{Query: "token", Order: store.SearchByTime, Limit: 100, Window: 1},
		{Query: "pagetoken", Order: store.SearchByTime, Limit: 100, Window: 2},
		{Query: "histtoken", Order: store.SearchByTime, Limit: 100, IncludeEvents: true},
		{Query: "histtoken", Order: store.SearchByTime, Limit: 100, Kinds: []store.SearchKind{store.SearchEvent}, User: "u", App: "unf", Session: "s2"},
		{Query: "pagetoken new", Order: store.SearchByTime, Limit: 100, Since: e.clock.Now().Add(-3 * time.Second)},
		{Query: "en", Order: store.SearchByTime, Limit: 100}, // short: scanned
		{Query: "pagetoken", Limit: 100}, {Query: "token", Limit: 100}, {Query: "t", Limit: 100},
		{Query: "token", Order: store.SearchByTime, Facet: "conversations", App: "unf"}, // no kind left: nothing
	}
	histories := []store.HistoryRequest{{App: "unf", User: "u"}, {App: "unf", User: "u", Roles: []string{"model"}}}
	type answers struct {
		search  []store.SearchResult
		history [][]store.HistoryItem
	}
	// all pages through every query, 3 hits (2 items) a page, and checks
	// that the pages are the query's one page, cut.
	all := func(ctx context.Context, s store.Searcher, who string) answers {
		t.Helper()
		var a answers
		for _, q := range queries {
			r, err := s.Search(ctx, q)
			if err != nil {
				t.Fatalf("%s: Search(%+v): %v", who, q, err)
			}
			if r.Pending != 0 {
				t.Errorf("%s: %q: pending %d, want 0 (exact)", who, q.Query, r.Pending)
			}
			var paged []store.SearchHit
			pq := q
			pq.Limit = 3
			for range 50 {
				p, err := s.Search(ctx, pq)
				if err != nil {
					t.Fatalf("%s: Search(%+v): %v", who, pq, err)
				}
				paged = append(paged, p.Hits...)
				if p.Next == "" {
					break
				}
				pq.Cursor = p.Next
			}
			if fmt.Sprint(hitKeys(paged)) != fmt.Sprint(hitKeys(r.Hits)) {
				t.Errorf("%s: %q in pages of 3: %v, in one page: %v", who, q.Query, hitKeys(paged), hitKeys(r.Hits))
			}
			a.search = append(a.search, r)
		}
		for _, req := range histories {
			var items []store.HistoryItem
			pr := req
			pr.Limit = 2
			for range 50 {
				p, err := s.History(ctx, pr)
				if err != nil {
					t.Fatalf("%s: History(%+v): %v", who, pr, err)
				}
				items = append(items, p.Items...)
				if p.Next == "" {
					break
				}
				pr.Cursor = p.Next
			}
			one, err := s.History(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(items, one.Items) {
				t.Errorf("%s: History %+v in pages of 2 differs from one page", who, req)
			}
			a.history = append(a.history, items)
		}
		return a
	}
	check := func(who string, got answers) {
		t.Helper()
		for i, q := range queries {
			r := got.search[i]
			switch q.Query {
			case "oldtoken-alpha", "keeptoken-kilo", "oldevent-bravo":
				if len(r.Hits) != 0 {
					t.Errorf("%s: %s: hits %v, want none (deleted or changed since the fold)", who, q.Query, hitKeys(r.Hits))
				}
			case "newtoken-charlie":
				if len(r.Hits) != 1 || r.Hits[0].Snippet.Text != "newtoken-charlie" || len(r.Hits[0].Window) != 1 || r.Hits[0].Window[0].Text != "newtoken-charlie" {
					t.Errorf("%s: %s: %+v, want the changed message by its new text", who, q.Query, r.Hits)
				}
			case "newevent-delta":
				if len(r.Hits) != 1 || r.Hits[0].Event == nil || !strings.Contains(string(r.Hits[0].Event.Data), "newevent-delta") {
					t.Errorf("%s: %s: %+v, want the new event with its data", who, q.Query, r.Hits)
				}
			}
		}
		for _, it := range got.history[0] {
			if it.Key.Session == "s" {
				t.Errorf("%s: History returns the deleted session's event %v", who, it.Key)
			}
		}
		if n := len(got.history[0]); n != 12 {
			t.Errorf("%s: History: %d items, want 12 (6 folded, 6 not yet)", who, n)
		}
	}
	var snap answers
	err := e.st.ReadSnapshot(e.ctx, func(ctx context.Context) error {
		snap = all(ctx, e.searcher(), "under a snapshot")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("under a snapshot", snap)
	var ro answers
	if e.h.OpenWith != nil {
		ros := e.openWith(Options{ReadOnly: true})
		ro = all(e.ctx, ros.(store.Searcher), "read-only")
		check("read-only", ro)
	}
	// The store that can write folds, and answers the same.
	folded := all(e.ctx, e.searcher(), "folded")
	check("folded", folded)
	for who, got := range map[string]answers{"under a snapshot": snap, "read-only": ro} {
		if got.search == nil {
			continue
		}
		for i, q := range queries {
			want := folded.search[i]
			if q.Order == store.SearchByTime {
				// The same hits in the same order, with the same
				// snippets, windows and events (the scores depend on
				// the whole index, which the fold changed:
				// testSearchUnfoldedScore compares them).
				if !jsonEqual(unscored(got.search[i]), unscored(want)) {
					t.Errorf("%s: %+v:\n got  %s\n want %s (folded)", who, q, jsonOf(got.search[i]), jsonOf(want))
				}
				continue
			}
			g, w := hitKeys(got.search[i].Hits), hitKeys(want.Hits)
			sort.Strings(g)
			sort.Strings(w)
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("%s: %q ranked: hits %v, folded %v", who, q.Query, g, w)
			}
		}
		for i := range histories {
			if !jsonEqual(got.history[i], folded.history[i]) {
				t.Errorf("%s: History %+v:\n got  %s\n want %s (folded)", who, histories[i], jsonOf(got.history[i]), jsonOf(folded.history[i]))
			}
		}
	}
}

// unscored returns r with every hit's score 0.
func unscored(r store.SearchResult) store.SearchResult {
	r.Hits = append([]store.SearchHit(nil), r.Hits...)
	for i := range r.Hits {
		r.Hits[i].Score = 0
	}
	return r
}

// testSearchUnfoldedScore: an item not yet folded is ranked as the index
// ranks it once folded: its score, from the same statistics of the whole
// index, is the one it has after the fold, to the bit. The item changed
// since the fold keeps its text, so the fold leaves those statistics as
// they were.
func testSearchUnfoldedScore(t *testing.T, e *env) {
	e.st.Close()
	e.st = e.openWith(Options{NoIndexer: true})
	e.newConv("sc-conv", text("user", "scoretoken"), text("user", "scoretoken and a much longer text about scoretoken things"),
		text("user", "nothing here"), text("user", "a scoretoken in the middle of some words"))
	arts := []store.Artifact{
		{URI: "a3s://out/scoretoken", ID: "a1", ToolName: "shell", Content: "x"},
		{URI: "a3s://out/scoretoken-report-with-a-long-name", ID: "a2", ToolName: "scoretoken-tool", Content: "y"},
		{URI: "a3s://out/other", ID: "a3", ToolName: "shell", Content: "z"},
	}
	if err := e.conv().PutArtifacts(e.ctx, "sc-conv", arts...); err != nil {
		t.Fatal(err)
	}
	q := store.SearchQuery{Query: "scoretoken"}
	if r := e.search(q); len(r.Hits) != 5 { // folds
		t.Fatalf("before the change: %v, want 5 hits", hitKeys(r.Hits))
	}
	e.clock.Advance(time.Second)
	if err := e.conv().PutArtifacts(e.ctx, "sc-conv", arts[1]); err != nil { // the same text, queued
		t.Fatal(err)
	}
	for _, qq := range []store.SearchQuery{q, {Query: "scoretoken long"}, {Query: "scoretoken", Kinds: []store.SearchKind{store.SearchArtifact}}} {
		var snap store.SearchResult
		err := e.st.ReadSnapshot(e.ctx, func(ctx context.Context) error {
			var err error
			snap, err = e.searcher().Search(ctx, qq)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		folded := e.search(qq)
		if !jsonEqual(snap, folded) {
			t.Errorf("%q not yet folded:\n got  %s\n want %s (folded)", qq.Query, jsonOf(snap), jsonOf(folded))
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonEqual(a, b any) bool { return jsonOf(a) == jsonOf(b) }

func (e *env) wantIndexOK() store.SearchIndexReport {
	e.t.Helper()
	rep, err := e.searcher().CheckSearchIndex(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if !rep.OK() {
		e.t.Fatalf("index differs from content: %+v", rep)
	}
	return rep
}

func testSearchHistory(t *testing.T, e *env) {
	const sessions, perSession = 12, 5
	for s := range sessions {
		k := store.SessionKey{App: "mem", User: "carol", Session: fmt.Sprintf("s%02d", s)}
		e.asCreate(k, store.ScopedState{})
		other := store.SessionKey{App: "mem", User: "dave", Session: k.Session}
		e.asCreate(other, store.ScopedState{})
		for i := range perSession {
			author := "user"
			if i%2 == 1 {
				author = "model"
			}
			// Interleave sessions in time.
			ts := e.clock.Now().Add(time.Duration(i*sessions+s) * time.Second)
			e.asAppend(k, store.AgentEvent{Timestamp: ts, Data: adkEvent(author, fmt.Sprintf("%s-%d", k.Session, i))}, store.ScopedState{}, 0)
			e.asAppend(other, store.AgentEvent{Timestamp: ts, Data: adkEvent(author, "not carol's")}, store.ScopedState{}, 0)
		}
	}
	var all []store.HistoryItem
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > sessions*perSession {
			t.Fatal("history paging does not end")
		}
		p, err := e.searcher().History(e.ctx, store.HistoryRequest{App: "mem", User: "carol", Limit: 7, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if len(all) != sessions*perSession {
		t.Fatalf("%d events of carol, want %d", len(all), sessions*perSession)
	}
	for i, it := range all {
		if it.Key.User != "carol" || it.Key.App != "mem" || strings.Contains(string(it.Event.Data), "not carol") {
			t.Fatalf("item %d is not carol's: %+v", i, it)
		}
		if i > 0 && !it.Event.Timestamp.Before(all[i-1].Event.Timestamp) {
			t.Fatalf("item %d not older than the one before: %v, %v", i, it.Event.Timestamp, all[i-1].Event.Timestamp)
		}
	}
	// The newest event is the last of the last-written session.
	if k := all[0].Key.Session; k != fmt.Sprintf("s%02d", sessions-1) || all[0].Event.Seq != perSession {
		t.Fatalf("newest: %+v", all[0])
	}
	p, err := e.searcher().History(e.ctx, store.HistoryRequest{App: "mem", User: "carol", Roles: []string{"model"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != sessions*2 {
		t.Fatalf("model events: %d, want %d", len(p.Items), sessions*2)
	}
	since := all[9].Event.Timestamp
	p, err = e.searcher().History(e.ctx, store.HistoryRequest{App: "mem", User: "carol", Since: since, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 10 {
		t.Fatalf("since the 10th newest: %d items", len(p.Items))
	}
}

func testSearchBadInput(t *testing.T, e *env) {
	e.newConv("bad", text("user", "something"))
	for name, q := range map[string]store.SearchQuery{
		"empty":        {Query: "  "},
		"limit":        {Query: "x", Limit: store.MaxSearchLimit + 1},
		"cursor":       {Query: "x", Cursor: "nonsense"},
		"window":       {Query: "x", Window: -1},
		"kind":         {Query: "x", Kinds: []store.SearchKind{"nope"}},
		"facet":        {Query: "x", Facet: "governance"},
		"order":        {Query: "x", Order: "best"},
		"until<since":  {Query: "x", Since: time.Unix(10, 0), Until: time.Unix(5, 0)},
		"long":         {Query: strings.Repeat("x", store.MaxSearchQuery+1)},
		"invalid utf8": {Query: "\xff\xfe"},
		"session id":   {Query: "x", Session: "a\x00b"},
	} {
		if _, err := e.searcher().Search(e.ctx, q); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	for name, r := range map[string]store.HistoryRequest{
		"no user": {App: "a"},
		"limit":   {App: "a", User: "u", Limit: -1},
		"cursor":  {App: "a", User: "u", Cursor: "%%"},
	} {
		if _, err := e.searcher().History(e.ctx, r); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("history %s: %v, want ErrInvalidInput", name, err)
		}
	}
	// Query syntax of the index is data: quotes, operators, wildcards.
	for _, q := range []string{`"`, `som"e`, `OR AND NOT`, `some*`, `%`, `_`, `NEAR(a b)`, `-x`, `(`} {
		if _, err := e.searcher().Search(e.ctx, store.SearchQuery{Query: q}); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
	if r := e.search(store.SearchQuery{Query: "%"}); len(r.Hits) != 0 {
		t.Errorf("%% is not a wildcard: %v", hitKeys(r.Hits))
	}
	if _, err := e.searcher().Reindex(e.ctx, store.ReindexRequest{Batch: -1}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("reindex batch -1: %v", err)
	}
}

func testSearchReindex(t *testing.T, e *env) {
	for i := range 25 {
		e.newConv(fmt.Sprintf("ri-%02d", i), text("user", fmt.Sprintf("reindex-me number %d", i)))
	}
	k := store.SessionKey{App: "ri", User: "u", Session: "s"}
	e.asCreate(k, store.ScopedState{})
	e.asAppend(k, store.AgentEvent{Data: adkEvent("user", "reindex-me event")}, store.ScopedState{}, 0)
	rep := e.wantIndexOK()
	if rep.Kinds[0].Kind != store.SearchMessage || rep.Kinds[0].Items != 25 {
		t.Fatalf("report %+v", rep)
	}
	if e.h.Exec == nil {
		t.Skip("the harness has no Exec: the index cannot be damaged")
	}
	// Damage the index: lose some rows, add one without content.
	if err := e.h.Exec(e.ctx, e.loc, `DELETE FROM search_docs WHERE kind = 'message' AND owner IN ('ri-03', 'ri-17')`); err != nil {
		t.Fatal(err)
	}
	if err := e.h.Exec(e.ctx, e.loc, `INSERT INTO search_docs (kind, owner, pos, session_id, at_us, body) VALUES ('message', 'gone', 0, 'gone', 0, 'reindex-me ghost')`); err != nil {
		t.Fatal(err)
	}
	rep, err := e.searcher().CheckSearchIndex(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Kinds[0].Missing != 2 || rep.Kinds[0].Orphans != 1 {
		t.Fatalf("damage not seen: %+v", rep)
	}
	if n := len(e.search(store.SearchQuery{Query: "reindex-me", Limit: 100}).Hits); n != 25 {
		t.Fatalf("damaged index: %d hits", n)
	}
	var progress []int64
	res, err := e.searcher().Reindex(e.ctx, store.ReindexRequest{Batch: 4, Progress: func(n int64) { progress = append(progress, n) }})
	if err != nil {
		t.Fatal(err)
	}
	// 8 transactions touch the 26 items (which queues their keys), 1
	// removes the orphan, and up to 7 fold the 26 queued keys in, 4 at a
	// time (fewer when the store's background indexer folded some).
	if res.Items != 26 || res.Orphans != 1 || res.Batches < 9 || res.Batches > 16 || fmt.Sprint(progress) != "[4 8 12 16 20 24 25 26]" {
		t.Fatalf("reindex %+v, progress %v", res, progress)
	}
	e.wantIndexOK()
	if n := len(e.search(store.SearchQuery{Query: "reindex-me", Limit: 100}).Hits); n != 26 {
		t.Fatalf("after reindex: %d hits, want 26", n)
	}
}

func init() {
	// A writer of conversations and agent events that reports each
	// acknowledged write, until it is killed.
	registerRole("search-writer", func(ctx context.Context, st store.Store, args []string, out io.Writer) error {
		k := store.SessionKey{App: "kill", User: "u", Session: "s"}
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
			return err
		}
		if _, err := st.Conversations().Save(ctx, store.NewConversation("kill-conv")); err != nil {
			return err
		}
		if err := report(out, "ready"); err != nil {
			return err
		}
		if f, ok := out.(interface{ Flush() error }); ok {
			f.Flush()
		}
		for i := 0; ; i++ {
			tok := fmt.Sprintf("killtok%06d", i)
			if i%2 == 0 {
				_, err := st.Conversations().AppendMessages(ctx, "kill-conv", text("user", tok))
				if err != nil {
					return err
				}
			} else {
				_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: store.AgentEvent{Data: adkEvent("user", tok)}})
				if err != nil {
					return err
				}
			}
			if i%10 == 0 {
				// Removals race with the kill too.
				if _, err := st.Conversations().PopMessage(ctx, "kill-conv"); err != nil {
					return err
				}
			}
			if err := report(out, tok); err != nil {
				return err
			}
			if f, ok := out.(interface{ Flush() error }); ok {
				f.Flush()
			}
		}
	})
}

func testSearchKilledWriter(t *testing.T, e *env) {
	cmd, stdout := e.spawn("search-writer")
	dec := json.NewDecoder(stdout)
	var acked []string
	deadline := time.Now().Add(20 * time.Second)
	for len(acked) < 15*searchScale && time.Now().Before(deadline) {
		var s string
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("helper: %v (after %d writes)", err, len(acked))
		}
		if s != "ready" {
			acked = append(acked, s)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(acked) < 10 {
		t.Fatalf("only %d writes acknowledged before the deadline", len(acked))
	}
	e.reopen()
	e.wantIndexOK()
	// Every acknowledged write that was not popped is found, through the
	// index, and nothing the index holds lacks its content.
	for i, tok := range acked {
		popped := i%2 == 0 && i%10 == 0
		n := len(e.search(store.SearchQuery{Query: tok}).Hits)
		if popped && n != 0 || !popped && n != 1 {
			t.Fatalf("%s (write %d, popped %v) found %d times", tok, i, popped, n)
		}
	}
}

// testSearchReindexUnderWrites runs a reindex, again and again, while
// writers append messages and events and remove some, and readers search:
// the index ends equal to the content and every kept write is found once.
func testSearchReindexUnderWrites(t *testing.T, e *env) {
	const writers, perWriter = 4, 8 * searchScale
	k := store.SessionKey{App: "rw", User: "u", Session: "s"}
	e.asCreate(k, store.ScopedState{})
	for w := range writers {
		e.newConv(fmt.Sprintf("rw-%d", w))
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	errs := make(chan error, writers+2)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("rw-%d", w)
			for i := range perWriter {
				tok := fmt.Sprintf("rwtok-%d-%03d", w, i)
				var err error
				if i%2 == 0 {
					_, err = e.conv().AppendMessages(e.ctx, id, text("user", tok))
				} else {
					_, err = e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: store.AgentEvent{Data: adkEvent("user", tok)}})
				}
				if err == nil && i%6 == 4 {
					_, err = e.conv().PopMessage(e.ctx, id) // removes this writer's message i
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for ctx.Err() == nil {
			if _, err := e.searcher().Reindex(ctx, store.ReindexRequest{Batch: 7}); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("reindex: %w", err)
				return
			}
		}
	}()
	go func() {
		defer bg.Done()
		for ctx.Err() == nil {
			if _, err := e.searcher().Search(ctx, store.SearchQuery{Query: "rwtok", Order: store.SearchByTime, Limit: 50}); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("search: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	cancel()
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e.wantIndexOK()
	for w := range writers {
		for i := range perWriter {
			tok := fmt.Sprintf("rwtok-%d-%03d", w, i)
			want := 1
			if i%6 == 4 {
				want = 0
			}
			if n := len(e.search(store.SearchQuery{Query: tok}).Hits); n != want {
				t.Fatalf("%s found %d times, want %d", tok, n, want)
			}
		}
	}
}
