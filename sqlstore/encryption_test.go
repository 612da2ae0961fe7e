package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sskeys "github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// encMarker is the distinctive plaintext the byte scans look for.
const encMarker = "QUOKKA-PLAINTEXT-5521"

func testProvider(t *testing.T) store.KeyProvider {
	t.Helper()
	l, err := sskeys.GenerateEntry("v1")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sskeys.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fillMarked writes an encrypted session whose every content column holds
// the marker: initial state, events, state deltas, a fork's state, a
// rewind's superseded run.
func fillMarked(t *testing.T, st *sqlstore.Store, key store.SessionKey) {
	t.Helper()
	ctx := context.Background()
	as := st.AgentSessions()
	mark := func(s string) json.RawMessage { b, _ := json.Marshal(encMarker + "-" + s); return b }
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"note": mark("initial")}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		ev := store.AgentEvent{Data: json.RawMessage(`{"author":"user","content":{"parts":[{"text":"` + encMarker + ` said ` + string(rune('a'+i)) + `"}]}}`)}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev,
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"note": mark("delta")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := as.UpdateState(ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"other": mark("update")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 2, Session: key.Session + "-fork"}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Rewind(ctx, store.RewindRequest{Key: key, To: 3}); err != nil {
		t.Fatal(err)
	}
}

// scanFiles fails t if any of the files holds the marker.
func scanFiles(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(encMarker)) || bytes.Contains(b, []byte(strings.ToLower(encMarker))) {
			t.Errorf("%s (%d bytes) holds plaintext of an encrypted session", filepath.Base(p), len(b))
		}
	}
}

// TestEncryptionByteScan writes encrypted sessions and scans the database
// file, its WAL (before any checkpoint), and a backup for the marker. A
// plaintext session written the same way is found by the same scan, so
// the scan can fail.
func TestEncryptionByteScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(testProvider(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fillMarked(t, st, store.SessionKey{App: "a", User: "u", Session: "s"})
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the scan needs a WAL with frames: %v", err)
	}
	scanFiles(t, path, path+"-wal")
	bk := filepath.Join(dir, "backup.db")
	if _, err := sqlstore.Backup(ctx, path, bk, sqlstore.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, bk)
	if ids, err := os.ReadDir(sskeys.RingDir(path)); err != nil || len(ids) != 2 {
		t.Fatalf("keyring beside the database: %v, %v (want the session's and the fork's keys)", ids, err)
	}

	// The control: a plaintext store's file holds the marker.
	plainPath := filepath.Join(dir, "plain.db")
	plain, err := sqlstore.Open(ctx, plainPath)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fillMarked(t, plain, store.SessionKey{App: "a", User: "u", Session: "s"})
	b, _ := os.ReadFile(plainPath + "-wal")
	if !bytes.Contains(b, []byte(encMarker)) {
		t.Fatal("control: the plaintext store's WAL does not hold the marker; the scan proves nothing")
	}
}

// TestEncryptionShredOldBackup takes a backup, deletes the session (its
// key is shredded), and finds the backup unreadable for that session with
// the keyring of today, while another session of the backup still reads.
func TestEncryptionShredOldBackup(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	p := testProvider(t)
	st, err := sqlstore.Open(ctx, path, sqlstore.WithKeyProvider(p))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gone := store.SessionKey{App: "a", User: "u", Session: "gone"}
	kept := store.SessionKey{App: "a", User: "u", Session: "kept"}
	fillMarked(t, st, gone)
	fillMarked(t, st, kept)
	bk := filepath.Join(dir, "backup.db")
	if _, err := sqlstore.Backup(ctx, path, bk, sqlstore.BackupOptions{}); err != nil {
		t.Fatal(err)
	}
	as := st.AgentSessions()
	for _, k := range []store.SessionKey{gone, {App: gone.App, User: gone.User, Session: gone.Session + "-fork"}} {
		if err := as.DeleteSession(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.ShredPending(ctx); err != nil || n != 0 {
		t.Fatalf("nothing left to shred after the deletes: %d, %v", n, err)
	}
	// The old backup with today's keyring: the deleted session is gone
	// for good, the other one reads.
	ring, err := sskeys.OpenRing(sskeys.RingDir(path), p, sskeys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old, err := sqlstore.Open(ctx, bk, sqlstore.WithKeyRing(ring))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	_, err = old.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: gone, IncludeEvents: true})
	if !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("deleted session in the old backup: %v, want ErrKeyShredded", err)
	}
	got, err := old.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: kept, IncludeEvents: true})
	if err != nil || len(got.Events) != 3 || !strings.Contains(string(got.Events[0].Data), encMarker) {
		t.Fatalf("kept session in the old backup: %+v, %v", got, err)
	}
}
