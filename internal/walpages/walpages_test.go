package walpages_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentstore/sessionstore/internal/walpages"
)

// TestObjects: the pages of one insert into a table with an index are
// the table's, the index's and nothing else (the file grows by neither),
// and a log of an older generation counts nothing.
func TestObjects(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
		"CREATE INDEX t_v ON t (v)",
		"INSERT INTO t (v) VALUES ('a')",
		"PRAGMA wal_checkpoint(TRUNCATE)",
		"INSERT INTO t (v) VALUES ('b')",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	by, err := walpages.Objects(ctx, db, path+"-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(by) != 2 || by["t"] != 1 || by["t_v"] != 1 {
		t.Errorf("pages of one insert: %v, want t 1 and t_v 1", by)
	}
	if got := walpages.Format(by, "%d"); !strings.HasPrefix(got, "  t ") || !strings.Contains(got, "t_v") {
		t.Errorf("Format: %q", got)
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if by, err := walpages.Objects(ctx, db, path+"-wal"); err != nil || len(by) != 0 {
		t.Errorf("an emptied log: %v, %v; want nothing", by, err)
	}
}

// TestPointerMapAndFreePages: in an auto-vacuum database, a page the file
// grows by writes its pointer-map page too, named as such; a page taken
// from the freelist is "(free)" while it is on the list.
func TestPointerMapAndFreePages(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=auto_vacuum(2)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)", "PRAGMA wal_checkpoint(TRUNCATE)",
		"CREATE TABLE u (id INTEGER PRIMARY KEY)") // a new root page at the end of the file
	by, err := walpages.Objects(ctx, db, path+"-wal")
	if err != nil {
		t.Fatal(err)
	}
	if by["(pointer map)"] != 1 || by["(free)"] != 0 || by["u"] != 1 {
		t.Errorf("pages of a new table in an auto-vacuum file: %v, want its root, the header and the pointer map", by)
	}
	// A page freed and not given back is on the freelist.
	exec("INSERT INTO t (v) SELECT printf('%.2000c', 'x') FROM (SELECT 1 UNION SELECT 2 UNION SELECT 3)",
		"PRAGMA wal_checkpoint(TRUNCATE)", "DELETE FROM t")
	if by, err = walpages.Objects(ctx, db, path+"-wal"); err != nil {
		t.Fatal(err)
	}
	if by["(free)"] == 0 {
		t.Errorf("pages of a delete that frees pages: %v, want freelist pages", by)
	}
}
