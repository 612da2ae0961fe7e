package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func uploadReq(sessionID, ref string, content []byte) store.PutUploadRequest {
	return store.PutUploadRequest{
		SessionID:     sessionID,
		RefID:         ref,
		Marker:        "[IMAGE:" + ref + "]",
		WorkspacePath: "uploads/" + ref + ".bin",
		Content:       content,
	}
}

func (e *env) putUpload(sessionID, ref string, content []byte) store.Upload {
	e.t.Helper()
	u, err := e.rt().PutUpload(e.ctx, uploadReq(sessionID, ref, content))
	if err != nil {
		e.t.Fatalf("PutUpload(%q, %q): %v", sessionID, ref, err)
	}
	return u
}

func (e *env) readUpload(sessionID, ref string) (store.Upload, []byte) {
	e.t.Helper()
	u, b, err := e.rt().ReadUpload(e.ctx, sessionID, ref)
	if err != nil {
		e.t.Fatalf("ReadUpload(%q, %q): %v", sessionID, ref, err)
	}
	return u, b
}

func (e *env) listUploads(sessionID string) []store.Upload {
	e.t.Helper()
	p, err := e.rt().ListUploads(e.ctx, store.ListUploadsRequest{SessionID: sessionID})
	if err != nil {
		e.t.Fatalf("ListUploads(%q): %v", sessionID, err)
	}
	return p.Items
}

func testUploadRoundTrip(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	content := []byte("an image, say")
	e.clock.Advance(time.Second)
	u := e.putUpload("s", "ref-1", content)
	want := store.Upload{SessionID: "s", RefID: "ref-1", Marker: "[IMAGE:ref-1]", WorkspacePath: "uploads/ref-1.bin",
		SizeBytes: int64(len(content)), SHA256: sha(content), CreatedAt: e.clock.Now()}
	if u != want {
		t.Fatalf("PutUpload = %+v\nwant %+v", u, want)
	}
	got, err := e.rt().GetUpload(e.ctx, "s", "ref-1")
	if err != nil || got != want {
		t.Fatalf("GetUpload = %+v, %v\nwant %+v", got, err, want)
	}
	got, b := e.readUpload("s", "ref-1")
	if got != want || !bytes.Equal(b, content) {
		t.Fatalf("ReadUpload = %+v %q", got, b)
	}
	// The same content under another ref and in another session.
	e.rtInsert(rtNew("t"))
	u2 := e.putUpload("s", "ref-2", content)
	u3 := e.putUpload("t", "ref-1", content)
	if u2.SHA256 != u.SHA256 || u3.SHA256 != u.SHA256 {
		t.Fatal("same content, different digests")
	}
	if l := e.listUploads("s"); len(l) != 2 || l[0].RefID != "ref-1" || l[1].RefID != "ref-2" {
		t.Fatalf("list(s) = %+v", l)
	}
	if l := e.listUploads("t"); len(l) != 1 || l[0] != u3 {
		t.Fatalf("list(t) = %+v", l)
	}
	// Content shared by entries stays readable when one entry goes.
	e.rtRemove("t")
	if _, b := e.readUpload("s", "ref-2"); !bytes.Equal(b, content) {
		t.Fatalf("shared content after removing one owner = %q", b)
	}
}

func testUploadOverwrite(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	e.putUpload("s", "r", []byte("first"))
	e.clock.Advance(time.Second)
	req := uploadReq("s", "r", []byte("second version"))
	req.Marker, req.WorkspacePath = "[FILE:r]", "elsewhere/r.txt"
	u, err := e.rt().PutUpload(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, b := e.readUpload("s", "r")
	if string(b) != "second version" || got != u || got.SHA256 != sha([]byte("second version")) ||
		got.Marker != "[FILE:r]" || got.WorkspacePath != "elsewhere/r.txt" || !got.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("after overwrite: %+v %q", got, b)
	}
	if l := e.listUploads("s"); len(l) != 1 {
		t.Fatalf("%d entries after overwrite, want 1", len(l))
	}
	// Back to the first content: stored again from scratch.
	e.putUpload("s", "r", []byte("first"))
	if _, b := e.readUpload("s", "r"); string(b) != "first" {
		t.Fatalf("content = %q", b)
	}
}

