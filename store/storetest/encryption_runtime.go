package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// Encryption of runtime sessions and their uploads (migration 00020).

// rtEncMarker is the distinctive plaintext of encrypted runtime sessions.
const rtEncMarker = "OKAPI-RUNTIME-5521"

// fillRuntime creates runtime session id with a marked workspace and one
// marked upload, and returns the upload's content.
func (e *encEnv) fillRuntime(st store.Store, id string) []byte {
	e.t.Helper()
	rt := st.Runtime()
	if _, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "agent", ChatMode: store.ChatModeChat,
		WorkspaceDir: "/work/" + rtEncMarker + "-dir", OwnerID: "owner"}); err != nil {
		e.t.Fatal(err)
	}
	content := []byte(rtEncMarker + " upload content of " + id)
	if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: id, RefID: "r1", Marker: "[" + rtEncMarker + "-marker]",
		WorkspacePath: "/work/" + rtEncMarker + "-file.txt", Content: content}); err != nil {
		e.t.Fatal(err)
	}
	return content
}

func testEncRuntimeRoundTrip(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	content := e.fillRuntime(st, "rt1")
	rt := st.Runtime()
	got, err := rt.Get(e.ctx, "rt1")
	if err != nil || got.WorkspaceDir != "/work/"+rtEncMarker+"-dir" || got.DataKeyID == "" {
		t.Fatalf("get: %+v, %v", got, err)
	}
	sum := sha256.Sum256(content)
	u, err := rt.GetUpload(e.ctx, "rt1", "r1")
	if err != nil || u.Marker != "["+rtEncMarker+"-marker]" || u.WorkspacePath != "/work/"+rtEncMarker+"-file.txt" ||
		u.SHA256 != hex.EncodeToString(sum[:]) || u.SizeBytes != int64(len(content)) {
		t.Fatalf("get upload: %+v, %v", u, err)
	}
	_, b, err := rt.ReadUpload(e.ctx, "rt1", "r1")
	if err != nil || !bytes.Equal(b, content) {
		t.Fatalf("read upload: %q, %v", b, err)
	}
	page, err := rt.ListUploads(e.ctx, store.ListUploadsRequest{SessionID: "rt1"})
	if err != nil || len(page.Items) != 1 || page.Items[0] != u {
		t.Fatalf("list uploads: %+v, %v", page, err)
	}
	// A claimed digest is still checked against the plaintext.
	_, err = rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: "rt1", RefID: "r2", WorkspacePath: "/p",
		Content: []byte("x"), SHA256: hex.EncodeToString(sum[:])})
	if !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("mismatched digest: %v", err)
	}
	ids, err := e.ring.IDs()
	if err != nil || len(ids) != 1 || ids[0] != got.DataKeyID {
		t.Fatalf("keyring holds %v (%v), want the session's key %s", ids, err, got.DataKeyID)
	}
	// The plaintext never reached the tables: no column holds the marker.
	if h.Count != nil {
		for _, q := range []string{
			`SELECT count(*) FROM runtime_sessions WHERE workspace_dir LIKE '%` + rtEncMarker + `%'`,
			`SELECT count(*) FROM uploads WHERE marker LIKE '%` + rtEncMarker + `%' OR workspace_path LIKE '%` + rtEncMarker + `%'`,
			`SELECT count(*) FROM uploads WHERE sha256 = ` + e.hexLiteral(sum[:]),
			`SELECT count(*) FROM upload_blobs WHERE sha256 = ` + e.hexLiteral(sum[:]),
		} {
			if n, err := h.Count(e.ctx, e.loc, q); err != nil || n != 0 {
				t.Fatalf("%s: %d, %v", q, n, err)
			}
		}
	}
}

// hexLiteral is b as a blob expression of the harness's backend
// (SQLite's unhex, else PostgreSQL's decode).
func (e *encEnv) hexLiteral(b []byte) string {
	x := hex.EncodeToString(b)
	if _, err := e.h.Count(e.ctx, e.loc, `SELECT length(unhex('00'))`); err == nil {
		return "unhex('" + x + "')"
	}
	return "decode('" + x + "', 'hex')"
}

func testEncRuntimeNoKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	e.fillRuntime(e.open(e.ring), "rt1")
	plain := e.open(nil)
	rt := plain.Runtime()
	if _, err := rt.Get(e.ctx, "rt1"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("get without key: %v", err)
	}
	if _, err := rt.GetUpload(e.ctx, "rt1", "r1"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("get upload without key: %v", err)
	}
	if _, _, err := rt.ReadUpload(e.ctx, "rt1", "r1"); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("read upload without key: %v", err)
	}
	if _, err := rt.ListUploads(e.ctx, store.ListUploadsRequest{SessionID: "rt1"}); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("list uploads without key: %v", err)
	}
	_, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: "rt1", RefID: "r1", WorkspacePath: "/plain", Content: []byte("plain")})
	if !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("put upload without key: %v", err)
	}
	// Metadata stays readable: counts and ids.
	if n, err := rt.Count(e.ctx); err != nil || n != 1 {
		t.Fatalf("count: %d, %v", n, err)
	}
	// Nothing changed.
	_, b, err := e.open(e.ring).Runtime().ReadUpload(e.ctx, "rt1", "r1")
	if err != nil || !bytes.Contains(b, []byte(rtEncMarker)) {
		t.Fatalf("after refusals: %q, %v", b, err)
	}
}

func testEncRuntimeWrongKey(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	e.fillRuntime(e.open(e.ring), "rt1")
	st := e.open(openRing(t, e.dir, kekText(t, "v1")))
	if _, err := st.Runtime().Get(e.ctx, "rt1"); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("wrong key get: %v", err)
	}
	if _, _, err := st.Runtime().ReadUpload(e.ctx, "rt1", "r1"); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("wrong key read upload: %v", err)
	}
	if ids, err := e.ring.IDs(); err != nil || len(ids) != 1 {
		t.Fatalf("keyring after wrong-key reads: %v, %v", ids, err)
	}
	if _, _, err := e.open(openRing(t, e.dir, e.kek)).Runtime().ReadUpload(e.ctx, "rt1", "r1"); err != nil {
		t.Fatalf("right key after wrong: %v", err)
	}
}

