package pgstore_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestTenantRoleKeepsOtherTenantsUploadContent: upload content is stored
// once per digest across the store, so when a store connected as a tenant
// role (subject to row-level security) drops its last reference to some
// content, the trigger that collects unreferenced content must still see
// another tenant's upload of the same bytes (migration 22: it runs with
// its owner's rights) and keep them.
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
	// Tenant a's only reference to the shared content goes: by an
	// overwrite with other content, then with its session.
	put(ta.Runtime(), "rt-a", []byte("something else"))
	if _, err := ta.Runtime().Remove(ctx, "rt-a"); err != nil {
		t.Fatalf("remove as the tenant role: %v", err)
	}

	_, got, err := tb.Runtime().ReadUpload(ctx, "rt-b", "f")
	if err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("tenant b's upload after tenant a dropped the same content: %q, %v", got, err)
	}
}
