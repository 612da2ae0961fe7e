package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/keys"
)

// TestKeyErrorsNameTheirSource: key-encryption keys that cannot be read
// are a usage error (exit 2) naming the flag or variable they came from
// and the command that writes a key file; an encrypted session read
// without its key names the key-encryption key version it needs and how
// to give it, and a key file that lacks that version says which versions
// it holds.
func TestKeyErrorsNameTheirSource(t *testing.T) {
	db, k1 := encryptedDemo(t) // keys_conv_test.go
	dir := filepath.Dir(db)
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  string
		args []string
		want []string
	}{
		{"missing file", "", []string{"--key-file", filepath.Join(dir, "nokey")}, []string{"--key-file " + filepath.Join(dir, "nokey"), "no such file", "keys new"}},
		{"malformed file", "", []string{"--key-file", bad}, []string{"--key-file " + bad, "not key-encryption keys", "VERSION:BASE64"}},
		{"malformed variable", "nope", nil, []string{"$SESSIONSTORE_KEY", "not key-encryption keys"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(keys.EnvVar, c.env)
			args := append(append([]string{"--db", db}, c.args...), "stats")
			code, _, errs := sctl(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
	id := demoRuntimeID(t, db, k1)
	t.Run("no keys", func(t *testing.T) {
		code, _, errs := sctl(t, "--db", db, "uploads", id)
		if code != exitError || !strings.Contains(errs, "key-encryption key version v1") || !strings.Contains(errs, "--key-file FILE or $SESSIONSTORE_KEY") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
	t.Run("wrong version", func(t *testing.T) {
		k2 := filepath.Join(dir, "k2")
		if code, _, errs := sctl(t, "keys", "new", k2, "--kek-version", "v2"); code != 0 {
			t.Fatalf("keys new: %d %s", code, errs)
		}
		code, _, errs := sctl(t, "--db", db, "--key-file", k2, "uploads", id)
		if code != exitError || !strings.Contains(errs, "--key-file "+k2+" holds version v2, not v1") {
			t.Fatalf("exit %d: %s", code, errs)
		}
	})
}

// TestShowPrintsWhatItCanRead: show of a session whose runtime facet is
// encrypted, run without keys, prints the governed and conversation
// facets, marks the runtime facet encrypted (in JSON: "unreadable") and
// exits with the key error; with the key it reads everything.
func TestShowPrintsWhatItCanRead(t *testing.T) {
	db, k1 := encryptedDemo(t) // keys_conv_test.go
	id := demoRuntimeID(t, db, k1)
	code, out, errs := sctl(t, "--db", db, "show", id)
	if code != exitError || !strings.Contains(errs, "encryption key unavailable") {
		t.Fatalf("show without keys: exit %d: %s", code, errs)
	}
	for _, w := range []string{"governed:", "conversation:", "runtime:\n  encrypted: encryption key unavailable"} {
		if !strings.Contains(out, w) {
			t.Errorf("show without keys lacks %q:\n%s", w, out)
		}
	}
	code, out, _ = sctl(t, "--db", db, "show", id, "--json")
	var doc showJSON
	if code != exitError || json.Unmarshal([]byte(out), &doc) != nil || doc.Governed == nil || doc.Conversation == nil ||
		doc.Runtime != nil || doc.Unreadable["runtime"] == "" {
		t.Fatalf("show --json without keys: exit %d %s", code, out)
	}
	code, out, errs = sctl(t, "--db", db, "--key-file", k1, "show", id, "--json")
	doc = showJSON{}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Runtime == nil || doc.Unreadable != nil {
		t.Fatalf("show --json with the key: exit %d %s %s", code, out, errs)
	}
}

// demoRuntimeID is the id of the demo's runtime session (read with the
// key).
func demoRuntimeID(t *testing.T, db, keyFile string) string {
	t.Helper()
	code, out, errs := sctl(t, "--db", db, "--key-file", keyFile, "list", "--facet", "runtime", "--json")
	var page struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Items) == 0 {
		t.Fatalf("list runtime: %d %s %s", code, out, errs)
	}
	return page.Items[0].ID
}

// TestReadingWithKeysCreatesNoKeyring: commands that only read a store
// without encrypted sessions (keys gc --dry-run, list, stats), given keys,
// leave no keyring directory behind.
func TestReadingWithKeysCreatesNoKeyring(t *testing.T) {
	t.Setenv(keys.EnvVar, "")
	t.Setenv("SESSIONSTORE_KEY_FILE", "")
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	k1 := filepath.Join(dir, "k1")
	if code, _, errs := sctl(t, "keys", "new", k1); code != 0 {
		t.Fatalf("keys new: %d %s", code, errs)
	}
	if code, _, errs := sctl(t, "--db", db, "create", "--agent", "a", "--tool", "x", "--budget", "3"); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	for _, args := range [][]string{{"keys", "gc", "--dry-run"}, {"list"}, {"stats"}} {
		if code, _, errs := sctl(t, append([]string{"--db", db, "--key-file", k1}, args...)...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		if _, err := os.Stat(keys.RingDir(db)); err == nil {
			t.Fatalf("%v created the keyring directory", args)
		}
	}
}
