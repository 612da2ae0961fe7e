package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestSearchRankedNoHitReadsNoStatistics: a ranked search of a term that
// the index finds in no document ends after the index's match: it reads
// neither the index's state nor its phrases' statistics, which scoring
// needs (on 50,000 documents, most of such a search's ~12 ms when a
// trigram of the term is common). Before, it read them first.
func TestSearchRankedNoHitReadsNoStatistics(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
	var statements []string
	trace := func(query string, args []any) error {
		statements = append(statements, query)
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
	for i := range 30 {
		if err := appendText(ctx, st, "c1", fmt.Sprintf("zebra fish %d commonword", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "commonword"}); err != nil { // folds
		t.Fatal(err)
	}
	// Every trigram of "zebrafish" but "raf" is in the index; "fishzebra"'s
	// are too, but in no document together.
	for _, term := range []string{"zebrafish", "fishzebra", "xylophone"} {
		statements = nil
		res, err := st.Search(ctx, store.SearchQuery{Query: term, Order: store.SearchByRank})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Hits) != 0 {
			t.Fatalf("%s: %d hits, want none", term, len(res.Hits))
		}
		for _, q := range statements {
			if strings.Contains(q, "search_fts_data") || isStatsRead(q) {
				t.Errorf("%s: a search with no hit read the index's statistics:\n%s", term, q)
			}
		}
	}
	// A term with hits still reads them (the test's check can fail).
	statements = nil
	if _, err := st.Search(ctx, store.SearchQuery{Query: "zebra", Order: store.SearchByRank}); err != nil {
		t.Fatal(err)
	}
	read := false
	for _, q := range statements {
		read = read || strings.Contains(q, "search_fts_data")
	}
	if !read {
		t.Errorf("a ranked search with hits read no statistics; statements:\n%q", statements)
	}
}

// appendText appends a user message of text txt to conversation conv of st.
func appendText(ctx context.Context, st store.Store, conv, txt string) error {
	msg := store.Message{Role: store.RoleUser, Content: []store.ContentBlock{store.TextBlock(txt)}}
	_, err := st.Conversations().AppendMessages(ctx, conv, msg)
	return err
}
