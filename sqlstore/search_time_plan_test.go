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
		query, args, err := st.core.SearchTimeWalkSQL(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := convQueryPlan(t, db, query, args...)
		if !strings.Contains(plan, "SCAN d USING INDEX search_docs_time") && !strings.Contains(plan, "SEARCH d USING INDEX search_docs_time (tenant=?") {
			t.Errorf("%s: plan\n%s\nwant a walk of search_docs_time", c.name, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: the walk sorts:\n%s", c.name, plan)
		}
		if !strings.Contains(plan, "LIST SUBQUERY") {
			t.Errorf("%s: the match is not gathered once:\n%s", c.name, plan)
		}
		t.Logf("%s:\n%s", c.name, plan)
	}
}
