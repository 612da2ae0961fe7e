package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// testSearchLargeTermPages: a search of a term in many documents, which
// stops reading the index's candidates once it has its page (ranked: a
// faster score; newest first: the candidates checked in order, a batch at
// a time), gives every page exactly as the search that reads every
// candidate first (Options.EagerSearch, on the same database): the same
// hits, order, scores, snippets and cursors, walking the cursors to the
// end at limits 1, 7 and 20, ranked and newest first, with filters (kind,
// session, app and user, since and until, a filter that rejects most
// candidates, short terms), on documents of equal scores and equal times
// (ties across page boundaries), after deletes, with items not yet folded
// (a read-only store and a snapshot, which match them directly), and on
// the store that folds them. The store under test takes the early path
// from one candidate on (Options.LargeSearchMin), newest first each way:
// chosen by its estimate, walking the documents by time, and reading and
// sorting the candidates (Options.SearchTimeWalk), with a cursor in the
// middle of documents of one time and since and until together; and with
// every term taken as one in few documents (a LargeSearchMin above the
// number of documents).
func testSearchLargeTermPages(t *testing.T, e *env) {
	e.st.Close()
	e.st = e.openWith(Options{NoIndexer: true})
	rng := rand.New(rand.NewPCG(5, 6))
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit"}
	body := func() string {
		var b strings.Builder
		for range 3 + rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))] + " ")
		}
		switch r := rng.IntN(10); {
		case r < 7:
			b.WriteString("commonword " + strings.Repeat("commonword ", rng.IntN(3)))
		case r == 7:
			b.WriteString("rareword commonword ")
		case r == 8:
			b.WriteString("commonwor d") // every trigram of the term but one: a candidate in neither
		}
		if rng.IntN(8) == 0 {
			b.WriteString("naïve café commonword ") // a body outside ASCII: bm25() scores it
		}
		if rng.IntN(10) == 0 {
			b.WriteString("zq") // a short term: checked on the body, a batch at a time
		}
		return b.String()
	}
	// Conversations: messages appended a few at a time, so that many share
	// their time; some texts repeat, so that many share their score.
	fixed := []string{"commonword", "lorem commonword ipsum", "commonword commonword"}
	for c := range 3 {
		id := fmt.Sprintf("lt-conv-%d", c)
		e.newConv(id)
		for range 3 {
			e.clock.Advance(time.Second)
			var msgs []store.Message
			for range 5 + rng.IntN(20) {
				txt := body()
				if rng.IntN(4) == 0 {
					txt = fixed[rng.IntN(len(fixed))]
				}
				msgs = append(msgs, text([]string{"user", "assistant"}[rng.IntN(2)], txt))
			}
			e.appendMsgs(id, msgs...)
		}
	}
	// Agent events at times out of their order (and some equal).
	t0 := e.clock.Now()
	keys := []store.SessionKey{{App: "lt", User: "u1", Session: "s1"}, {App: "lt", User: "u1", Session: "s2"}, {App: "lt", User: "u2", Session: "s3"}}
	for _, k := range keys {
		e.asCreate(k, store.ScopedState{})
	}
	for range 60 {
		k := keys[rng.IntN(len(keys))]
		ts := t0.Add(time.Duration(rng.IntN(8)-4) * time.Second)
		txt := body()
		if rng.IntN(4) == 0 {
			txt = fixed[rng.IntN(len(fixed))]
		}
		e.asAppend(k, store.AgentEvent{Timestamp: ts, Data: adkEvent("model", txt)}, store.ScopedState{}, 0)
	}
	e.search(store.SearchQuery{Query: "commonword"}) // folds
	// Deleted items: a message popped, a conversation and an agent
	// session deleted (folded by the next search).
	if _, err := e.conv().PopMessage(e.ctx, "lt-conv-0"); err != nil {
		t.Fatal(err)
	}
	if err := e.conv().Delete(e.ctx, "lt-conv-2"); err != nil {
		t.Fatal(err)
	}
	if err := e.as().DeleteSession(e.ctx, keys[2]); err != nil {
		t.Fatal(err)
	}
	e.search(store.SearchQuery{Query: "commonword"}) // folds
	// Items not yet folded (no indexer, no search of this store): new
	// messages and events, a message popped.
	if _, err := e.conv().PopMessage(e.ctx, "lt-conv-1"); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		e.clock.Advance(time.Second)
		e.appendMsgs("lt-conv-0", text("user", body()))
		e.asAppend(keys[0], store.AgentEvent{Timestamp: t0.Add(time.Duration(rng.IntN(8)-4) * time.Second), Data: adkEvent("model", body())}, store.ScopedState{}, 0)
	}
	mid := t0.Add(-2 * time.Second)
	queries := []store.SearchQuery{
		{Query: "commonword"},
		{Query: "commonword lorem"},
		{Query: "rareword"},
		{Query: "commonword", Kinds: []store.SearchKind{store.SearchMessage}},
		{Query: "commonword", Session: "s2"}, // rejects most candidates
		{Query: "commonword", App: "lt", User: "u1", Since: mid, IncludeEvents: true},
		{Query: "commonword", Until: mid},
		{Query: "commonword", Since: mid, Until: t0.Add(2 * time.Second), Session: "s1"},
		{Query: "commonword ip", Window: 1}, // a short term with a long one
		{Query: "commonword zq"},            // one that rejects most candidates
	}
	// The eager search's answer to a query (with its cursor) depends only
	// on the data and on the kind of store (read-only, under a snapshot,
	// or writable), not on the store under test beside it: each state of
	// the data keeps the answers it has already computed (wants, by the
	// query's JSON), and a comparison of another way of the search on the
	// same state compares against them. Every page of every way is still
	// compared; only the repeated eager searches go (they were most of
	// this test's time).
	compare := func(name string, got, want store.Searcher, gctx, wctx context.Context, wants map[string]string, limits []int, orders ...store.SearchOrder) {
		t.Helper()
		pages, eager := 0, 0
		for i, q := range queries {
			for _, o := range orders {
				for _, limit := range limits {
					q := q
					q.Order, q.Limit = o, limit
					hits := 0
					for page := 0; ; page++ {
						g, err := got.Search(gctx, q)
						if err != nil {
							t.Fatalf("%s: %+v: %v", name, q, err)
						}
						key := jsonOf(q)
						w, ok := wants[key]
						if !ok {
							r, err := want.Search(wctx, q)
							if err != nil {
								t.Fatalf("%s: %+v (eager): %v", name, q, err)
							}
							w = jsonOf(r)
							wants[key] = w
							eager++
						}
						pages++
						if gj := jsonOf(g); gj != w {
							t.Fatalf("%s: %q %s limit %d page %d:\n got  %s\n want %s", name, q.Query, o, limit, page, gj, w)
						}
						hits += len(g.Hits)
						// Limit 1 walks the first pages only (the
						// others cross every boundary).
						if g.Next == "" || (limit == 1 && page == 4) {
							break
						}
						q.Cursor = g.Next
					}
					if i == 0 && limit == 20 && hits < 60 {
						t.Fatalf("%s: %q %s: %d hits; the test wants many", name, q.Query, o, hits)
					}
				}
			}
		}
		t.Logf("%s: %d pages compared (%d searched by the eager store here)", name, pages, eager)
	}
	both := []store.SearchOrder{store.SearchByRank, store.SearchByTime}
	all := []int{1, 7, 20}
	// The eager answers of each kind of store on each state of the data:
	// not yet folded (read-only, and under a snapshot), then folded.
	roUnfolded, snapUnfolded, folded, roFolded := map[string]string{}, map[string]string{}, map[string]string{}, map[string]string{}
	// Newest first, each way of the search: chosen by the store's
	// estimate, always walking the documents by time, never (on a
	// backend with such an index).
	for _, walk := range []struct {
		name string
		mode int
	}{{"", 0}, {"walk/", 1}, {"candidates/", -1}} {
		orders, limits := both, all
		if walk.mode != 0 {
			// Newest first only, at the limits that cross most pages.
			orders, limits = []store.SearchOrder{store.SearchByTime}, []int{1, 7}
		}
		// A read-only store matches the items not yet folded directly
		// (the store's own choice; a snapshot, next, does too).
		if walk.mode == 0 {
			ro := e.openWith(Options{ReadOnly: true, LargeSearchMin: 1})
			roEager := e.openWith(Options{ReadOnly: true, EagerSearch: true})
			compare("read-only", ro.(store.Searcher), roEager.(store.Searcher), e.ctx, e.ctx, roUnfolded, limits, orders...)
		}
		// So does a read under a snapshot of a store that can write.
		lazy := e.openWith(Options{NoIndexer: true, LargeSearchMin: 1, SearchTimeWalk: walk.mode})
		eager := e.openWith(Options{NoIndexer: true, EagerSearch: true})
		err := lazy.ReadSnapshot(e.ctx, func(gctx context.Context) error {
			return eager.ReadSnapshot(e.ctx, func(wctx context.Context) error {
				compare(walk.name+"snapshot", lazy.(store.Searcher), eager.(store.Searcher), gctx, wctx, snapUnfolded, limits, orders...)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The store that folds them (the first search folds them).
	for _, mode := range []int{1, -1, 0} {
		lazy := e.openWith(Options{NoIndexer: true, LargeSearchMin: 1, SearchTimeWalk: mode})
		eager := e.openWith(Options{NoIndexer: true, EagerSearch: true})
		orders, limits := both, all
		if mode != 0 {
			orders, limits = []store.SearchOrder{store.SearchByTime}, []int{1, 7}
		}
		compare(fmt.Sprintf("folded/%d", mode), lazy.(store.Searcher), eager.(store.Searcher), e.ctx, e.ctx, folded, limits, orders...)
	}
	// Every term taken as one in few documents (newest first: every
	// candidate read in one query, by its number), on the store that
	// folds and on a read-only one.
	few := e.openWith(Options{NoIndexer: true, LargeSearchMin: 1 << 30})
	compare("few", few.(store.Searcher), e.openWith(Options{NoIndexer: true, EagerSearch: true}).(store.Searcher), e.ctx, e.ctx, folded, all, both...)
	roFew := e.openWith(Options{ReadOnly: true, LargeSearchMin: 1 << 30})
	compare("read-only/few", roFew.(store.Searcher), e.openWith(Options{ReadOnly: true, EagerSearch: true}).(store.Searcher), e.ctx, e.ctx, roFolded, all, store.SearchByTime)
}
