package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/keys"
)

// TestKeysNew: keys new writes a key file of one fresh KEK (mode 0600)
// that --key-file then takes, never overwrites one, and refuses bad
// input with exit 2, writing nothing.
func TestKeysNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kf := filepath.Join(dir, "kek")
	code, out, errs := sctl(t, "keys", "new", kf)
	if code != 0 || !strings.Contains(out, "--key-file "+kf) {
		t.Fatalf("keys new: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	fi, err := os.Stat(kf)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(kf)
	p, err := keys.FromFile(kf)
	if err != nil {
		t.Fatalf("the written file does not parse: %v", err)
	}
	if p.CurrentVersion() != "v1" {
		t.Errorf("version %q, want v1", p.CurrentVersion())
	}
	if strings.Contains(out, strings.TrimSpace(string(first))[3:]) {
		t.Errorf("keys new printed the key")
	}

	// Never overwritten.
	if code, _, errs := sctl(t, "keys", "new", kf); code != exitUsage || !strings.Contains(errs, "exists") {
		t.Fatalf("second keys new: exit %d, %q", code, errs)
	}
	if again, _ := os.ReadFile(kf); string(again) != string(first) {
		t.Fatal("an existing key file was changed")
	}

	// The file opens a store with its keys (the keyring is created beside
	// a store that create makes).
	db := filepath.Join(dir, "s.db")
	if code, _, errs := sctl(t, "--db", db, "--key-file", kf, "create", "--agent", "a", "--budget", "3"); code != 0 {
		t.Fatalf("create with the new key file: exit %d, %s", code, errs)
	}

	// Bad input: exit 2, nothing written.
	for _, args := range [][]string{
		{"keys", "new"},
		{"keys", "new", filepath.Join(dir, "k2"), "--kek-version", "bad:v"},
		{"keys", "new", filepath.Join(dir, "k3"), "--grace", "1h"},
		{"keys", "new", filepath.Join(dir, "k4"), filepath.Join(dir, "k5")},
	} {
		if code, _, errs := sctl(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errs, exitUsage)
		}
	}
	for _, name := range []string{"k2", "k3", "k4", "k5"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written by a refused command", name)
		}
	}

	// --kek-version and --json: the document names the file and version,
	// never the key.
	k6 := filepath.Join(dir, "k6")
	code, out, errs = sctl(t, "keys", "new", k6, "--kek-version", "v7", "--json")
	if code != 0 || !strings.Contains(out, `"version": "v7"`) || strings.Contains(out, "v7:") {
		t.Fatalf("keys new --json: exit %d, %q, %q", code, out, errs)
	}
}
