package adk_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/internal/walpages"
	"github.com/agentstore/sessionstore/sqlstore"
)

// TestPagesPerCreate counts the pages a session create writes through
// this service (a deterministic figure, unlike fsync times): the
// agent_sessions row and its key index, plus the session state's row when
// there is initial state. ADK's database service's figure is counted the
// same way in internal/adkdbbench (TestADKPagesPerCreate); both run with
//
//	cd adk && go test -run PagesPerCreate -v . ./internal/adkdbbench
func TestPagesPerCreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqltest.Seed(t, filepath.Join(dir, "sessions.db")) // the schema is not what is counted
	target, err := openAdapter(ctx, dir, "FULL")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sessions.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bare, withState, err := benchkit.CreatePages(ctx, target, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pages written per create: %.1f without state, %.1f with a one-key state", bare, withState)
	// The session row, its key index and the index retention's idle
	// sweep walks (agent_sessions_idle, migrations 11 and 30: every sweep
	// statement searches an index); plus the state row's page.
	if bare > 3 || withState > 4 {
		t.Errorf("a create writes %.1f pages (%.1f with state), want at most 3 (4)", bare, withState)
	}
}

// TestPagesPerCreateAmongManySessions counts a create's pages in a
// database of 3,000 sessions, whose idle index (agent_sessions_idle) spans
// many pages: the session row, its key index entry and its idle index
// entry, 3 pages. (A row inserted with updated_min 0 and corrected by
// migration 30's trigger also wrote the idle index's first page: 4.)
func TestPagesPerCreateAmongManySessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqltest.Seed(t, filepath.Join(dir, "sessions.db"))
	target, err := openAdapter(ctx, dir, "OFF") // the filling is not what is counted
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	for i := range 3000 {
		if err := target.Create(ctx, "bench", "many", fmt.Sprintf("m%05d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sessions.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pages, err := benchkit.PagesPerCreate(ctx, target, db, 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pages written per create among 3,000 sessions: %.2f", pages)
	if pages > 3 {
		t.Errorf("a create among 3,000 sessions writes %.2f pages, want at most 3", pages)
	}
}

// TestPagesPerAppend counts the pages an append of a runner's event (a
// 1 KiB text part and a state delta, benchkit.TurnEvent) writes through
// this service, from an emptied log each time; ADK's database service's
// figure is counted the same way (TestADKPagesPerAppend):
//
//	cd adk && go test -run 'PagesPer' -v . ./internal/adkdbbench
//
// The budget is the figure measured when it was written (main 919475f):
// 19.4–19.7 pages, the search index's rows and trigrams being most of
// them: without the search triggers an append writes 8.5 (ADK's service:
// 3.73). When the search index leaves the append's transaction (issue
// 36), lower the budget to the new figure. Since migration 27 (the
// append queues the event's key; the indexer folds it in after the
// commit): 9.50. Since migration 30 (the sweep's index of the sessions'
// update times holds the minute, so an append within its session's
// minute writes no entry of it): 8.50; since migration 31 (the indexer,
// not the append, takes the event into the search queue): 7.50. Since
// migration 40 (a key's current value is its head in the state log, on
// the leaf page of the value the append logs): 6.50, budget 6.8. ADK's
// 3.73 stays below it: the rest is the session's row, the event's row and
// its two indexes (by position, for reads and forks; by id, for
// replays), the state log (forks and rewinds), the pointer map of the
// incremental vacuum and the file's header page. ADK's service with the
// indexes a store meeting this module's goals needs (a session's events
// read without scanning all of them, sessions found idle without
// scanning them all: internal/adkdbbench) writes 5.80.
func TestPagesPerAppend(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqltest.Seed(t, filepath.Join(dir, "sessions.db"))
	// No background indexer in this process: the pages it folds in after
	// an append's commit are the search index's, not the append's, and
	// would land in the count at random.
	svc, err := adk.Open(ctx, filepath.Join(dir, "sessions.db"), syncOption("FULL"), sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	target := &benchkit.ServiceTarget{Svc: svc, Closer: svc.Close}
	defer target.Close()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sessions.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := benchkit.PagesPerAppend(ctx, target, db, 10); err != nil { // warm up
		t.Fatal(err)
	}
	pages, by, err := benchkit.PagesPerAppendByObject(ctx, target, db, 40, filepath.Join(dir, "sessions.db-wal"))
	if err != nil {
		t.Fatal(err)
	}
	const budget = 6.8
	t.Logf("pages written per append of a runner event: %.2f (budget %.1f), by table or index:\n%s", pages, budget, walpages.Format(by, "%.2f"))
	if pages > budget {
		t.Errorf("an append writes %.2f pages, budget %.1f: a change added pages (raise the budget on purpose, or take them out)", pages, budget)
	}
}
