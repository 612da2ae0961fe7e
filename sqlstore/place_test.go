package sqlstore_test

// Where the database lives (issue 14, items 9 and 10): a missing directory
// is reported as such, and a database that cannot be written — immutable
// file, immutable directory — is refused at open without leaving anything
// beside it.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func TestOpenMissingDirectory(t *testing.T) {
	base := t.TempDir()
	for _, path := range []string{
		filepath.Join(base, "missing", "s.db"),
		filepath.Join(base, "missing", "deeper", "s.db"),
	} {
		_, err := sqlstore.Open(context.Background(), path)
		switch {
		case err == nil:
			t.Fatalf("open %s succeeded", path)
		case errors.Is(err, store.ErrReadOnly):
			t.Errorf("open %s: %v: a missing directory is not a read-only database", path, err)
		case !errors.Is(err, fs.ErrNotExist):
			t.Errorf("open %s: %v, want fs.ErrNotExist", path, err)
		case !strings.Contains(err.Error(), "the directory "+filepath.Dir(path)+" does not exist"):
			t.Errorf("open %s: %q does not name the missing directory", path, err)
		}
	}
	// The parent is a file.
	file := filepath.Join(base, "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlstore.Open(context.Background(), filepath.Join(file, "s.db")); err == nil ||
		!strings.Contains(err.Error(), "is not a directory") || errors.Is(err, store.ErrReadOnly) {
		t.Errorf("open under a file: %v", err)
	}
	if names := dirNames(t, base); len(names) != 1 || names[0] != "plain" {
		t.Errorf("open created %v", names)
	}
}

// chattr sets or clears the immutable attribute of path; the test skips
// where that is not possible (not root, or a file system without it).
func chattr(t *testing.T, flag, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("chattr +i needs root")
	}
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skip("no chattr")
	}
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr %s %s: %v: %s", flag, path, err, out)
	}
}

func dirNames(t *testing.T, dir string) []string {
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

// TestOpenImmutable: an immutable database file, or a database in an
// immutable directory, is refused at open with ErrReadOnly, and the
// directory is left exactly as it was (no -wal, -shm or -writer.lock).
// Root ignores permission bits, so immutability is what makes a file
// read-only for it; TestReadOnly covers permissions without root.
func TestOpenImmutable(t *testing.T) {
	for _, c := range []struct {
		name     string
		existing bool
		file     bool // make the file immutable (else the directory)
	}{
		{"file", true, true},
		{"dir", true, false},
		{"new-in-dir", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "s.db")
			if c.existing {
				st, err := sqlstore.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Governance().Create(context.Background(), longSession("keep", 1)); err != nil {
					t.Fatal(err)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				os.Remove(path + "-writer.lock")
			}
			target := dir
			if c.file {
				target = path
			}
			chattr(t, "+i", target)
			t.Cleanup(func() { exec.Command("chattr", "-i", target).Run() })
			before := dirFiles(t, dir)
			st, err := sqlstore.Open(context.Background(), path)
			if err == nil {
				st.Close()
				t.Fatal("open succeeded")
			}
			if !errors.Is(err, store.ErrReadOnly) {
				t.Fatalf("open: %v, want ErrReadOnly", err)
			}
			after := dirFiles(t, dir)
			if len(after) != len(before) {
				t.Errorf("open left files beside the database: %v (before: %d files)", dirNames(t, dir), len(before))
			}
			for name, b := range before {
				if after[name] != b {
					t.Errorf("%s changed", name)
				}
			}
		})
	}
}
