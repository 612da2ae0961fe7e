package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestCleanupDryRun: cleanup --dry-run lists exactly what cleanup then
// removes (closed, and expired whether marked or not) and changes nothing.
func TestCleanupDryRun(t *testing.T) {
	t.Parallel()
	bothBackends(t, testCleanupDryRun)
}

func testCleanupDryRun(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.fixture()
	before := fileState(t, e.db)
	r := e.run("cleanup", "--dry-run").want(t, 0)
	sameFiles(t, before, fileState(t, e.db))
	golden(t, "cleanup_dry_run", e.normalize(r.stdout))
	if !strings.HasPrefix(r.stdout, "would remove 2 closed or expired governed sessions\n") {
		t.Fatalf("dry run: %q", r.stdout)
	}
	e.run("cleanup", "--dry-run", "--vacuum").want(t, exitUsage)
	if r := e.run("cleanup", "--json").want(t, 0); !strings.Contains(r.stdout, `"removed": 2`) {
		t.Errorf("cleanup after the dry run: %s", r.stdout)
	}
	if r := e.run("cleanup", "--dry-run").want(t, 0); r.stdout != "would remove 0 closed or expired governed sessions\n" {
		t.Errorf("dry run after cleanup: %q", r.stdout)
	}
}

// TestExitStatusPerRefusal drives each command into each refusal it can
// meet and checks the documented status: the one mapping (exitFor)
// applies to every command, not only to use.
func TestExitStatusPerRefusal(t *testing.T) {
	t.Parallel()
	bothBackends(t, testExitStatusPerRefusal)
}

func testExitStatusPerRefusal(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.fixture()     // t-active (a1, read_file,list_dir, budget 5, rate 2/1m), t-closed, t-expired (past), t-spent (2/2)
	e.convFixture() // c1 with a run run-1
	e.agentFixture()
	e.run("create", "--id", "rated", "--agent", "a1", "--tool", "*", "--budget", "9", "--rate-limit", "1").want(t, 0)
	e.run("use", "rated", "--tool", "x").want(t, 0)
	e.run("use", "t-active", "--tool", "read_file", "--request-id", "r1").want(t, 0)
	e.run("create", "--id", "capped", "--agent", "solo", "--budget", "1", "--max-active", "1").want(t, 0)
	e.run("create", "--id", "lim", "--agent", "spender", "--tool", "*", "--budget", "9", "--limit", "cost=1USD").want(t, 0)
	for _, c := range []struct {
		code int
		args []string
	}{
		// not found
		{exitNotFound, []string{"show", "nope"}},
		{exitNotFound, []string{"use", "nope", "--tool", "t"}},
		{exitNotFound, []string{"close", "nope"}},
		{exitNotFound, []string{"messages", "nope"}},
		{exitNotFound, []string{"messages", "nope", "--follow"}},
		{exitNotFound, []string{"artifacts", "nope"}},
		{exitNotFound, []string{"traces", "nope"}},
		{exitNotFound, []string{"runs", "nope"}},
		{exitNotFound, []string{"runs", "c1", "--follow", "--run", "nope"}},
		{exitNotFound, []string{"reports", "nope"}},
		{exitNotFound, []string{"uploads", "nope"}},
		{exitNotFound, []string{"agents", "show", "a", "u", "s"}},
		{exitNotFound, []string{"agents", "events", "a", "u", "s"}},
		{exitNotFound, []string{"agents", "events", "a", "u", "s", "--follow"}},
		{exitNotFound, []string{"agents", "state", "support", "ada", "nope"}},
		{exitNotFound, []string{"agents", "delete", "a", "u", "s", "--yes"}},
		{exitNotFound, []string{"delete", "nope", "--yes"}},
		{exitNotFound, []string{"export", "nope"}},
		{exitNotFound, []string{"reserve", "nope", "--cost", "0.1USD", "--request-id", "q"}},
		{exitNotFound, []string{"settle", "t-active", "nope", "--cost", "0.1USD"}},
		{exitNotFound, []string{"release", "t-active", "nope"}},
		// agent mismatch
		{exitAgent, []string{"use", "t-active", "--agent", "a2", "--tool", "read_file"}},
		{exitAgent, []string{"reserve", "t-active", "--agent", "a2", "--cost", "0.1USD", "--request-id", "q"}},
		// closed
		{exitClosed, []string{"use", "t-closed", "--tool", "read_file"}},
		{exitClosed, []string{"close", "t-closed"}},
		{exitClosed, []string{"reserve", "t-closed", "--cost", "0.1USD", "--request-id", "q"}},
		// expired
		{exitExpired, []string{"use", "t-expired", "--tool", "x"}},
		{exitExpired, []string{"reserve", "t-expired", "--cost", "0.1USD", "--request-id", "q"}},
		// budget, tool, rate, conflict
		{exitBudget, []string{"use", "t-spent", "--tool", "x"}},
		{exitTool, []string{"use", "t-active", "--tool", "delete_file"}},
		{exitRate, []string{"use", "rated", "--tool", "x"}},
		{exitConflict, []string{"use", "t-active", "--tool", "list_dir", "--request-id", "r1"}},
		{exitConflict, []string{"create", "--id", "t-active", "--agent", "a1", "--budget", "1"}},
		// spend limit
		{exitSpend, []string{"reserve", "lim", "--agent", "spender", "--cost", "2USD", "--request-id", "q"}},
		// too many sessions
		{exitTooMany, []string{"create", "--agent", "solo", "--budget", "1", "--max-active", "1"}},
		// usage
		{exitUsage, []string{"delete", "c1"}},
		{exitUsage, []string{"agents", "delete", "support", "ada", "s1"}},
	} {
		r := e.run(c.args...)
		if r.code != c.code {
			t.Errorf("sessionctl %s: exit %d, want %d (stderr %q)", strings.Join(c.args, " "), r.code, c.code, r.stderr)
		}
	}
	// The statuses every command shares: a newer schema, not a store.
	if !e.pg {
		setSchemaVersion(t, e.db, 9999)
		for _, args := range [][]string{{"agents"}, {"delete", "c1", "--yes"}, {"messages", "c1", "--follow"}, {"cleanup", "--dry-run"}} {
			e.run(args...).want(t, exitSchemaTooNew)
		}
	}
}

