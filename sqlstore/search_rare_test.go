package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestSearchRareTermOneMatch: a search of a term in few documents runs
// the index's match of the term once, ranked and newest first, on every
// page, and gives the pages of the search that reads every candidate
// first (WithEagerSearch). Before, a count of the candidates (which
// chooses the way of a term in many documents) ran the match a second
// time and made such a search up to twice as slow. The statements that
// read one trigram each (bm25()'s statistics, which bm25() reads too) are
// not the term's match.
func TestSearchRareTermOneMatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	// The FTS5 query of "zebrafish": its seven trigrams, each once.
	const match = `"zeb" AND "ebr" AND "bra" AND "raf" AND "afi" AND "fis" AND "ish"`
	matches := 0
	var statements []string
	trace := func(query string, args []any) error {
		statements = append(statements, query)
		for _, a := range args {
			if a == match {
				matches++
			}
		}
		return nil
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithSearchTrace(trace))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		txt := fmt.Sprintf("lorem ipsum commonword %d", i)
		if i%8 == 3 {
			txt = fmt.Sprintf("a zebrafish, %d zebrafish", i) // five hits of two scores
			if i%16 == 3 {
				txt = fmt.Sprintf("zebrafish %d", i)
			}
		}
		if err := appendText(ctx, st, "c1", txt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "commonword"}); err != nil { // folds
		t.Fatal(err)
	}
	eager, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithEagerSearch())
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	for _, o := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
		q := store.SearchQuery{Query: "zebrafish", Order: o, Limit: 2}
		hits := 0
		for page := 0; ; page++ {
			matches, statements = 0, nil
			got, err := st.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if matches != 1 {
				t.Errorf("%s page %d: the term's match ran %d times, want once; statements:\n%q", o, page, matches, statements)
			}
			want, err := eager.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Fatalf("%s page %d:\n got  %s\n want %s", o, page, g, w)
			}
			hits += len(got.Hits)
			if got.Next == "" {
				break
			}
			q.Cursor = got.Next
		}
		if hits != 5 {
			t.Errorf("%s: %d hits, want 5", o, hits)
		}
	}
}