func testUploadClaimedDigest(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	content := []byte("claimed and true")
	for i, claim := range []string{sha(content), strings.ToUpper(sha(content))} {
		req := uploadReq("s", fmt.Sprintf("r%d", i), content)
		req.SHA256 = claim
		u, err := e.rt().PutUpload(e.ctx, req)
		if err != nil {
			t.Fatalf("claim %q: %v", claim, err)
		}
		if u.SHA256 != sha(content) {
			t.Fatalf("digest = %s", u.SHA256)
		}
	}
}

func testUploadDigestMismatch(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	e.putUpload("s", "kept", []byte("original"))
	for _, ref := range []string{"new", "kept"} {
		req := uploadReq("s", ref, []byte("tampered"))
		req.SHA256 = sha([]byte("what the sender hashed"))
		_, err := e.rt().PutUpload(e.ctx, req)
		wantErr(t, err, store.ErrInvalidInput)
		var ie *store.InvalidInputError
		if !errors.As(err, &ie) || ie.Field != "sha256" {
			t.Fatalf("error %v, want an invalid sha256", err)
		}
	}
	_, err := e.rt().GetUpload(e.ctx, "s", "new")
	wantErr(t, err, store.ErrNotFound)
	if _, b := e.readUpload("s", "kept"); string(b) != "original" {
		t.Fatalf("rejected overwrite changed the entry: %q", b)
	}
	if l := e.listUploads("s"); len(l) != 1 {
		t.Fatalf("%d entries, want 1", len(l))
	}
	// Malformed claims are refused too.
	for _, claim := range []string{"abc", strings.Repeat("g", 64), sha([]byte("x")) + "00"} {
		req := uploadReq("s", "bad", []byte("x"))
		req.SHA256 = claim
		_, err := e.rt().PutUpload(e.ctx, req)
		wantErr(t, err, store.ErrInvalidInput)
	}
	_, err = e.rt().GetUpload(e.ctx, "s", "bad")
	wantErr(t, err, store.ErrNotFound)
}

func testUploadOversize(t *testing.T, e *env) {
	const limit = 1024
	rt := e.openWith(Options{MaxUploadBytes: limit}).Runtime()
	e.rtInsert(rtNew("s"))
	_, err := rt.PutUpload(e.ctx, uploadReq("s", "big", make([]byte, limit+1)))
	wantErr(t, err, store.ErrInvalidInput)
	var tl *store.UploadTooLargeError
	if !errors.As(err, &tl) || tl.Size != limit+1 || tl.Limit != limit {
		t.Fatalf("typed error = %#v", tl)
	}
	if strings.Contains(err.Error(), "1024") || strings.Contains(err.Error(), "1025") {
		t.Fatalf("error string reveals sizes: %q", err)
	}
	_, err = rt.GetUpload(e.ctx, "s", "big")
	wantErr(t, err, store.ErrNotFound)
	if _, err := rt.PutUpload(e.ctx, uploadReq("s", "fits", make([]byte, limit))); err != nil {
		t.Fatalf("upload at the limit: %v", err)
	}
}

func testUploadDefaultLimit(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	_, err := e.rt().PutUpload(e.ctx, uploadReq("s", "big", make([]byte, store.DefaultMaxUploadBytes+1)))
	var tl *store.UploadTooLargeError
	if !errors.As(err, &tl) || tl.Limit != store.DefaultMaxUploadBytes {
		t.Fatalf("error %v, want the default limit of 32 MiB", err)
	}
}

func testUploadEmpty(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	for _, content := range [][]byte{nil, {}} {
		u := e.putUpload("s", "empty", content)
		if u.SizeBytes != 0 || u.SHA256 != sha(nil) {
			t.Fatalf("empty upload = %+v", u)
		}
		if _, b := e.readUpload("s", "empty"); b == nil || len(b) != 0 {
			t.Fatalf("content = %#v, want empty non-nil", b)
		}
	}
}

