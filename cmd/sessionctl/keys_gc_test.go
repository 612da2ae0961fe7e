package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// TestKeysGC leaves an orphan data key beside a demo database's keyring
// (as a crash before a create's commit does) and collects it with keys
// gc: --dry-run lists it, gc shreds it and no named key; a young orphan
// is kept; misuse is a usage error.
func TestKeysGC(t *testing.T) {
	db, kf := encryptedDemo(t)
	p, err := keys.FromFile(kf)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := keys.OpenRing(keys.RingDir(db), p, keys.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	named, _ := ring.IDs()
	if len(named) == 0 {
		t.Fatal("the demo made no encrypted session")
	}
	old, _, err := ring.NewKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	young, _, err := ring.NewKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-3 * time.Hour)
	for _, id := range append([]string{old}, named...) {
		if err := os.Chtimes(filepath.Join(keys.RingDir(db), id), long, long); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errs := sctl(t, "--db", db, "--key-file", kf, "keys", "gc", "--dry-run", "--json")
	var res store.CollectKeysResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.DryRun || res.Named != len(named) || res.Young != 1 ||
		len(res.Orphans) != 1 || res.Orphans[0] != old || res.Shredded != 0 {
		t.Fatalf("gc --dry-run: %d %s %s", code, out, errs)
	}
	if _, err := ring.Key(context.Background(), old); err != nil {
		t.Fatalf("the dry run shredded the orphan: %v", err)
	}
	code, out, errs = sctl(t, "--db", db, "--key-file", kf, "keys", "gc")
	if code != 0 || !strings.Contains(out, "shredded 1 orphan") || !strings.Contains(out, old) {
		t.Fatalf("gc: %d %s %s", code, out, errs)
	}
	ids, _ := ring.IDs()
	if len(ids) != len(named)+1 || !contains(ids, young) || contains(ids, old) {
		t.Fatalf("keyring after gc: %v (named %v, young %s)", ids, named, young)
	}
	// The named keys' sessions still read.
	if code, out, errs := sctl(t, "--db", db, "--key-file", kf, "agents", "list", "--json"); code != 0 {
		t.Fatalf("agents after gc: %d %s %s", code, out, errs)
	}
	for _, args := range [][]string{
		{"keys", "gc", "--grace", "0s"},
		{"keys", "status", "--dry-run"},
		{"keys", "gc", "extra"},
	} {
		if code, _, errs := sctl(t, append([]string{"--db", db, "--key-file", kf}, args...)...); code != exitUsage {
			t.Fatalf("%v: exit %d (%s), want %d", args, code, errs, exitUsage)
		}
	}
	if code, _, _ := sctl(t, "--db", db, "keys", "gc"); code != exitUsage {
		t.Fatalf("gc without keys: exit %d, want %d", code, exitUsage)
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
