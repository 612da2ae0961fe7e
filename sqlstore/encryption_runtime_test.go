package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/archive"
	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// fillRuntimeMarked writes a runtime session whose workspace and uploads
// (marker, path, content) hold the marker, and returns an upload's content.
func fillRuntimeMarked(t *testing.T, st *sqlstore.Store, id string) []byte {
	t.Helper()
	ctx := context.Background()
	rt := st.Runtime()
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "agent", ChatMode: store.ChatModeChat,
		WorkspaceDir: "/srv/" + encMarker + "/ws", OwnerID: "owner"}); err != nil {
		t.Fatal(err)
	}
	big := []byte(strings.Repeat(encMarker+" upload line\n", 2000))
	for _, ref := range []string{"small", "big", "big-again"} {
		content := []byte(encMarker + " small upload")
		if ref != "small" {
			content = big
		}
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: ref, Marker: "[" + encMarker + "]",
			WorkspacePath: "/srv/" + encMarker + "/" + ref + ".txt", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	return big
}

// TestEncryptionRuntimeByteScan: the database file, its WAL, a backup and
// an export of an encrypted runtime session with uploads hold no
// plaintext of it; the export imports (with the keyring) into a plaintext
// store and into an encrypting one (sealed again there); a plaintext
// session written the same way is found by the scan (the control).
func TestEncryptionRuntimeByteScan(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	dir := t.TempDir()
	path := sqlstore.FreshDBPath(t, "s.db")
	p := testProvider(t)
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	big := fillRuntimeMarked(t, st, "rt")
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the scan needs a WAL with frames: %v", err)
	}
	scanFiles(t, path, path+"-wal")
	bk := filepath.Join(dir, "backup.db")
	if _, err := sqlstore.Backup(ctx, path, bk, sqlstore.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, bk)

	var buf bytes.Buffer
	if _, err := archive.Export(ctx, st, &buf, archive.ExportOptions{}); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("export without the keyring: %v, want ErrKeyUnavailable", err)
	}
	exp := filepath.Join(dir, "export.json")
	if _, err := archive.ExportFile(ctx, st, exp, archive.ExportOptions{Keys: ring}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, exp)
	doc, _ := os.ReadFile(exp)
	if !bytes.Contains(doc, []byte(`"data_key"`)) {
		t.Fatal("the export carries no sealed runtime session")
	}

	for _, enc := range []bool{false, true} {
		dst := sqlstore.FreshDBPath(t, "import.db")
		var opts []sqlstore.Option
		if enc {
			dst = sqlstore.FreshDBPath(t, "import-enc.db")
			opts = append(opts, sqlstore.WithKeyProvider(p))
		}
		other, err := sqlstore.Open(ctx, dst, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := archive.ImportFile(ctx, other, exp, archive.ImportOptions{}); !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("import without the keyring: %v", err)
		}
		if _, err := archive.ImportFile(ctx, other, exp, archive.ImportOptions{Keys: ring}); err != nil {
			t.Fatal(err)
		}
		s, err := other.Runtime().Get(ctx, "rt")
		if err != nil || !strings.Contains(s.WorkspaceDir, encMarker) || (s.DataKeyID != "") != enc {
			t.Fatalf("imported (encrypting %v): %+v, %v", enc, s, err)
		}
		u, b, err := other.Runtime().ReadUpload(ctx, "rt", "big")
		if err != nil || !bytes.Equal(b, big) || !strings.Contains(u.WorkspacePath, encMarker) {
			t.Fatalf("imported upload (encrypting %v): %+v, %v", enc, u, err)
		}
		if enc {
			scanFiles(t, dst, dst+"-wal")
		}
		other.Close()
	}

	// Removing the session shreds its key: the old backup's session is
	// unreadable with today's keyring.
	if _, err := st.Runtime().Remove(ctx, "rt"); err != nil {
		t.Fatal(err)
	}
	old, err := sqlstore.Open(ctx, bk, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, _, err := old.Runtime().ReadUpload(ctx, "rt", "big"); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("old backup after the shred: %v, want ErrKeyShredded", err)
	}

	// The control.
	plainPath := sqlstore.FreshDBPath(t, "plain.db")
	plain, err := sqlstore.Open(ctx, plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fillRuntimeMarked(t, plain, "rt")
	b, _ := os.ReadFile(plainPath + "-wal")
	if !bytes.Contains(b, []byte(encMarker)) {
		t.Fatal("control: the plaintext store's WAL does not hold the marker; the scan proves nothing")
	}
}