func testUploadNotFound(t *testing.T, e *env) {
	_, err := e.rt().PutUpload(e.ctx, uploadReq("ghost", "r", []byte("x")))
	wantErr(t, err, store.ErrNotFound)
	_, err = e.rt().GetUpload(e.ctx, "ghost", "r")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.rt().ListUploads(e.ctx, store.ListUploadsRequest{SessionID: "ghost"})
	wantErr(t, err, store.ErrNotFound)
	e.rtInsert(rtNew("s"))
	_, _, err = e.rt().ReadUpload(e.ctx, "s", "missing")
	wantErr(t, err, store.ErrNotFound)
	var nf *store.NotFoundError
	if !errors.As(err, &nf) || nf.Resource != "upload" {
		t.Fatalf("missing upload error = %#v", err)
	}
	if l := e.listUploads("s"); len(l) != 0 {
		t.Fatalf("list = %+v", l)
	}
}

func testUploadsGoWithSession(t *testing.T, e *env) {
	for _, remove := range []func(id string) bool{e.rtRemove, e.rtKill, func(id string) bool {
		return len(e.evict("o", store.ChatModeChat, "")) == 1
	}} {
		e.rtInsert(rtOwned("s", store.ChatModeChat, "o"))
		e.putUpload("s", "r1", []byte("one"))
		e.putUpload("s", "r2", []byte("two"))
		if !remove("s") {
			t.Fatal("session not removed")
		}
		e.rtInsert(rtOwned("s", store.ChatModeChat, "o"))
		if l := e.listUploads("s"); len(l) != 0 {
			t.Fatalf("a new session of the same id sees old uploads: %+v", l)
		}
		e.rtRemove("s")
	}
}

func testUploadListPaging(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	for i := range 7 {
		e.putUpload("s", fmt.Sprintf("r%d", i), []byte{byte(i)})
	}
	var refs []string
	after := ""
	for {
		p, err := e.rt().ListUploads(e.ctx, store.ListUploadsRequest{SessionID: "s", After: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Items {
			refs = append(refs, u.RefID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if fmt.Sprint(refs) != "[r0 r1 r2 r3 r4 r5 r6]" {
		t.Fatalf("refs = %v", refs)
	}
}

func testUploadInvalidInput(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	good := uploadReq("s", "r", []byte("x"))
	for name, mut := range map[string]func(*store.PutUploadRequest){
		"empty session": func(r *store.PutUploadRequest) { r.SessionID = "" },
		"empty ref":     func(r *store.PutUploadRequest) { r.RefID = "" },
		"ref control":   func(r *store.PutUploadRequest) { r.RefID = "a\tb" },
		"empty path":    func(r *store.PutUploadRequest) { r.WorkspacePath = "" },
		"path NUL":      func(r *store.PutUploadRequest) { r.WorkspacePath = "a\x00" },
		"marker NUL":    func(r *store.PutUploadRequest) { r.Marker = "a\x00" },
		"marker huge":   func(r *store.PutUploadRequest) { r.Marker = strings.Repeat("m", store.MaxMarkerLength+1) },
		"marker utf8":   func(r *store.PutUploadRequest) { r.Marker = "\xc3" },
	} {
		req := good
		mut(&req)
		if _, err := e.rt().PutUpload(e.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
	if l := e.listUploads("s"); len(l) != 0 {
		t.Fatalf("invalid uploads stored: %+v", l)
	}
	for name, err := range map[string]error{
		"get empty ref":  func() error { _, err := e.rt().GetUpload(e.ctx, "s", ""); return err }(),
		"read empty ses": func() error { _, _, err := e.rt().ReadUpload(e.ctx, "", "r"); return err }(),
		"list neg limit": func() error {
			_, err := e.rt().ListUploads(e.ctx, store.ListUploadsRequest{SessionID: "s", Limit: -1})
			return err
		}(),
	} {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
}
