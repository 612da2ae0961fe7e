package main

// Where the database lives (issue 14, items 9 and 10), through the CLI: a
// --db in a missing directory says so (not "read-only"), and an immutable
// database is refused without files appearing beside it. SQLite only: a
// PostgreSQL URL has no directory.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMissingDirectory(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.db = filepath.Join(e.dir, "missing", "s.db")
	for _, args := range [][]string{
		{"create", "--agent", "a", "--budget", "1"}, {"import", "-"}, {"demo"}, {"migrate", "up"},
		{"list"}, {"doctor"}, {"backup", filepath.Join(e.dir, "b.db")},
	} {
		r := e.runStdin(`{"format": "sessionctl-export", "version": 2}`, args...).want(t, exitError)
		r.oneLineErr(t, "the directory "+filepath.Join(e.dir, "missing")+" does not exist")
		if strings.Contains(r.stderr, "read-only") {
			t.Errorf("sessionctl %s: %s", args[0], r.stderr)
		}
	}
	if names := lsDir(t, e.dir); len(names) != 0 {
		t.Errorf("files created: %v", names)
	}
}

func lsDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// chattr sets or clears the immutable attribute of path; the test skips
// where that is not possible (not root, or no support in the file system).
func chattr(t *testing.T, flag, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chattr +i needs root")
	}
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr %s %s: %v: %s", flag, path, err, out)
	}
}

// TestImmutableDatabase: commands on an immutable database file, or on a
// database in an immutable directory, fail with a read-only error and
// leave the directory as it was: no -wal, -shm or -writer.lock.
func TestImmutableDatabase(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"file", "dir"} {
		t.Run(target, func(t *testing.T) {
			e := newTestEnv(t)
			e.db = filepath.Join(e.dir, "db", "s.db")
			if err := os.Mkdir(filepath.Dir(e.db), 0o755); err != nil {
				t.Fatal(err)
			}
			e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
			os.Remove(e.db + "-writer.lock")
			path := e.db
			if target == "dir" {
				path = filepath.Dir(e.db)
			}
			chattr(t, "+i", path)
			t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
			before := lsDir(t, filepath.Dir(e.db))
			for _, args := range [][]string{{"list"}, {"show", "s"}, {"use", "s", "--tool", "t"}, {"stats"}, {"export"}} {
				e.run(args...).want(t, exitStorage).oneLineErr(t, "database is read-only")
			}
			if after := lsDir(t, filepath.Dir(e.db)); !slices.Equal(before, after) {
				t.Errorf("files beside the database: %v, before %v", after, before)
			}
		})
	}
}
