package main

// demo --fresh (issue 14, item 1): it removes only a session store that no
// other process holds, and one holding data the demo did not write only
// with --yes; a file that is not a session store is never removed.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func TestDemoFreshRefusesForeignFiles(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, content := range [][]byte{
		[]byte("my notes, not a database\n"),
		{},
		append([]byte("SQLite format 3\x00"), make([]byte, 4096)...),
	} {
		if err := os.WriteFile(e.db, content, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"demo", "--fresh"}, {"demo", "--fresh", "--yes"}} {
			// Not a session store (an empty file), or one SQLite calls
			// damaged (a storage failure).
			if r := e.run(args...); r.code != exitNotStore && r.code != exitStorage && r.code != exitError {
				t.Fatalf("%q on %q: exit %d, stderr %q", args, content, r.code, r.stderr)
			}
			if b, err := os.ReadFile(e.db); err != nil || !bytes.Equal(b, content) {
				t.Fatalf("%q: the file changed or went: %v", args, err)
			}
		}
	}
	// A SQLite database of another application.
	os.Remove(e.db)
	other := &testEnv{t: t, dir: e.dir, db: e.db, clock: e.clock}
	db := rawDB(t, other.db)
	if _, err := db.Exec("CREATE TABLE notes (body TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := fileState(t, e.db)
	e.run("demo", "--fresh", "--yes").want(t, exitError).oneLineErr(t, "is not a session store")
	sameFiles(t, before, fileState(t, e.db))
}

// TestDemoFreshKeepsOtherData: a store holding sessions the demo did not
// write is removed only with --yes.
func TestDemoFreshKeepsOtherData(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	listed := func() int {
		var page listJSON
		if err := json.Unmarshal([]byte(e.run("list", "--json").want(t, 0).stdout), &page); err != nil {
			t.Fatal(err)
		}
		return len(page.Items)
	}
	e.run("demo").want(t, 0)
	one := listed() // the governed sessions of one demo run
	e.run("create", "--id", "mine", "--agent", "me", "--budget", "3").want(t, 0)
	e.run("demo", "--fresh").want(t, exitError).oneLineErr(t, "holds data the demo did not write (1 governed sessions of other agents): give --yes")
	e.run("show", "mine").want(t, 0)
	e.run("demo", "--fresh", "--yes").want(t, 0)
	e.run("show", "mine").want(t, exitNotFound)
	// A store written by demos only goes without --yes.
	e.run("demo").want(t, 0)
	e.run("demo", "--fresh").want(t, 0)
	if n := listed(); n != one {
		t.Fatalf("after demo --fresh: %d sessions, want the %d of one demo", n, one)
	}
	e.run("demo", "--yes").want(t, exitUsage).oneLineErr(t, "--yes goes with --fresh")
}

// TestDemoFreshRefusesHeldDatabase: a database another process holds —
// open and idle, holding the writer lock, or writing — is not removed,
// whatever the flags; its acknowledged data stays.
func TestDemoFreshRefusesHeldDatabase(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"hold-open", "hold-lock"} {
		t.Run(role, func(t *testing.T) {
			e := newTestEnv(t)
			e.run("demo").want(t, 0)
			e.run("create", "--id", "acked", "--agent", "me", "--budget", "3").want(t, 0)
			h := startHelper(t, role, true, e.db)
			before := fileState(t, e.db)
			e.run("demo", "--fresh", "--yes").want(t, exitError).oneLineErr(t, "is in use")
			sameFiles(t, before, fileState(t, e.db))
			h.stop(t) // (opening the store waits for a held writer lock)
			e.run("show", "acked").want(t, 0)
			e.run("demo", "--fresh", "--yes").want(t, 0)
			e.run("show", "acked").want(t, exitNotFound)
		})
	}
}

// rawDB opens (creating) a SQLite file without the store.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDemoSearchableFromTheConsole: what the demo writes is in the search
// index when it ends, so that the console of sessionctl serve, read-only
// and unable to fold the index itself, finds it (its search answered
// "no matches" for text on its own pages).
func TestDemoSearchableFromTheConsole(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	if r := e.run("demo").want(t, 0); !strings.Contains(r.stdout, `search: "durable" is said in message #3 of conversation`) {
		t.Errorf("demo:\n%s", r.stdout)
	}
	ctx := context.Background()
	ro, err := sqlstore.Open(ctx, e.db, sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, q := range []string{"durable", "sqlstore"} {
		res, err := ro.Search(ctx, store.SearchQuery{Query: q})
		if err != nil || len(res.Hits) == 0 {
			t.Errorf("a read-only store searching %q after the demo: %d hits, %v", q, len(res.Hits), err)
		}
	}
}