// TestExitTableIsComplete: every status exitFor can return is documented,
// once, in order.
func TestExitTableIsComplete(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	last := -1
	for _, e := range exitTable {
		if seen[e.code] || e.code <= last {
			t.Errorf("exit status %d documented twice or out of order", e.code)
		}
		seen[e.code] = true
		last = e.code
	}
	for _, k := range errorKinds {
		if !seen[k.r.code] {
			t.Errorf("kind %s exits %d, which help exit does not list", k.r.kind, k.r.code)
		}
	}
}

// TestBusyIsExit16: a write that cannot get the database, because another
// process holds its write lock past the store's busy retries, exits 16 with
// a one-line error and writes nothing; reads go on meanwhile (WAL), and
// the same command succeeds once the lock is released.
func TestBusyIsExit16(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	before := e.run("show", "t-active", "--json").want(t, 0).stdout
	db := rawDB(t, e.db)
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	impatient := func(g *globals) {
		g.sqliteOptions = []sqlstore.Option{sqlstore.WithBusyTimeout(20 * time.Millisecond), sqlstore.WithBusyRetry(200 * time.Millisecond)}
	}
	create := []string{"create", "--id", "late", "--agent", "a1", "--tool", "t", "--budget", "1"}
	e.runWith(impatient, "", create...).want(t, exitBusy).oneLineErr(t, "busy")
	e.runWith(impatient, "", "use", "t-active", "--tool", "read_file").want(t, exitBusy)
	e.runWith(impatient, "", "show", "t-active").want(t, 0)
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	e.run("show", "late").want(t, exitNotFound)
	if after := e.run("show", "t-active", "--json").want(t, 0).stdout; after != before {
		t.Errorf("the busy use changed the session:\n%s\nwas\n%s", after, before)
	}
	e.runWith(impatient, "", create...).want(t, 0)
}

// TestUseRefusalKinds: the kinds use prints as "refused (kind)" are
// exactly the store's Use refusals (store.UseRefusals), each with a kind
// word of its own.
func TestUseRefusalKinds(t *testing.T) {
	t.Parallel()
	words := map[string]bool{}
	for _, k := range store.UseRefusals() {
		r, ok := useRefusal(fmt.Errorf("use: %w", k))
		if !ok {
			t.Errorf("%v: not a refusal of use", k)
			continue
		}
		if words[r.kind] {
			t.Errorf("%v: kind %q printed for two refusals", k, r.kind)
		}
		words[r.kind] = true
	}
	for _, k := range errorKinds {
		if _, ok := useRefusal(k.target); ok != store.IsUseRefusal(k.target) {
			t.Errorf("%s: useRefusal says %v, store.IsUseRefusal %v", k.r.kind, ok, !ok)
		}
	}
}
