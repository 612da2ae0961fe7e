package sqlstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestUploadBlobsMigrationSplitsSharedContent: migration 25 gives each
// tenant a copy of content its uploads shared with another tenant's, and
// its down step merges the copies back into one blob per digest; the
// uploads read the same bytes at every step.
func TestUploadBlobsMigrationSplitsSharedContent(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "blobs.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("one file, two tenants and the default one")
	runtimeOf := func(st *sqlstore.Store, tenant string) store.Runtime {
		t.Helper()
		if tenant == "" {
			return st.Runtime()
		}
		ts, err := st.Tenant(tenant)
		if err != nil {
			t.Fatal(err)
		}
		return ts.Runtime()
	}
	tenants := []string{"", "mig-a", "mig-b"}
	for _, name := range tenants {
		rt, id := runtimeOf(st, name), "rt-"+name
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "f", WorkspacePath: "f", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	p, db, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(when, q string, want int) {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil || n != want {
			t.Fatalf("%s: %s = %d, %v; want %d", when, q, n, err, want)
		}
	}
	const joined = `SELECT count(*) FROM uploads AS u JOIN upload_blobs AS b ON b.sha256 = u.sha256`
	count("at 25", `SELECT count(*) FROM upload_blobs`, 3)
	// Down to the step before 25 (the later steps first).
	if rs, err := p.DownTo(ctx, 24); err != nil || len(rs) == 0 || !strings.Contains(rs[len(rs)-1].Source.Path, "tenant_upload_blobs") {
		t.Fatalf("down from 25: %+v, %v", rs, err)
	}
	count("down from 25", `SELECT count(*) FROM upload_blobs`, 1)
	count("down from 25", joined, 3)
	if _, err := p.UpTo(ctx, 25); err != nil {
		t.Fatalf("up to 25 again: %v", err)
	}
	count("up again", `SELECT count(*) FROM upload_blobs`, 3)
	count("up again", joined+` AND b.tenant = u.tenant`, 3)
	var fkProblems int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fkProblems); err != nil || fkProblems != 0 {
		t.Fatalf("foreign key check: %d, %v", fkProblems, err)
	}
	st, err = sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range tenants {
		if _, got, err := runtimeOf(st, name).ReadUpload(ctx, "rt-"+name, "f"); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%q reads %q, %v after the migration", name, got, err)
		}
	}
}
