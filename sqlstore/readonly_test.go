package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

func TestReadOnlyRefusesWritesAndLeavesTheFileAlone(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "sessions.db")
	w, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := w.Governance().Create(ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conversations().Save(ctx, store.NewConversation("c/1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := func() []string {
		ents, _ := os.ReadDir(filepath.Dir(path))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	dirBefore := entries()

	ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	if !ro.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	storetest.CheckReadOnly(t, ro, sess.ID, "c/1")
	got, err := ro.Governance().Get(ctx, sess.ID)
	if err != nil || got.CallsMade != 0 {
		t.Fatalf("Get after refused writes: %+v, %v", got, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the database file changed under a read-only store")
	}
	// SQLite may create the -wal and -shm files a reader of a WAL
	// database shares with writers; the WAL must hold nothing.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Errorf("a read-only store wrote %d bytes of WAL (files before: %v, after: %v)", fi.Size(), dirBefore, entries())
	}
}

func TestReadOnlyOpenRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, err := sqlstore.Open(ctx, filepath.Join(dir, "missing.db"), sqlstore.WithReadOnly(true))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a read-only open created the database file")
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, bytes.Repeat([]byte("x"), 4096), 0o600)
	if _, err := sqlstore.Open(ctx, junk, sqlstore.WithReadOnly(true)); !errors.Is(err, store.ErrNotSessionStore) {
		t.Errorf("not a database: err = %v, want ErrNotSessionStore", err)
	}
}
