package sqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// TestSearchTimeWalkPlan: the query with which a search newest first of a
// term in many documents walks the documents by time reads the tenant's
// entries of search_docs_time (migration 36) newest first and sorts
// nothing (EXPLAIN QUERY PLAN), with a cursor or without, with since and
// until, a session filter, short terms, and the events' columns; the
// match is gathered once (a list subquery), not run for each document.
// Before migration 36 the search read every candidate's row and sorted
// them (search_large.go).
func TestSearchTimeWalkPlan(t *testing.T) {
	newestFirstPlans(t, func(st *Store, q store.SearchQuery) (string, []any, error) {
		return st.core.SearchTimeWalkSQL(q)
	}, func(name, plan string) {
		if !strings.Contains(plan, "SCAN d USING INDEX search_docs_time") && !strings.Contains(plan, "SEARCH d USING INDEX search_docs_time (tenant=?") {
			t.Errorf("%s: plan\n%s\nwant a walk of search_docs_time", name, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: the walk sorts:\n%s", name, plan)
		}
		if !strings.Contains(plan, "LIST SUBQUERY") {
			t.Errorf("%s: the match is not gathered once:\n%s", name, plan)
		}
	})
}

// TestSearchCheckBatchPlan: the query with which a search newest first
// checks a batch of the match's candidates (candidatesByTime) reads each
// candidate by its number, and sorts the batch's few rows; it never walks
// the index of documents by time (search_docs_time), which, on a term
// absent from the tenant's recent documents, would read every entry
// newer than the batch's candidates (the whole index, for old ones)
// before it found them (EXPLAIN QUERY PLAN), with a cursor or without,
// filters, short terms and the events' columns.
func TestSearchCheckBatchPlan(t *testing.T) {
	docs := []int64{901, 733, 12, 7}
	newestFirstPlans(t, func(st *Store, q store.SearchQuery) (string, []any, error) {
		return st.core.SearchCheckBatchSQL(q, docs)
	}, func(name, plan string) {
		if strings.Contains(plan, "search_docs_time") {
			t.Errorf("%s: plan\n%s\nwalks the documents by time", name, plan)
		}
		if !strings.Contains(plan, "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)") {
			t.Errorf("%s: plan\n%s\nwant each candidate read by its number", name, plan)
		}
	})
}

// newestFirstPlans calls check with the query plan (EXPLAIN QUERY PLAN) of
// the statement that sql returns for each of a set of searches newest
// first of a common term: the first page and the next (a cursor), since
// and until, a session, messages only with a short term, and the events'
// columns.
func newestFirstPlans(t *testing.T, sql func(*Store, store.SearchQuery) (string, []any, error), check func(name, plan string)) {
	t.Helper()
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
		query, args, err := sql(st, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := convQueryPlan(t, db, query, args...)
		check(c.name, plan)
		t.Logf("%s:\n%s", c.name, plan)
	}
}
