package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// isStatsRead reports whether a statement of a search reads phrases'
// document counts from the index (ftsIDFSQL: a match of each phrase of a
// list).
func isStatsRead(query string) bool { return strings.Contains(query, "MATCH j.value") }

// TestSearchStatsCached: a ranked search of a term reads the index's
// phrase statistics once per state of the index; the next search of the
// same term in the same state takes them from the store's cache (one
// statement reads the index's state), and gives the same page as a store
// that scores with bm25() (WithEagerSearch). A fold between two searches
// changes the state: the next search reads the statistics again, and its
// scores, which the new documents change, are again bm25()'s. Before,
// every ranked search read them (two statements, one FTS5 match per
// trigram).
func TestSearchStatsCached(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	reads := 0
	trace := func(query string, args []any) error {
		if isStatsRead(query) {
			reads++
		}
		return nil
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithSearchTrace(trace))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eager, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithEagerSearch())
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	add := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			txt := fmt.Sprintf("lorem ipsum commonword %d", i)
			switch {
			case i%7 == 3:
				txt = fmt.Sprintf("a zebrafish, %d zebrafish", i)
			case i%7 == 5:
				txt = fmt.Sprintf("zebra fish %d", i) // some of the term's trigrams
			}
			if err := appendText(ctx, st, "c1", txt); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 40)
	q := store.SearchQuery{Query: "zebrafish", Order: store.SearchByRank, Limit: 3}
	search := func(name string, wantReads int) store.SearchResult {
		t.Helper()
		reads = 0
		got, err := st.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if reads != wantReads {
			t.Errorf("%s: %d reads of the phrases' statistics, want %d", name, reads, wantReads)
		}
		want, err := eager.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s:\n got  %s\n want %s", name, g, w)
		}
		if len(got.Hits) != 3 {
			t.Fatalf("%s: %d hits, want 3", name, len(got.Hits))
		}
		return got
	}
	search("first search (folds)", 1)
	first := search("same state", 0)
	search("same state again", 0)
	add(40, 80) // more documents of the term's trigrams: other scores
	second := search("after a fold", 1)
	if first.Hits[0].Score == second.Hits[0].Score {
		t.Errorf("the fold left the score at %v; the test wants it changed", first.Hits[0].Score)
	}
	search("same state after the fold", 0)
	// A fold by another store of the same file (another process): the
	// state's records change, and the cache is not used.
	other, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := appendText(ctx, other, "c1", "zebrafish fish bra"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Search(ctx, store.SearchQuery{Query: "commonword"}); err != nil { // folds
		t.Fatal(err)
	}
	third := search("after another store's fold", 1)
	if third.Hits[0].Score == second.Hits[0].Score {
		t.Errorf("the other store's fold left the score at %v; the test wants it changed", second.Hits[0].Score)
	}
}

// TestSearchStatsAfterRebuild: Reindex's rebuild of the full-text index
// (when it does not hold exactly the rows of search_docs) starts FTS5's
// write counter again, so it also moves the cookie of the index's
// structure record, which names the index's state for the store's cache
// of statistics: no state after the rebuild has the bytes of a state
// before it. The scores after it are bm25()'s. Before, the cookie stayed.
func TestSearchStatsAfterRebuild(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		txt := fmt.Sprintf("lorem ipsum %d", i)
		if i%3 == 0 {
			txt = fmt.Sprintf("a zebrafish %d", i)
		}
		if err := appendText(ctx, st, "c1", txt); err != nil {
			t.Fatal(err)
		}
	}
	q := store.SearchQuery{Query: "zebrafish", Order: store.SearchByRank}
	if _, err := st.Search(ctx, q); err != nil { // folds, and caches the statistics
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cookie := func() uint32 {
		t.Helper()
		var b []byte
		if err := raw.QueryRow(`SELECT block FROM search_fts_data WHERE id = 10`).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if len(b) < 4 {
			t.Fatalf("a structure record of %d bytes", len(b))
		}
		return binary.BigEndian.Uint32(b)
	}
	// An entry of the full-text index with no row of search_docs: the
	// index no longer holds exactly its rows, and Reindex rebuilds it.
	if _, err := raw.Exec(`INSERT INTO search_fts (rowid, body) VALUES (999999, 'zebrafish zebrafish zebrafish')`); err != nil {
		t.Fatal(err)
	}
	before := cookie()
	if _, err := st.Reindex(ctx, store.ReindexRequest{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := st.CheckSearchIndex(ctx); err != nil || !rep.IndexOK {
		t.Fatalf("after Reindex: %+v, %v", rep, err)
	}
	if after := cookie(); after <= before {
		t.Errorf("the structure record's cookie went from %d to %d over the rebuild; want it moved forward", before, after)
	}
	eager, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithEagerSearch())
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	got, err := st.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want, err := eager.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || len(got.Hits) != 7 {
		t.Fatalf("after the rebuild (%d hits, want 7):\n got  %s\n want %s", len(got.Hits), g, w)
	}
}

// TestSearchStatsConcurrent: searches of several terms at once, while
// another goroutine appends and folds, share the store's cache of the
// index's statistics (run with -race): each search gives its hits
// ranked, without error, and once the writes stop every term's page is
// the one a store that scores with bm25() gives.
func TestSearchStatsConcurrent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	terms := []string{"zebrafish", "lorem", "ipsum dolor", "fish"}
	appendOne := func(i int) error {
		txt := fmt.Sprintf("lorem ipsum %d dolor", i)
		if i%3 == 0 {
			txt = fmt.Sprintf("a zebrafish %d, fish", i)
		}
		return appendText(ctx, st, "c1", txt)
	}
	for i := range 30 {
		if err := appendOne(i); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 8)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			for i := range 15 {
				q := store.SearchQuery{Query: terms[(g+i)%len(terms)], Order: store.SearchByRank}
				res, err := st.Search(ctx, q)
				if err == nil {
					for j := 1; j < len(res.Hits); j++ {
						if res.Hits[j].Score > res.Hits[j-1].Score {
							err = fmt.Errorf("%q: hits out of rank order", q.Query)
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	go func() {
		defer close(done)
		for i := 30; i < 60; i++ {
			if err := appendOne(i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	<-done
	eager, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithEagerSearch())
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	for _, term := range terms {
		q := store.SearchQuery{Query: term, Order: store.SearchByRank, Limit: 5}
		got, err := st.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := eager.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) || len(got.Hits) == 0 {
			t.Fatalf("%q:\n got  %s\n want %s", term, g, w)
		}
	}
}
