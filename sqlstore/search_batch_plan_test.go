package sqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// TestSearchCheckBatchPlan: the query with which a search newest first
// checks a batch of the match's candidates (candidatesByTime) reads each
// candidate by its number, and sorts the batch's few rows; it never walks
// the index of documents by time (search_docs_time), which, on a term
// absent from the tenant's recent documents, would read every entry
// newer than the batch's candidates (the whole index, for old ones)
// before it found them (EXPLAIN QUERY PLAN), with a cursor or without,
// filters, short terms and the events' columns.
func TestSearchCheckBatchPlan(t *testing.T) {
	ctx := context.Background()
	path := FreshDBPath(t, "sessions.db")
	st, err := Open(ctx, path, WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cursor := store.SearchCursor{Order: store.SearchByTime, AtMicros: 1_000_000, Doc: 5}.Encode()
	now := time.Unix(1_700_000_000, 0)
	db := convRawDB(t, path)
	docs := []int64{901, 733, 12, 7}
	for _, c := range []struct {
		name string
		q    store.SearchQuery
	}{
		{"first page", store.SearchQuery{Query: "commonword"}},
		{"next page", store.SearchQuery{Query: "commonword", Cursor: cursor}},
		{"since and until", store.SearchQuery{Query: "commonword", Since: now.Add(-time.Hour), Until: now}},
		{"session", store.SearchQuery{Query: "commonword", Session: "s-07", Cursor: cursor}},
		{"messages, short term", store.SearchQuery{Query: "commonword zq", Kinds: []store.SearchKind{store.SearchMessage}}},
		{"events' columns", store.SearchQuery{Query: "commonword", App: "a", User: "u", IncludeEvents: true}},
	} {
		c.q.Order = store.SearchByTime
		query, args, err := st.core.SearchCheckBatchSQL(c.q, docs)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := convQueryPlan(t, db, query, args...)
		if strings.Contains(plan, "search_docs_time") {
			t.Errorf("%s: plan\n%s\nwalks the documents by time", c.name, plan)
		}
		if !strings.Contains(plan, "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)") {
			t.Errorf("%s: plan\n%s\nwant each candidate read by its number", c.name, plan)
		}
		t.Logf("%s:\n%s", c.name, plan)
	}
}
