package storetest

import (
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// testEncSearchOptIn: with the SearchEncrypted opt-in an encrypted
// session's events are found by search and history (their stored events
// opened), a store without the opt-in finds none of its own encrypted
// sessions (the default, also asserted by SealedRoundTrip), and deleting
// the session (which shreds its key) removes its documents.
func testEncSearchOptIn(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st, err := h.OpenWith(e.ctx, e.loc, e.clock.Now, Options{Keys: e.ring, SearchEncrypted: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sr, ok := st.(store.Searcher)
	if !ok {
		t.Skip("the backend does not search")
	}
	key := encKey("searched")
	e.fill(st, key, 3)
	// A second store on the same database without the opt-in: its own
	// encrypted session is not indexed.
	plainIdx := e.open(e.ring)
	e.fill(plainIdx, encKey("unindexed"), 2)

	res, err := sr.Search(e.ctx, store.SearchQuery{Query: encMarker, IncludeEvents: true, Window: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) != 3 {
		t.Fatalf("opt-in search: %d hits, want the 3 events of %s", len(res.Hits), key.Session)
	}
	for _, hit := range res.Hits {
		if hit.SessionID != key.Session || hit.Kind != store.SearchEvent || hit.Role != "user" ||
			!strings.Contains(hit.Snippet.Text, encMarker) {
			t.Fatalf("hit %+v", hit)
		}
		if hit.Event == nil || !strings.Contains(string(hit.Event.Data), encMarker) {
			t.Fatalf("hit's event is not opened: %+v", hit.Event)
		}
		if len(hit.Window) == 0 {
			t.Fatalf("hit without its window: %+v", hit)
		}
	}
	checkIndexWhole(t, e, sr) // sealed events with and without documents
	hist, err := sr.History(e.ctx, store.HistoryRequest{App: key.App, User: key.User})
	if err != nil || len(hist.Items) != 3 {
		t.Fatalf("history: %+v, %v", hist.Items, err)
	}
	for _, it := range hist.Items {
		if it.Key.Session != key.Session || !strings.Contains(string(it.Event.Data), encMarker) {
			t.Fatalf("history item %+v", it)
		}
	}
	// A reindex (whose no-op updates make the triggers drop the
	// documents of sealed events) writes them again; by a store that opts
	// in, it indexes every encrypted session, the other store's included.
	if _, err := sr.Reindex(e.ctx, store.ReindexRequest{Batch: 2}); err != nil {
		t.Fatal(err)
	}
	if res, err := sr.Search(e.ctx, store.SearchQuery{Query: encMarker}); err != nil || len(res.Hits) != 5 {
		t.Fatalf("opt-in search after a reindex: %d hits, want 5 (3 + 2), %v", len(res.Hits), err)
	}
	checkIndexWhole(t, e, sr)
	// The library's documents are the ones the index triggers
	// write for the same plaintext events.
	if h.Count != nil {
		evs := []string{
			`{"author":"model","content":{"role":"model","parts":[{"text":"alpha beta"},{"functionCall":{"name":"lookup","args":{"q":"gamma","n":2}}}]}}`,
			`{"content":{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"r":1}}},"not an object",{"text":""}]}}`,
			`{"author":"user","content":{"parts":[]}}`,
			`{"author":"tool"}`,
		}
		for _, sess := range []struct {
			st   store.Store
			name string
		}{{e.open(nil), "plain-docs"}, {st, "sealed-docs"}} {
			k := encKey(sess.name)
			if _, err := sess.st.AgentSessions().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if _, err := sess.st.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: store.AgentEvent{Data: []byte(ev)}}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The plaintext events' documents are folded in after their
		// commit; a check folds what is queued first.
		if _, err := sr.CheckSearchIndex(e.ctx); err != nil {
			t.Fatal(err)
		}
		n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM search_docs AS a JOIN search_docs AS b
			ON a.pos = b.pos AND a.body = b.body AND a.role = b.role AND a.app = b.app AND a.user_id = b.user_id AND a.at_us = b.at_us
			WHERE a.kind = 'event' AND b.kind = 'event' AND a.session_id = 'plain-docs' AND b.session_id = 'sealed-docs'`)
		if err != nil || n != int64(len(evs)) {
			t.Fatalf("documents written by the library that match the triggers': %d of %d (%v)", n, len(evs), err)
		}
	}
	// Deleting the session shreds its key and deletes its documents.
	if err := st.AgentSessions().DeleteSession(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := st.AgentSessions().DeleteSession(e.ctx, encKey("unindexed")); err != nil {
		t.Fatal(err)
	}
	res, err = sr.Search(e.ctx, store.SearchQuery{Query: encMarker})
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("search after the deletes: %d hits, %v", len(res.Hits), err)
	}
	if h.Count != nil {
		n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM search_docs WHERE body LIKE '%`+encMarker+`%'`)
		if err != nil || n != 0 {
			t.Fatalf("search documents with the marker after the delete: %d, %v", n, err)
		}
	}
}

// checkIndexWhole fails t unless the search index check finds the index
// whole: no kind with missing or orphan documents.
func checkIndexWhole(t *testing.T, e *encEnv, sr store.Searcher) {
	t.Helper()
	rep, err := sr.CheckSearchIndex(e.ctx)
	if err != nil || !rep.IndexOK {
		t.Fatalf("index check: %+v, %v", rep, err)
	}
	for _, k := range rep.Kinds {
		if k.Missing != 0 || k.Orphans != 0 || k.Items != k.Indexed {
			t.Fatalf("index check, %s: %+v", k.Kind, k)
		}
	}
}
