package sqlstore

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Building a database's schema (the fourteen migrations) is the dearest
// part of most tests here: about 0.2 s per new file without the race
// detector and several seconds with it, against a few milliseconds to
// copy a file. Tests that only need a fresh, empty store therefore start
// from a copy of one template built once per test process, by the same
// createFresh that Open uses for a missing file (the copy has the same
// schema, auto-vacuum mode and journal mode byte for byte; only goose's
// applied-at times are those of the template). Tests about creating,
// migrating or refusing a file keep making their own.

var dbTemplate struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// FreshDBPath returns the path of a new session store in a temporary
// directory of t: a copy of the migrated, empty template. Open on it
// finds the schema current and migrates nothing.
func FreshDBPath(t testing.TB, name string) string {
	t.Helper()
	dbTemplate.once.Do(func() {
		dbTemplate.dir, dbTemplate.err = os.MkdirTemp("", "sqlstore-template-")
		if dbTemplate.err != nil {
			return
		}
		dbTemplate.path = filepath.Join(dbTemplate.dir, "template.db")
		cfg := defaultConfig()
		dbTemplate.err = createFresh(context.Background(), dbTemplate.path, &cfg)
	})
	if dbTemplate.err != nil {
		t.Fatalf("template database: %v", dbTemplate.err)
	}
	b, err := os.ReadFile(dbTemplate.path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dbTemplate.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	return path
}

// RemoveTemplate removes the template's directory (TestMain calls it when
// the tests are done).
func RemoveTemplate() {
	if dbTemplate.dir != "" {
		os.RemoveAll(dbTemplate.dir)
	}
}
