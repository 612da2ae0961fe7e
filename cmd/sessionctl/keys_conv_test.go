package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/keys"
)

// TestKeysConversations: the demo's conversations, written with a key
// file, are encrypted: sessionctl shows their messages with the key and
// refuses them without it (exit 1, never the ciphertext or a guess);
// the database file holds none of their text.
func TestKeysConversations(t *testing.T) {
	db, kf := encryptedDemo(t)
	code, out, errs := sctl(t, "--db", db, "--key-file", kf, "list", "--json")
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Items) == 0 {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	const text = "Summarize this repository in one sentence."
	shown := 0
	for _, s := range list.Items {
		code, out, _ := sctl(t, "--db", db, "--key-file", kf, "messages", s.ID)
		if code == exitNotFound {
			continue // a governed session without a conversation
		}
		if code != 0 || !strings.Contains(out, text) {
			t.Fatalf("messages %s with the key: %d %s", s.ID, code, out)
		}
		shown++
		code, out, errs = sctl(t, "--db", db, "messages", s.ID)
		if code != exitError || out != "" || !strings.Contains(errs, "encryption key unavailable") {
			t.Fatalf("messages %s without the key: %d %q %s", s.ID, code, out, errs)
		}
	}
	if shown == 0 {
		t.Fatal("the demo wrote no conversation")
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "doctor"); code != 0 {
		t.Fatalf("doctor: %d %s", code, errs)
	}
	for _, p := range []string{db, db + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(b), text) {
			t.Fatalf("%s holds a message of an encrypted conversation", filepath.Base(p))
		}
	}
}

// encryptedDemo writes the demo database with a key file of one KEK
// version (with $SESSIONSTORE_KEY and $SESSIONSTORE_KEY_FILE cleared) in
// a temporary directory, and returns the database and the key file.
func encryptedDemo(t *testing.T) (db, keyFile string) {
	t.Helper()
	t.Setenv(keys.EnvVar, "")
	t.Setenv("SESSIONSTORE_KEY_FILE", "")
	dir := t.TempDir()
	db = filepath.Join(dir, "s.db")
	v1, _ := keys.GenerateEntry("v1")
	keyFile = filepath.Join(dir, "kek")
	if err := os.WriteFile(keyFile, []byte(v1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := sctl(t, "--db", db, "--key-file", keyFile, "demo"); code != 0 {
		t.Fatalf("demo: %d %s", code, errs)
	}
	return db, keyFile
}
