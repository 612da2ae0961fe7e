package keys

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRingDirectoryIsMadeByTheFirstKey: opening a keyring whose directory
// does not exist creates nothing (a command that only reads leaves no
// empty keyring behind); listing, shredding and asking about a key work on
// the empty ring; the first NewKey creates the directory, mode 0700.
func TestRingDirectoryIsMadeByTheFirstKey(t *testing.T) {
	ctx := context.Background()
	p, _ := provider(t, "v1", "v2")
	dir := filepath.Join(t.TempDir(), "a", "ring")
	r, err := OpenRing(dir, p, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenRing created %s (stat: %v)", dir, err)
	}
	if ids, err := r.IDs(); err != nil || len(ids) != 0 {
		t.Fatalf("IDs of a ring never written: %v %v", ids, err)
	}
	if err := r.Shred(ctx, "0123456789abcdef0123456789abcdef"); err != nil {
		t.Fatalf("Shred on a ring never written: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Shred created %s (stat: %v)", dir, err)
	}
	id, key, err := r.NewKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("after NewKey: %v %v", fi, err)
	}
	got, err := r.Key(ctx, id)
	if err != nil || string(got) != string(key) {
		t.Fatalf("Key after NewKey: %v", err)
	}
	if v, err := WrappingVersion(dir, id); err != nil || v != p.CurrentVersion() {
		t.Fatalf("WrappingVersion = %q, %v; want %q", v, err, p.CurrentVersion())
	}
	// A file where the directory should be is refused at once.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var de *RingDirError
	if _, err := OpenRing(file, p, RingOptions{}); !errors.As(err, &de) {
		t.Fatalf("OpenRing on a file: %v", err)
	}
}