func testEncRuntimeRemoveShreds(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fillRuntime(st, "a")
	e.fillRuntime(st, "b")
	a, err := st.Runtime().Get(e.ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Runtime().Remove(e.ctx, "a"); err != nil || !ok {
		t.Fatalf("remove: %v, %v", ok, err)
	}
	if _, err := e.ring.Key(e.ctx, a.DataKeyID); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("removed session's key: %v, want ErrKeyShredded", err)
	}
	if ids, _ := e.ring.IDs(); len(ids) != 1 {
		t.Fatalf("keyring after remove: %v", ids)
	}
	if _, _, err := st.Runtime().ReadUpload(e.ctx, "b", "r1"); err != nil {
		t.Fatalf("other session: %v", err)
	}
	if h.Count != nil {
		// The removed session's blob went with it (the sweep's trigger).
		if n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM upload_blobs`); err != nil || n != 1 {
			t.Fatalf("blobs after remove: %d, %v", n, err)
		}
	}
	// Eviction shreds too.
	b, err := st.Runtime().Get(e.ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Runtime().EvictSameModeSiblings(e.ctx, store.EvictRequest{OwnerID: "owner", ChatMode: store.ChatModeChat, ExceptID: "none"})
	if err != nil || len(ev) != 1 || ev[0].ID != "b" {
		t.Fatalf("evict: %+v, %v", ev, err)
	}
	if _, err := e.ring.Key(e.ctx, b.DataKeyID); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("evicted session's key: %v, want ErrKeyShredded", err)
	}
}

// testEncUploadSharing: identical content is stored once across plaintext
// sessions, never shared with or between encrypted ones, and shared within
// one encrypted session.
func testEncUploadSharing(t *testing.T, h Harness) {
	if h.Count == nil {
		t.Skip("the harness cannot count rows behind the store's back")
	}
	e := newEncEnv(t, h)
	content := []byte("the same bytes " + rtEncMarker)
	put := func(st store.Store, id, ref string) {
		t.Helper()
		if _, err := st.Runtime().PutUpload(e.ctx, store.PutUploadRequest{SessionID: id, RefID: ref, WorkspacePath: "/f", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(st store.Store, id string) {
		t.Helper()
		if _, err := st.Runtime().Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", ChatMode: store.ChatModeChat, WorkspaceDir: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	blobs := func() int64 {
		t.Helper()
		n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM upload_blobs`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	plain, enc := e.open(nil), e.open(e.ring)
	insert(plain, "p1")
	insert(plain, "p2")
	put(plain, "p1", "r")
	put(plain, "p2", "r")
	if n := blobs(); n != 1 {
		t.Fatalf("two plaintext sessions with one content: %d blobs, want 1 (shared)", n)
	}
	insert(enc, "e1")
	insert(enc, "e2")
	put(enc, "e1", "r")
	if n := blobs(); n != 2 {
		t.Fatalf("after an encrypted upload of the same content: %d blobs, want 2", n)
	}
	put(enc, "e1", "r2") // same content, same encrypted session: shared
	if n := blobs(); n != 2 {
		t.Fatalf("same content twice in one encrypted session: %d blobs, want 2", n)
	}
	put(enc, "e2", "r")
	if n := blobs(); n != 3 {
		t.Fatalf("two encrypted sessions with one content: %d blobs, want 3 (never shared)", n)
	}
	for _, id := range []string{"p1", "p2", "e1", "e2"} {
		_, b, err := enc.Runtime().ReadUpload(e.ctx, id, "r")
		if err != nil || !bytes.Equal(b, content) {
			t.Fatalf("read %s: %q, %v", id, b, err)
		}
	}
	// Removing one encrypted session keeps the other's blob and the
	// plaintext one; removing the plaintext sessions collects theirs.
	if _, err := enc.Runtime().Remove(e.ctx, "e1"); err != nil {
		t.Fatal(err)
	}
	if n := blobs(); n != 2 {
		t.Fatalf("after removing e1: %d blobs, want 2", n)
	}
	for _, id := range []string{"p1", "p2"} {
		if _, err := plain.Runtime().Remove(e.ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := blobs(); n != 1 {
		t.Fatalf("after removing the plaintext sessions: %d blobs, want 1", n)
	}
	if _, _, err := enc.Runtime().ReadUpload(e.ctx, "e2", "r"); err != nil {
		t.Fatal(err)
	}
}

// testEncUploadsConcurrent: goroutines upload the same content to one
// encrypted session under different refs, and other content to a second
// one, while a third session is removed: one blob per session and
// content, every entry reads back, the removed session's blobs are gone.
func testEncUploadsConcurrent(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	rt := st.Runtime()
	for _, id := range []string{"a", "b", "gone"} {
		if _, err := rt.Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "x", ChatMode: store.ChatModeChat, WorkspaceDir: "/w"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: "gone", RefID: "r", WorkspacePath: "/f", Content: []byte("gone content")}); err != nil {
		t.Fatal(err)
	}
	workers, per := 6, 5
	if raceEnabled {
		per = 3
	}
	same := []byte("identical " + rtEncMarker)
	var wg sync.WaitGroup
	errs := make(chan error, workers*per+1)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				ref := fmt.Sprintf("w%d-%d", w, i)
				if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: "a", RefID: ref, WorkspacePath: "/f", Content: same}); err != nil {
					errs <- err
				}
				if _, err := rt.PutUpload(e.ctx, store.PutUploadRequest{SessionID: "b", RefID: ref, WorkspacePath: "/f", Content: []byte(ref)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := rt.Remove(e.ctx, "gone"); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range workers {
		for i := range per {
			ref := fmt.Sprintf("w%d-%d", w, i)
			if _, b, err := rt.ReadUpload(e.ctx, "a", ref); err != nil || !bytes.Equal(b, same) {
				t.Fatalf("a/%s: %q, %v", ref, b, err)
			}
			if _, b, err := rt.ReadUpload(e.ctx, "b", ref); err != nil || string(b) != ref {
				t.Fatalf("b/%s: %q, %v", ref, b, err)
			}
		}
	}
	if h.Count != nil {
		// a: one blob; b: one per ref; gone: none.
		n, err := h.Count(e.ctx, e.loc, `SELECT count(*) FROM upload_blobs`)
		if err != nil || n != int64(1+workers*per) {
			t.Fatalf("blobs: %d, want %d (%v)", n, 1+workers*per, err)
		}
	}
}
