package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/sessionctl")

// testEnv is one test's directory, database path and manual clock.
type testEnv struct {
	t     *testing.T
	dir   string
	db    string
	clock *storetest.Clock
	pg    bool // db is a PostgreSQL URL (newPGEnv)
	// pgSeed, on PostgreSQL, puts a migrated store into the env's empty
	// schema (template_test.go).
	pgSeed *pgtest.Seedable
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	dir := t.TempDir()
	return &testEnv{t: t, dir: dir, db: filepath.Join(dir, "sessions.db"), clock: storetest.NewClock()}
}

// result is what one invocation returned and printed.
type result struct {
	args   []string
	code   int
	stdout string
	stderr string
}

// run runs sessionctl in-process on the env's database and clock.
func (e *testEnv) run(args ...string) result {
	return e.runStdin("", args...)
}

func (e *testEnv) runStdin(stdin string, args ...string) result {
	e.t.Helper()
	return e.runWith(nil, stdin, args...)
}

// runWith is runStdin with the globals adjusted by setup (when not nil).
func (e *testEnv) runWith(setup func(g *globals), stdin string, args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, now: e.clock.Now}
	if setup != nil {
		setup(g)
	}
	full := append([]string{"--db", e.db}, args...)
	// A create on a missing file starts from a copy of the migrated
	// template (template_test.go), removed again if create never opened it.
	seeded := len(args) > 0 && args[0] == "create" && e.seedFromTemplate()
	code := g.run(context.Background(), full)
	if seeded {
		e.unseedIfUnopened(code)
	}
	return result{args: args, code: code, stdout: out.String(), stderr: errb.String()}
}

// want fails the test unless the invocation exited with code.
func (r result) want(t *testing.T, code int) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("sessionctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// oneLineErr fails unless stderr is exactly one line containing want.
func (r result) oneLineErr(t *testing.T, want string) result {
	t.Helper()
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("sessionctl %s: stderr is not one line: %q", strings.Join(r.args, " "), r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("sessionctl %s: stderr %q does not contain %q", strings.Join(r.args, " "), r.stderr, want)
	}
	return r
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalize replaces the env's directory and random UUIDs so that output
// can be compared with golden files.
func (e *testEnv) normalize(s string) string {
	s = strings.ReplaceAll(s, e.dir, "$TMP")
	return uuidRE.ReplaceAllString(s, "<uuid>")
}

// golden compares got with testdata/sessionctl/name.golden (rewritten with
// -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "sessionctl", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run go test ./cmd/sessionctl -update)", path, err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cmd/sessionctl -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// fileState records the bytes of the database file and its WAL, to prove
// a command changed nothing.
// On PostgreSQL (path is a URL) it records every table's rows instead.
func fileState(t *testing.T, path string) map[string][]byte {
	t.Helper()
	if pgstore.IsURL(path) {
		return pgState(t, path)
	}
	m := map[string][]byte{}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err == nil {
			m[suffix] = b
		}
	}
	return m
}

// sameFiles fails unless the database file and its WAL hold the same bytes.
// A WAL file without frames may appear: the store's read-only probe of a
// file it refuses leaves an empty one behind (as SQLite does for any
// read-only connection to a WAL database); it holds no data.
func sameFiles(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok || !bytes.Equal(v, w) {
			t.Errorf("file %q changed", "db"+k)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok && len(v) > 0 {
			t.Errorf("file %q was created with %d bytes", "db"+k, len(v))
		}
	}
}
