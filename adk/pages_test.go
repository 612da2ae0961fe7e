package adk_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/sqltest"
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
	// Warm up: the first creates grow the file and its tables.
	if _, err := benchkit.PagesPerCreate(ctx, target, db, 10, map[string]any{"turn": 0.0}); err != nil {
		t.Fatal(err)
	}
	bare, err := benchkit.PagesPerCreate(ctx, target, db, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	withState, err := benchkit.PagesPerCreate(ctx, target, db, 10, map[string]any{"turn": 0.0})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pages written per create: %.1f without state, %.1f with a one-key state", bare, withState)
	// The session row, its key index and the index retention's idle
	// sweep walks (agent_sessions_updated, migration 11: every sweep
	// statement searches an index); plus the state row's page.
	if bare > 3 || withState > 4 {
		t.Errorf("a create writes %.1f pages (%.1f with state), want at most 3 (4)", bare, withState)
	}
}
