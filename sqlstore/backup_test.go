package sqlstore_test

// Backup: a checked, self-contained copy of one snapshot, mode 0600, put
// in place only when whole; bad targets are refused and change nothing;
// backups taken while another goroutine writes are each consistent.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func TestBackupRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := writeStore(t)
	dir := t.TempDir()
	dest := filepath.Join(dir, "b.db")
	var steps []sqlstore.BackupStep
	var pages int64
	res, err := sqlstore.Backup(ctx, src, dest, sqlstore.BackupOptions{Progress: func(p sqlstore.BackupProgress) {
		if len(steps) == 0 || steps[len(steps)-1] != p.Step {
			steps = append(steps, p.Step)
		}
		pages = max(pages, p.PagesDone)
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []sqlstore.BackupStep{sqlstore.BackupCounting, sqlstore.BackupCopying, sqlstore.BackupChecking, sqlstore.BackupSyncing}
	if !slices.Equal(steps, want) || pages == 0 {
		t.Errorf("progress steps %v (pages %d), want %v", steps, pages, want)
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != sqlstore.BackupMode {
		t.Errorf("backup mode %v, want %v", fi.Mode().Perm(), sqlstore.BackupMode)
	}
	if res.IntegrityCheck != "ok" || res.Bytes != fi.Size() || res.Rows == 0 || res.Tables == 0 || res.SchemaVersion == 0 {
		t.Errorf("result %+v", res)
	}
	if got := dirNames(t, dir); !slices.Equal(got, []string{"b.db"}) {
		t.Errorf("files beside the copy: %v", got)
	}
	// The copy is a sound store holding the same sessions.
	integrityCheck(t, dest)
	if err := sqlstore.CheckIntact(ctx, dest); err != nil {
		t.Errorf("CheckIntact on the copy: %v", err)
	}
	a, b := openStore(t, src), openStore(t, dest)
	for _, id := range []string{"session-0000", "session-0019"} {
		x, err := a.Governance().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.Governance().Get(ctx, id)
		if err != nil {
			t.Fatalf("the copy: %v", err)
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			t.Errorf("%s: copy %+v, source %+v", id, y, x)
		}
	}
	if n, _ := b.Governance().CountActive(ctx, "agent-1"); n != 20 {
		t.Errorf("the copy has %d active sessions, want 20", n)
	}
}

func openStore(t *testing.T, path string) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestBackupRefusesBadTargets(t *testing.T) {
	ctx := context.Background()
	src := writeStore(t)
	dir := filepath.Dir(src)
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	if err := os.WriteFile(foreign, foreignDB(t, "CREATE TABLE notes (body TEXT)"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, dir)
	for _, c := range []struct {
		src, dest string
		want      error
	}{
		{src, "", store.ErrInvalidInput},
		{src, src, store.ErrInvalidInput},
		{src, sqlstore.WriterLockPath(src), store.ErrInvalidInput},
		{src, src + "-wal", store.ErrInvalidInput},
		{src, dir, store.ErrInvalidInput},
		{src, old, fs.ErrExist},
		{foreign, filepath.Join(dir, "f.db"), store.ErrNotSessionStore},
		{filepath.Join(dir, "missing.db"), filepath.Join(dir, "m.db"), fs.ErrNotExist},
	} {
		if _, err := sqlstore.Backup(ctx, c.src, c.dest, sqlstore.BackupOptions{}); !errors.Is(err, c.want) {
			t.Errorf("Backup(%s, %s): %v, want %v", filepath.Base(c.src), c.dest, err, c.want)
		}
	}
	sameDir(t, dir, before)
	// With Replace an existing file is replaced.
	if _, err := sqlstore.Backup(ctx, src, old, sqlstore.BackupOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
	integrityCheck(t, old)
}

// TestBackupUnderWrites: backups taken while another goroutine writes
// through an open store each pass their checks (the row counts of one
// snapshot) and open as stores.
func TestBackupUnderWrites(t *testing.T) {
	ctx := context.Background()
	src := sqlstore.FreshDBPath(t, "live.db")
	st := openStore(t, src)
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var n atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; wctx.Err() == nil; i++ {
			if _, err := st.Governance().Create(ctx, longSession(fmt.Sprintf("w-%05d", i), 1)); err != nil {
				t.Error(err)
				cancel() // ends the waits below
				return
			}
			n.Add(1)
		}
	}()
	dir := t.TempDir()
	var last int64
	for i := range 5 {
		for n.Load() < int64(i+1)*20 && wctx.Err() == nil {
			st.Governance().Get(ctx, "w-00000") // let the writer run
		}
		dest := filepath.Join(dir, fmt.Sprintf("b%d.db", i))
		res, err := sqlstore.Backup(ctx, src, dest, sqlstore.BackupOptions{})
		if err != nil {
			t.Fatalf("backup %d under writes: %v", i, err)
		}
		if res.Rows < last {
			t.Errorf("backup %d has %d rows, the one before %d", i, res.Rows, last)
		}
		last = res.Rows
		b := openStore(t, dest)
		if _, err := b.Governance().Get(ctx, "w-00000"); err != nil {
			t.Errorf("backup %d: %v", i, err)
		}
	}
	cancel()
	wg.Wait()
}
