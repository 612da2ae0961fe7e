package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

// Migrating a new SQLite file is the dearest part of most tests here
// (seconds under the race detector, for the schema alone). A test that
// needs a fresh, empty store opens a copy of one template migrated once
// per test process (freshDBPath), as sqlstore's own tests do.

var dbTemplate struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// freshDBPath returns the path of a new, empty session store named name
// in a temporary directory of t: a copy of the migrated template.
func freshDBPath(t testing.TB, name string) string {
	t.Helper()
	dbTemplate.once.Do(func() {
		if dbTemplate.dir, dbTemplate.err = os.MkdirTemp("", "archive-template-"); dbTemplate.err != nil {
			return
		}
		dbTemplate.path = filepath.Join(dbTemplate.dir, "template.db")
		st, err := sqlstore.Open(context.Background(), dbTemplate.path)
		if err != nil {
			dbTemplate.err = err
			return
		}
		// Closing the last connection checkpoints the WAL into the file
		// and removes it: the file alone is the store.
		dbTemplate.err = st.Close()
		if _, err := os.Stat(dbTemplate.path + "-wal"); err == nil {
			dbTemplate.err = os.ErrExist // a WAL left behind: the copy would miss it
		}
	})
	if dbTemplate.err != nil {
		t.Fatalf("template database: %v", dbTemplate.err)
	}
	b, err := os.ReadFile(dbTemplate.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// removeTemplate removes the template's directory (TestMain, when the
// tests are done).
func removeTemplate() {
	if dbTemplate.dir != "" {
		os.RemoveAll(dbTemplate.dir)
	}
}
