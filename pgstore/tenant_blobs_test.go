package pgstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestTenantRoleKeepsOtherTenantsUploadContent: when a store connected as
// a tenant role (subject to row-level security) drops its last reference
// to some content, the trigger that collects unreferenced content (with
// its owner's rights since migration 22) deletes that tenant's copy only:
// since migration 25 each tenant has a blob of its own for the same
// bytes, which the tenant role writes under its row-level policy.
func TestTenantRoleKeepsOtherTenantsUploadContent(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	role := newTenantRole(t, ctx, tenantSchemaOf(t, loc), true)
	roleLoc, err := withParam(loc, "user", role)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pgstore.Open(ctx, roleLoc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatalf("open as %s: %v", role, err)
	}
	defer rs.Close()

	shared := []byte("the same file, uploaded by two tenants")
	put := func(rt store.Runtime, session string, content []byte) {
		t.Helper()
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: session, RefID: "f", WorkspacePath: "f.txt", Content: content}); err != nil {
			t.Fatalf("upload to %s: %v", session, err)
		}
	}
	tb, err := st.Tenant("tenant-b")
	if err != nil {
		t.Fatal(err)
	}
	newSession := store.NewRuntimeSession{ID: "rt-b", AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatModeChat}
	if _, err := tb.Runtime().Insert(ctx, newSession); err != nil {
		t.Fatal(err)
	}
	put(tb.Runtime(), "rt-b", shared)

	ta, err := rs.Tenant("tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	newSession.ID = "rt-a"
	if _, err := ta.Runtime().Insert(ctx, newSession); err != nil {
		t.Fatalf("insert as the tenant role: %v", err)
	}
	put(ta.Runtime(), "rt-a", shared)
	blobs := func(when, tenant string, want int64) {
		t.Helper()
		n, err := harness.Count(ctx, loc, `SELECT count(*) FROM upload_blobs WHERE tenant = '`+tenant+`'`)
		if err != nil || n != want {
			t.Fatalf("%s: %d blobs of %s, %v; want %d", when, n, tenant, err, want)
		}
	}
	blobs("both uploaded the same file", "tenant-a", 1)
	blobs("both uploaded the same file", "tenant-b", 1)
	// Tenant a's only reference to the shared content goes: by an
	// overwrite with other content, then with its session.
	put(ta.Runtime(), "rt-a", []byte("something else"))
	if _, err := ta.Runtime().Remove(ctx, "rt-a"); err != nil {
		t.Fatalf("remove as the tenant role: %v", err)
	}

	blobs("a removed its session", "tenant-a", 0)
	blobs("a removed its session", "tenant-b", 1)
	_, got, err := tb.Runtime().ReadUpload(ctx, "rt-b", "f")
	if err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("tenant b's upload after tenant a dropped the same content: %q, %v", got, err)
	}
}

// TestUploadBlobsMigrationSplitsSharedContent: migration 25 gives each
// tenant a copy of content its uploads shared with another tenant's, and
// its down step merges the copies back into one blob per digest; the
// uploads read the same bytes at every step.
func TestUploadBlobsMigrationSplitsSharedContent(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	content := []byte("one file, two tenants and the default one")
	rts := map[string]store.Runtime{"": st.Runtime()}
	for _, name := range []string{"mig-a", "mig-b"} {
		ts, err := st.Tenant(name)
		if err != nil {
			t.Fatal(err)
		}
		rts[name] = ts.Runtime()
	}
	for name, rt := range rts {
		id := "rt-" + name
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "f", WorkspacePath: "f", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	count := func(when, q string, want int64) {
		t.Helper()
		if n, err := harness.Count(ctx, loc, q); err != nil || n != want {
			t.Fatalf("%s: %s = %d, %v; want %d", when, q, n, err, want)
		}
	}
	const joined = `SELECT count(*) FROM uploads AS u JOIN upload_blobs AS b ON b.sha256 = u.sha256`
	count("at 25", `SELECT count(*) FROM upload_blobs`, 3)
	p, db, pool, err := pgstore.NewMigrationProvider(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	defer db.Close()
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
	st, err = pgstore.Open(ctx, loc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name := range rts {
		var rt store.Runtime = st.Runtime()
		if name != "" {
			ts, err := st.Tenant(name)
			if err != nil {
				t.Fatal(err)
			}
			rt = ts.Runtime()
		}
		if _, got, err := rt.ReadUpload(ctx, "rt-"+name, "f"); err != nil || !bytes.Equal(got, content) {
			t.Fatalf("%q reads %q, %v after the migration", name, got, err)
		}
	}
}
