package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// testTenantUploadContent: plaintext upload content is shared within a
// tenant only. The same file uploaded in two tenants (and the default
// tenant) is one blob per tenant; twice in one tenant it is one blob;
// removing one tenant's uploads keeps every other tenant's content; and
// concurrent uploads of one file in two tenants still end with one blob
// each. Blob counts need the harness's Count; the reads are checked
// without it too.
func testTenantUploadContent(t *testing.T, e *env) {
	ta, tb := e.tenant(t, "uploads-a"), e.tenant(t, "uploads-b")
	def := e.st.Runtime()
	file := []byte("the same file in every tenant")
	insert := func(rt store.Runtime, id string) {
		t.Helper()
		if _, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatalf("insert %s: %v", id, err)
		}
	}
	put := func(rt store.Runtime, id, ref string, content []byte) {
		t.Helper()
		if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: id, RefID: ref, WorkspacePath: ref, Content: content}); err != nil {
			t.Fatalf("upload %s/%s: %v", id, ref, err)
		}
	}
	read := func(rt store.Runtime, id, ref string, want []byte) {
		t.Helper()
		up, got, err := rt.ReadUpload(e.ctx, id, ref)
		if err != nil || !bytes.Equal(got, want) || up.SizeBytes != int64(len(want)) {
			t.Fatalf("read %s/%s: %q (%d bytes), %v; want %q", id, ref, got, up.SizeBytes, err, want)
		}
	}
	// wantBlobs checks the blobs of a, b and the default tenant (of this
	// test's sessions), counted behind the store's back in one query
	// (each Count opens a connection): a + 100 b + 10000 default.
	wantBlobs := func(when string, a, b, def int64) {
		t.Helper()
		if e.h.Count == nil {
			return
		}
		n, err := e.h.Count(e.ctx, e.loc, `SELECT
			(SELECT count(*) FROM upload_blobs WHERE tenant = 'uploads-a')
			+ 100 * (SELECT count(*) FROM upload_blobs WHERE tenant = 'uploads-b')
			+ 10000 * (SELECT count(*) FROM upload_blobs WHERE tenant = '' AND sha256 IN
				(SELECT sha256 FROM uploads WHERE tenant = '' AND session_id LIKE 'tu-%'))`)
		if err != nil {
			t.Fatal(err)
		}
		if ga, gb, gd := n%100, n/100%100, n/10000; ga != a || gb != b || gd != def {
			t.Fatalf("%s: blobs of a, b, default = %d, %d, %d; want %d, %d, %d", when, ga, gb, gd, a, b, def)
		}
	}

	insert(ta.Runtime(), "tu-a1")
	insert(ta.Runtime(), "tu-a2")
	insert(tb.Runtime(), "tu-b1")
	insert(def, "tu-d1")

	put(ta.Runtime(), "tu-a1", "one", file)
	put(ta.Runtime(), "tu-a1", "two", file)
	put(ta.Runtime(), "tu-a2", "one", file)
	wantBlobs("the same file three times in a", 1, 0, 0)
	put(tb.Runtime(), "tu-b1", "one", file)
	wantBlobs("and once in b", 1, 1, 0)
	put(def, "tu-d1", "one", file)
	wantBlobs("and once in the default tenant", 1, 1, 1)

	// Tenant a drops its references: by an overwrite, then with its
	// sessions. b's and the default tenant's copies stay.
	other := []byte("something else")
	put(ta.Runtime(), "tu-a1", "one", other)
	wantBlobs("a overwrote one of three", 2, 1, 1)
	for _, id := range []string{"tu-a1", "tu-a2"} {
		if ok, err := ta.Runtime().Remove(e.ctx, id); err != nil || !ok {
			t.Fatalf("remove %s: %v, %v", id, ok, err)
		}
	}
	wantBlobs("a removed its sessions", 0, 1, 1)
	read(tb.Runtime(), "tu-b1", "one", file)
	read(def, "tu-d1", "one", file)

	// b drops its copy: the default tenant's stays.
	if ok, err := tb.Runtime().Remove(e.ctx, "tu-b1"); err != nil || !ok {
		t.Fatalf("remove tu-b1: %v, %v", ok, err)
	}
	wantBlobs("b removed its session", 0, 0, 1)
	read(def, "tu-d1", "one", file)

	// Contention: both tenants upload one new file from many goroutines
	// at once, into refs of their own.
	shared := []byte("uploaded by many writers of two tenants at once")
	insert(ta.Runtime(), "tu-a3")
	insert(tb.Runtime(), "tu-b2")
	writers := 8
	if raceEnabled {
		writers = 3 // still two tenants' writers at once, at a fraction of the cost
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers)
	for i := range writers {
		for _, w := range []struct {
			rt store.Runtime
			id string
		}{{ta.Runtime(), "tu-a3"}, {tb.Runtime(), "tu-b2"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := w.rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: w.id, RefID: fmt.Sprintf("r%d", i), WorkspacePath: "f", Content: shared})
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent upload: %v", err)
		}
	}
	wantBlobs("many writers in a and b", 1, 1, 1)
	// a's session goes while b's uploads stay readable, every one.
	if ok, err := ta.Runtime().Remove(e.ctx, "tu-a3"); err != nil || !ok {
		t.Fatalf("remove tu-a3: %v, %v", ok, err)
	}
	wantBlobs("a removed the session of the shared file", 0, 1, 1)
	for i := range writers {
		read(tb.Runtime(), "tu-b2", fmt.Sprintf("r%d", i), shared)
	}
}
