// Package sqltest gives tests of other packages fresh SQLite session
// stores cheaply. Migrating a new file is the dearest part of most such
// tests (seconds under the race detector, for the schema alone), so
// FreshPath copies one template migrated once per test process. A test
// binary that uses it calls Cleanup from its TestMain.
package sqltest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

var template struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// FreshPath returns the path of a new, empty session store named name in
// a temporary directory of t: a copy of the migrated template, which Open
// finds current (it migrates nothing).
func FreshPath(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	Seed(t, path)
	return path
}

// Seed writes a copy of the migrated template at path, for a test whose
// store must live at a path of its own choosing (a directory it also
// inspects); path must not exist yet.
func Seed(t testing.TB, path string) {
	t.Helper()
	template.once.Do(build)
	if template.err != nil {
		t.Fatalf("template database: %v", template.err)
	}
	b, err := os.ReadFile(template.path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// build migrates the template in a directory of its own.
func build() {
	if template.dir, template.err = os.MkdirTemp("", "sessionstore-template-"); template.err != nil {
		return
	}
	template.path = filepath.Join(template.dir, "template.db")
	st, err := sqlstore.Open(context.Background(), template.path)
	if err != nil {
		template.err = err
		return
	}
	// Closing the last connection checkpoints the WAL into the file and
	// removes it: the file alone is the store.
	if template.err = st.Close(); template.err != nil {
		return
	}
	if _, err := os.Stat(template.path + "-wal"); err == nil {
		template.err = errors.New("the template's WAL outlived its store: a copy of the file alone would miss it")
	}
}

// Cleanup removes the template's directory; TestMain calls it after the
// tests ran.
func Cleanup() {
	if template.dir != "" {
		os.RemoveAll(template.dir)
	}
}
