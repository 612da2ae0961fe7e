//go:build unix

package sqlstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

// TestRemove: a closed store goes with every file beside it; one whose
// writer lock another holder has is refused and left whole; a path with
// no database is no error.
func TestRemove(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if err := os.WriteFile(f, nil, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
	}

	// Another holder of the writer lock (a second open file description
	// locks like another process).
	lock, err := os.OpenFile(sqlstore.WriterLockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	var inUse *sqlstore.InUseError
	if err := sqlstore.Remove(path); !errors.As(err, &inUse) || inUse.Path != path || inUse.How == "" {
		t.Fatalf("Remove of a held store: %v, want an *InUseError", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("a refused Remove removed the database: %v", err)
	}
	lock.Close()

	if err := sqlstore.Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, f := range sqlstore.Files(path) {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is left: %v", filepath.Base(f), err)
		}
	}
	if err := sqlstore.Remove(path); err != nil {
		t.Errorf("Remove of nothing: %v", err)
	}
}
