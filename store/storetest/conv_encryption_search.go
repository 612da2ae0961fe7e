package storetest

import (
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// convSearchWord is the distinctive word of the messages
// testConvEncSearchOptIn searches; convUnindexedWord that of an
// encrypted conversation written without the opt-in.
const (
	convSearchWord    = "QUOKKA-SEARCHED-5120"
	convUnindexedWord = "WOMBAT-UNINDEXED-6273"
)

// testConvEncSearchOptIn: with the SearchEncrypted opt-in the messages of
// an encrypted conversation are indexed from their plaintext on every
// path that writes one (save, append, compaction record, a fork's own
// messages), and a rewind drops the documents of the superseded
// messages: after each step the conversation's documents are the ones
// the index triggers hold for a plaintext conversation that went
// through the same steps. A hit shows opened text, never ciphertext; an
// encrypted conversation written without the opt-in is not found; the
// index check finds the index whole; a reindex keeps the documents;
// deleting the conversation (which shreds its key) deletes them.
func testConvEncSearchOptIn(t *testing.T, h Harness) {
	if raceEnabled {
		// No concurrency here, and ~15 s per backend under the race
		// detector: the run without it covers it (CI time).
		t.Skip("covered by the run without the race detector")
	}
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
	plain := e.open(nil)
	// An encrypted conversation written by a store without the opt-in.
	e.fillConvWord(e.open(e.ring), "u", convUnindexedWord)

	// sameDocs checks that the message documents of sealed conversation
	// s are those of plaintext conversation p: n documents each, equal
	// in position, role, time and text.
	sameDocs := func(step, s, p string, n int64) {
		t.Helper()
		if h.Count == nil {
			return
		}
		// The plaintext conversation's documents are folded in after
		// their commit; a check folds what is queued first.
		if _, err := sr.CheckSearchIndex(e.ctx); err != nil {
			t.Fatal(err)
		}
		count := func(q string) int64 {
			t.Helper()
			v, err := h.Count(e.ctx, e.loc, q)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			return v
		}
		ns := count(`SELECT count(*) FROM search_docs WHERE kind = 'message' AND owner = '` + s + `'`)
		np := count(`SELECT count(*) FROM search_docs WHERE kind = 'message' AND owner = '` + p + `'`)
		same := count(`SELECT count(*) FROM search_docs AS a JOIN search_docs AS b
			ON a.pos = b.pos AND a.role = b.role AND a.at_us = b.at_us AND a.body = b.body
			WHERE a.kind = 'message' AND b.kind = 'message' AND a.owner = '` + s + `' AND b.owner = '` + p + `'`)
		if ns != n || np != n || same != n {
			t.Fatalf("%s: %d documents of the sealed conversation, %d of the plaintext one, %d equal; want %d",
				step, ns, np, same, n)
		}
	}
	// Both conversations go through the same steps, one in each store.
	type pair struct {
		st store.Store
		id string
	}
	pairs := []pair{{st, "s"}, {plain, "p"}}
	each := func(step string, fn func(st store.Store, id string) error) {
		t.Helper()
		for _, x := range pairs {
			if err := fn(x.st, x.id); err != nil {
				t.Fatalf("%s of %s: %v", step, x.id, err)
			}
		}
	}
	each("save", func(st store.Store, id string) error {
		c := store.NewConversation(id)
		c.Messages = []store.Message{store.UserMessage("alpha " + convSearchWord),
			store.AssistantMessage("beta"), store.UserMessage("gamma")}
		_, err := st.Conversations().Save(e.ctx, c)
		return err
	})
	sameDocs("save", "s", "p", 3)
	each("append", func(st store.Store, id string) error {
		_, err := st.Conversations().AppendMessages(e.ctx, id, store.AssistantMessage("delta "+convSearchWord))
		return err
	})
	sameDocs("append", "s", "p", 4)
	each("rewind", func(st store.Store, id string) error {
		_, err := branches(t, st).Rewind(e.ctx, store.ConversationRewindRequest{ID: id, To: 2})
		return err
	})
	sameDocs("rewind", "s", "p", 3)
	each("append after the rewind", func(st store.Store, id string) error {
		_, err := st.Conversations().AppendMessages(e.ctx, id, store.AssistantMessage("epsilon "+convSearchWord))
		return err
	})
	sameDocs("append after the rewind", "s", "p", 4)
	each("compact", func(st store.Store, id string) error {
		_, err := branches(t, st).Compact(e.ctx, store.ConversationCompactRequest{ID: id,
			Range: store.CompactionRange{From: 0, To: 2}, Summary: store.AssistantMessage("summary " + convSearchWord)})
		return err
	})
	sameDocs("compact", "s", "p", 5)
	each("fork", func(st store.Store, id string) error {
		b := branches(t, st)
		if _, err := b.Fork(e.ctx, store.ConversationForkRequest{ID: id, At: 3, NewID: id + "f"}); err != nil {
			return err
		}
		_, err := st.Conversations().AppendMessages(e.ctx, id+"f", store.UserMessage("zeta "+convSearchWord))
		return err
	})
	sameDocs("fork", "sf", "pf", 1)
	sameDocs("fork's parent", "s", "p", 5)

	// Search: the sealed conversations' hits show their text.
	res, err := sr.Search(e.ctx, store.SearchQuery{Query: convSearchWord, Kinds: []store.SearchKind{store.SearchMessage}, Window: 1, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	perConv := map[string]int{}
	for _, hit := range res.Hits {
		perConv[hit.SessionID]++
		if !strings.Contains(hit.Snippet.Text, convSearchWord) || strings.Contains(hit.Snippet.Text, "ssenc1:") {
			t.Fatalf("hit %s/%d shows %q", hit.SessionID, hit.Seq, hit.Snippet.Text)
		}
		for _, it := range hit.Window {
			if strings.Contains(it.Text, "ssenc1:") {
				t.Fatalf("window of hit %s/%d holds ciphertext: %q", hit.SessionID, hit.Seq, it.Text)
			}
		}
	}
	// alpha, epsilon and the summary (delta was rewound); the fork's zeta.
	if perConv["s"] != 3 || perConv["p"] != 3 || perConv["sf"] != 1 || perConv["pf"] != 1 || len(res.Hits) != 8 {
		t.Fatalf("hits per conversation %v, want s and p 3 each, sf and pf 1 each", perConv)
	}
	// Without the opt-in an encrypted conversation is not found.
	if res, err := sr.Search(e.ctx, store.SearchQuery{Query: convUnindexedWord}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("search of a conversation written without the opt-in: %d hits, %v", len(res.Hits), err)
	}
	checkIndexWhole(t, e, sr)

	// A tenant's sealed conversation is found through its handle only.
	var ts store.TenantStore
	if tn, ok := st.(store.Tenanter); ok {
		if ts, err = tn.Tenant("acme"); err != nil {
			t.Fatal(err)
		}
		e.fillConvWord(ts, "tc", "tenantword")
	}
	tenantHits := func(step string) {
		t.Helper()
		if ts == nil {
			return
		}
		res, err := ts.Search(e.ctx, store.SearchQuery{Query: "tenantword"})
		if err != nil || len(res.Hits) != 2 || res.Hits[0].SessionID != "tc" {
			t.Fatalf("%s: the tenant's search: %+v, %v", step, res.Hits, err)
		}
		if res, err := sr.Search(e.ctx, store.SearchQuery{Query: "tenantword"}); err != nil || len(res.Hits) != 0 {
			t.Fatalf("%s: the default tenant finds the tenant's messages: %+v, %v", step, res.Hits, err)
		}
	}
	tenantHits("append")

	// A reindex keeps the documents (on PostgreSQL its no-op updates drop
	// them and the opt-in writes them again, under their conversation's
	// tenant); by a store that opts in it indexes the other store's
	// encrypted conversation too.
	if _, err := sr.Reindex(e.ctx, store.ReindexRequest{Batch: 2}); err != nil {
		t.Fatal(err)
	}
	sameDocs("reindex", "s", "p", 5)
	sameDocs("reindex", "sf", "pf", 1)
	tenantHits("reindex")
	res, err = sr.Search(e.ctx, store.SearchQuery{Query: convUnindexedWord})
	if err != nil || len(res.Hits) != 2 || res.Hits[0].SessionID != "u" {
		t.Fatalf("search after a reindex by the opted-in store: %+v, %v", res.Hits, err)
	}
	checkIndexWhole(t, e, sr)

	// Deleting the conversations shreds their keys and deletes their
	// documents.
	for _, id := range []string{"s", "sf", "u"} {
		if err := st.Conversations().Delete(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	res, err = sr.Search(e.ctx, store.SearchQuery{Query: convSearchWord, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, hit := range res.Hits {
		if hit.SessionID != "p" && hit.SessionID != "pf" {
			t.Fatalf("hit of a deleted conversation: %+v", hit)
		}
	}
	if h.Count != nil {
		n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM search_docs WHERE owner IN ('s', 'sf', 'u')`)
		if err != nil || n != 0 {
			t.Fatalf("documents of the deleted conversations: %d, %v", n, err)
		}
	}
	checkIndexWhole(t, e, sr)
}

// fillConvWord saves conversation id with two messages holding word.
func (e *encEnv) fillConvWord(st interface{ Conversations() store.Conversations }, id, word string) {
	e.t.Helper()
	c := store.NewConversation(id)
	c.Messages = []store.Message{store.UserMessage("first " + word), store.AssistantMessage("second " + word)}
	if _, err := st.Conversations().Save(e.ctx, c); err != nil {
		e.t.Fatal(err)
	}
}
