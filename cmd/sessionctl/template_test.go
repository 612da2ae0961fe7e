package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// Creating a database file (its fourteen migrations) is the dearest step
// of most tests here: about 3 s of CPU under the race detector, against a
// few tens of milliseconds for every later command on it. Most tests
// begin with sessionctl create, or a fixture written through the library,
// on a file that does not exist yet, and what they test is not the
// creation. For those two starts only, the env's file is first a copy of a
// template that sessionctl's own open (sqlstore.Open) created and closed
// once per test process: a migrated store with no records, which Open
// finds current and leaves as it is. Every other command, and every test
// of what a missing file does, still meets a missing file.
//
// On PostgreSQL the same two starts on a schema that holds nothing yet
// swap in, under the env's database name, a clone of a template database
// holding a migrated store in a schema of the same name (internal/pgtest):
// a fresh schema's Open runs every migration, about 1 s of CPU under the
// race detector.

var cliTemplate struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// buildTemplate creates the template database once per process.
func buildTemplate() (string, error) {
	cliTemplate.once.Do(func() {
		cliTemplate.dir, cliTemplate.err = os.MkdirTemp("", "sessionctl-template-")
		if cliTemplate.err != nil {
			return
		}
		cliTemplate.path = filepath.Join(cliTemplate.dir, "template.db")
		st, err := (&globals{db: cliTemplate.path}).openOrCreate(context.Background())
		if err != nil {
			cliTemplate.err = err
			return
		}
		cliTemplate.err = st.Close()
	})
	return cliTemplate.path, cliTemplate.err
}

// TestMain removes the template's directory, the template databases and
// the built binary when the tests are done. With
// $SESSIONCTL_TEST_AS_MAIN=1 the test binary is sessionctl itself (the
// completion scripts' tests call it from a shell, asSessionctl).
func TestMain(m *testing.M) {
	if os.Getenv("SESSIONCTL_TEST_AS_MAIN") == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	if cliTemplate.dir != "" {
		os.RemoveAll(cliTemplate.dir)
	}
	pgtest.DropTemplate()
	if builtBinary.dir != "" { // e2e_test.go
		os.RemoveAll(builtBinary.dir)
	}
	os.Exit(code)
}

// seedFromTemplate copies the template to the env's database file when it
// is a SQLite file that does not exist yet (on PostgreSQL: swaps in a
// migrated store when the env's schema holds nothing),
// and reports whether it did.
func (e *testEnv) seedFromTemplate() bool {
	e.t.Helper()
	if e.pg {
		if e.pgSeed == nil {
			return false
		}
		return e.pgSeed.Seed(e.t)
	}
	if _, err := os.Stat(e.db); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if _, err := os.Stat(filepath.Dir(e.db)); err != nil {
		return false // a test of a missing directory: leave it to the command
	}
	if _, err := os.Stat(sqlstore.WriterLockPath(e.db)); !errors.Is(err, fs.ErrNotExist) {
		return false // a lock left by an earlier store: unseedIfUnopened could not tell
	}
	path, err := buildTemplate()
	if err != nil {
		e.t.Fatalf("template database: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.db, b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return true
}

// unseedIfUnopened undoes seedFromTemplate when the command never opened
// the store (a usage error, say): sqlstore.Open leaves its writer lock
// file beside the database, so without one the command did not open it,
// and without the copy it would not have created the file either. On
// PostgreSQL, where nothing is left to tell, a usage error (exit code 2:
// every refusal create makes before it opens the store) puts the empty
// database back.
func (e *testEnv) unseedIfUnopened(code int) {
	e.t.Helper()
	if e.pg {
		if code == exitUsage {
			e.pgSeed.Unseed(e.t)
		}
		return
	}
	if _, err := os.Stat(sqlstore.WriterLockPath(e.db)); errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(e.db); err != nil {
			e.t.Fatal(err)
		}
	}
}
