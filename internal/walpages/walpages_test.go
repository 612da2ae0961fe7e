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
