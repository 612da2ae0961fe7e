package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSearchEncryptedFlag: --search-encrypted opens the store with the
// search opt-in, so the demo's encrypted conversation is found by a word
// of its messages (and still after a reindex with the flag); without the
// flag the same demo's sealed messages are not indexed; the flag without
// keys is a usage error that changes nothing.
func TestSearchEncryptedFlag(t *testing.T) {
	db, keyFile := encryptedDemo(t) // without the opt-in
	found := func(db string) bool {
		t.Helper()
		code, out, errs := sctl(t, "--db", db, "--key-file", keyFile, "search", "files", "--json")
		if code != 0 {
			t.Fatalf("search: %d %s", code, errs)
		}
		return strings.Contains(out, `"kind": "message"`) || strings.Contains(out, `"kind":"message"`)
	}
	if found(db) {
		t.Fatal("a sealed message was indexed without the opt-in")
	}

	opted := filepath.Join(t.TempDir(), "opted.db")
	if code, _, errs := sctl(t, "--db", opted, "--key-file", keyFile, "--search-encrypted", "demo"); code != 0 {
		t.Fatalf("demo --search-encrypted: %d %s", code, errs)
	}
	if !found(opted) {
		t.Fatal("--search-encrypted demo: its sealed messages are not found")
	}
	if code, _, errs := sctl(t, "--db", opted, "--key-file", keyFile, "reindex", "--search-encrypted"); code != 0 {
		t.Fatalf("reindex --search-encrypted: %d %s", code, errs)
	}
	if !found(opted) {
		t.Fatal("after reindex --search-encrypted: the sealed messages are not found")
	}

	before := fileState(t, opted)
	code, _, errs := sctl(t, "--db", opted, "--search-encrypted", "reindex")
	if code != exitUsage || !strings.Contains(errs, "needs key-encryption keys") {
		t.Fatalf("--search-encrypted without keys: exit %d, %q; want a usage error", code, errs)
	}
	sameFiles(t, before, fileState(t, opted))
}
