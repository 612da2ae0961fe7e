package main

// backup (issue 14, item 2): a target that is empty, one of the database's
// own files, or an existing file without --force is refused and nothing
// changes; a copy is checked and renamed into place, never left half
// written. SQLite only: on PostgreSQL backup is refused (pg_dump).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

func TestBackupRefusesBadTargets(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	e.run("list").want(t, 0) // leaves the -writer.lock file
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(e.dir, link); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(e.dir, "hard.db")
	if err := os.Link(e.db, hard); err != nil {
		t.Fatal(err)
	}
	before := fileState(t, e.db)
	names := lsDir(t, e.dir)
	for _, c := range []struct {
		dest string
		code int
		want string
	}{
		{"", exitUsage, "FILE must not be empty"},
		{e.db, exitUsage, "is the database's own file sessions.db"},
		{e.db + "-wal", exitUsage, "is the database's own file sessions.db-wal"},
		{e.db + "-shm", exitUsage, "is the database's own file sessions.db-shm"},
		{e.db + "-writer.lock", exitUsage, "is the database's own file sessions.db-writer.lock"},
		{e.db + "-journal", exitUsage, "is the database's own file sessions.db-journal"},
		{filepath.Join(link, "sessions.db-wal"), exitUsage, "is the database's own file sessions.db-wal"},
		{filepath.Join(e.dir, "x", "..", "sessions.db-shm"), exitUsage, "is the database's own file sessions.db-shm"},
		{hard, exitUsage, "is the database's own file sessions.db"},
		{e.dir, exitError, "is a directory"},
		{filepath.Join(e.dir, "missing", "b.db"), exitError, "does not exist"},
	} {
		e.run("backup", c.dest).want(t, c.code).oneLineErr(t, c.want)
	}
	sameFiles(t, before, fileState(t, e.db))
	if got := lsDir(t, e.dir); !slices.Equal(got, names) {
		t.Errorf("files after the refusals: %v, before %v", got, names)
	}
	e.run("list").want(t, 0)

	// An existing target is kept, unless --force.
	old := filepath.Join(e.dir, "old.db")
	if err := os.WriteFile(old, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.run("backup", old).want(t, exitError).oneLineErr(t, "exists: remove it, choose another name, or give --force")
	if b, _ := os.ReadFile(old); string(b) != "precious" {
		t.Fatalf("the existing file changed: %q", b)
	}
	var doc backupJSON
	if err := json.Unmarshal([]byte(e.run("backup", old, "--force", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Replaced || doc.IntegrityCheck != "ok" || doc.Rows == 0 {
		t.Errorf("backup --force: %+v", doc)
	}
	copyEnv := &testEnv{t: t, dir: e.dir, db: old, clock: e.clock}
	if got, want := copyEnv.run("list", "--json").want(t, 0).stdout, e.run("list", "--json").want(t, 0).stdout; got != want {
		t.Errorf("the copy lists\n%s\nthe source\n%s", got, want)
	}
}

// TestBackupCopyIsChecked: the copy is one self-contained file holding
// the source's rows, and no temporary file is left beside it.
func TestBackupCopyIsChecked(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.fixture()
	e.convFixture()
	dir := t.TempDir()
	dest := filepath.Join(dir, "b.db")
	r := e.run("backup", dest).want(t, 0)
	if !strings.Contains(r.stdout, "integrity_check ok") || !strings.Contains(r.stdout, "(as in the source)") {
		t.Errorf("backup: %s", r.stdout)
	}
	if got := lsDir(t, dir); !slices.Equal(got, []string{"b.db"}) {
		t.Errorf("files beside the copy: %v", got)
	}
	c := &testEnv{t: t, dir: dir, db: dest, clock: e.clock}
	if r := c.run("doctor").want(t, 0); !strings.Contains(r.stdout, "is healthy") {
		t.Errorf("doctor on the copy:\n%s", r.stdout)
	}
	sameDump(t, "backup", e.dump(), c.dump())
}

// TestBackupUnderWrites: backups taken while another writer commits are
// each one snapshot: the row counts of the copy match the source's in the
// snapshot the copy was read from, so every backup passes its check.
func TestBackupUnderWrites(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s", "--agent", "a", "--budget", "1").want(t, 0)
	st := e.openStore()
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var n atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			c := store.NewConversation(fmt.Sprintf("c%05d", i))
			c.Messages = []store.Message{store.UserMessage("hello"), store.AssistantMessage("hi")}
			if _, err := st.Conversations().Save(ctx, c); err != nil && ctx.Err() == nil {
				t.Error(err)
				return
			}
			n.Add(1)
		}
	}()
	dir := t.TempDir()
	for i := range 5 {
		e.run("backup", filepath.Join(dir, fmt.Sprintf("b%d.db", i))).want(t, 0)
	}
	cancel()
	wg.Wait()
	if n.Load() == 0 {
		t.Fatal("the writer wrote nothing during the backups")
	}
	t.Logf("%d conversations written during 5 backups", n.Load())
}
