package keys

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

func provider(t testing.TB, versions ...string) (*Provider, string) {
	t.Helper()
	var lines []string
	for _, v := range versions {
		l, err := GenerateEntry(v)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	text := strings.Join(lines, "\n")
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return p, text
}

func TestParseRejectsMalformedKeys(t *testing.T) {
	for _, text := range []string{"", "v1", "v1:notbase64!", "v1:" + strings.Repeat("A", 8), "a b:AAAA",
		"v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nv1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		if _, err := Parse(text); !errors.Is(err, ErrBadKeys) {
			t.Errorf("Parse(%q) = %v, want ErrBadKeys", text, err)
		}
	}
	p, err := Parse("# comment\nv1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=, v2:AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n")
	if err != nil || p.CurrentVersion() != "v2" || !p.Has("v1") {
		t.Fatalf("Parse: %v, current %q", err, p.CurrentVersion())
	}
}

func TestFromEnvAndFile(t *testing.T) {
	_, text := provider(t, "k1", "k2")
	t.Setenv("SESSIONSTORE_TEST_KEKS", text)
	p, err := FromEnv("SESSIONSTORE_TEST_KEKS")
	if err != nil || p.CurrentVersion() != "k2" {
		t.Fatalf("FromEnv: %v", err)
	}
	if _, err := FromEnv("SESSIONSTORE_TEST_UNSET_VAR"); !errors.Is(err, ErrBadKeys) {
		t.Fatalf("unset: %v", err)
	}
	f := filepath.Join(t.TempDir(), "kek")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := FromFile(f); err != nil || p.CurrentVersion() != "k2" {
		t.Fatalf("FromFile: %v", err)
	}
}

func TestSealBindsTheIdentity(t *testing.T) {
	k1, _ := NewDataKey("a", bytes.Repeat([]byte{1}, 32))
	k2, _ := NewDataKey("b", bytes.Repeat([]byte{2}, 32))
	ad := AD("t", "a", "1")
	s := k1.Seal([]byte(`{"x":1}`), ad)
	if !IsSealed([]byte(s)) || strings.Contains(s, `"x"`) {
		t.Fatalf("sealed %q", s)
	}
	if p, err := k1.Open([]byte(s), ad); err != nil || string(p) != `{"x":1}` {
		t.Fatalf("open: %q, %v", p, err)
	}
	for name, try := range map[string]func() error{
		"other position": func() error { _, err := k1.Open([]byte(s), AD("t", "a", "2")); return err },
		"other key":      func() error { _, err := k2.Open([]byte(s), ad); return err },
		"plaintext":      func() error { _, err := k1.Open([]byte(`{"x":1}`), ad); return err },
		"damaged":        func() error { _, err := k1.Open([]byte(s[:len(s)-2]+"AA"), ad); return err },
		"not base64":     func() error { _, err := k1.Open([]byte(Marker+"!!!"), ad); return err },
		"short":          func() error { _, err := k1.Open([]byte(Marker+"AAAA"), ad); return err },
	} {
		if err := try(); !errors.Is(err, store.ErrKeyMismatch) {
			t.Errorf("%s: %v, want ErrKeyMismatch", name, err)
		}
	}
	// In place: the same plaintext, and the same refusals.
	for _, size := range []int{0, 1, 2, 3, 100, 4097} {
		plain := bytes.Repeat([]byte("xyz"), size)
		sealedText := []byte(k1.Seal(plain, ad))
		if p, err := k1.OpenInPlace(sealedText, ad); err != nil || !bytes.Equal(p, plain) {
			t.Fatalf("in place, %d bytes: %v", len(plain), err)
		}
	}
	if _, err := k1.OpenInPlace([]byte(s), AD("t", "a", "2")); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("in place, other position: %v", err)
	}
	if _, err := k1.OpenInPlace([]byte(`{"x":1}`), ad); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("in place, plaintext: %v", err)
	}
	// Length prefixes: ("ab","c") and ("a","bc") differ.
	if bytes.Equal(AD("ab", "c"), AD("a", "bc")) {
		t.Fatal("AD is ambiguous")
	}
}

func TestRingKeysShredAndIDs(t *testing.T) {
	ctx := context.Background()
	p, _ := provider(t, "v1")
	dir := t.TempDir()
	r, err := OpenRing(dir, p, RingOptions{CacheSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	want := map[string][]byte{}
	for range 5 {
		id, k, err := r.NewKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		want[id] = k
	}
	// A second ring on the same directory (another process) reads them.
	r2, _ := OpenRing(dir, p, RingOptions{})
	for _, id := range ids {
		k, err := r2.Key(ctx, id)
		if err != nil || !bytes.Equal(k, want[id]) {
			t.Fatalf("key %s: %v", id, err)
		}
	}
	if len(r.cache) > 2 {
		t.Fatalf("cache holds %d keys, bound 2", len(r.cache))
	}
	if err := r.Shred(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.Shred(ctx, ids[0]); err != nil {
		t.Fatalf("second shred: %v", err)
	}
	if _, err := r.Key(ctx, ids[0]); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("shredded: %v", err)
	}
	got, _ := r.IDs()
	if len(got) != 4 {
		t.Fatalf("ids %v", got)
	}
	// Ids are data, never paths.
	for _, bad := range []string{"../x", "", "ABCDEF", strings.Repeat("g", 32), "/etc/passwd"} {
		if _, err := r.Key(ctx, bad); !errors.Is(err, store.ErrKeyMismatch) {
			t.Errorf("Key(%q): %v", bad, err)
		}
		if err := r.Shred(ctx, bad); !errors.Is(err, store.ErrKeyMismatch) {
			t.Errorf("Shred(%q): %v", bad, err)
		}
	}
	// A wrong KEK under the same version name is a mismatch, and the
	// file stays.
	wrong, _ := provider(t, "v1")
	rw, _ := OpenRing(dir, wrong, RingOptions{})
	if _, err := rw.Key(ctx, ids[1]); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("wrong KEK: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ids[1])); err != nil {
		t.Fatalf("wrong KEK removed the file: %v", err)
	}
	// A file swapped for another key's does not unwrap (the id is bound).
	b, _ := os.ReadFile(filepath.Join(dir, ids[2]))
	if err := os.WriteFile(filepath.Join(dir, ids[1]), b, 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, _ := OpenRing(dir, p, RingOptions{CacheSize: -1})
	if _, err := fresh.Key(ctx, ids[1]); !errors.Is(err, store.ErrKeyMismatch) {
		t.Fatalf("swapped file, uncached: %v", err)
	}
}

// Environment of the rotation helper process.
const (
	envRotateDir  = "KEYS_TEST_ROTATE_DIR"
	envRotateKEKs = "KEYS_TEST_ROTATE_KEKS"
	envRotateKill = "KEYS_TEST_ROTATE_KILL_AFTER"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envRotateDir); dir != "" {
		p, err := Parse(os.Getenv(envRotateKEKs))
		if err != nil {
			os.Exit(3)
		}
		r, err := OpenRing(dir, p, RingOptions{})
		if err != nil {
			os.Exit(4)
		}
		n, _ := strconv.Atoi(os.Getenv(envRotateKill))
		afterRewrap = func(done int) {
			if done == n {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // kill -9 mid-rotation
			}
		}
		if _, err := r.Rotate(context.Background()); err != nil {
			os.Exit(5)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestRotateResumesAfterKill(t *testing.T) {
	ctx := context.Background()
	old, oldText := provider(t, "v1")
	dir := t.TempDir()
	r, _ := OpenRing(dir, old, RingOptions{})
	want := map[string][]byte{}
	for range 10 {
		id, k, err := r.NewKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want[id] = k
	}
	_, newText := provider(t, "v2")
	both := oldText + "\n" + newText
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRotateDir+"="+dir, envRotateKEKs+"="+both, envRotateKill+"=4")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper: %v, want killed by SIGKILL", err)
	}
	pb, _ := Parse(both)
	rb, _ := OpenRing(dir, pb, RingOptions{})
	st, err := rb.Status(ctx)
	if err != nil || st.Keys != 10 || st.ByVersion["v2"] != 4 || st.ByVersion["v1"] != 6 {
		t.Fatalf("after the kill: %+v, %v", st, err)
	}
	res, err := rb.Rotate(ctx)
	if err != nil || res.Rewrapped != 6 || res.Current != 4 {
		t.Fatalf("resumed rotation: %+v, %v", res, err)
	}
	// The old KEK destroyed: every key still unwraps, to the same key.
	pNew, _ := Parse(newText)
	rn, _ := OpenRing(dir, pNew, RingOptions{})
	for id, k := range want {
		got, err := rn.Key(ctx, id)
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("key %s after rotation: %v", id, err)
		}
	}
	// No temporary files are left behind by the completed rotation that
	// would be taken for keys.
	if ids, _ := rn.IDs(); len(ids) != 10 {
		t.Fatalf("ids %v", ids)
	}
	// The old KEK alone no longer opens anything.
	ro, _ := OpenRing(dir, old, RingOptions{})
	for id := range want {
		if _, err := ro.Key(ctx, id); !errors.Is(err, store.ErrKeyUnavailable) {
			t.Fatalf("old KEK only: %v, want ErrKeyUnavailable", err)
		}
		break
	}
}

// BenchmarkSealOpen measures sealing and opening one ADK-sized event
// (600 bytes) with its associated data: the CPU cost encryption adds to
// an append and to each event of a read.
func BenchmarkSealOpen(b *testing.B) {
	k, _ := NewDataKey(strings.Repeat("a", 32), bytes.Repeat([]byte{7}, 32))
	plain := bytes.Repeat([]byte("x"), 600)
	ad := AD(strings.Repeat("a", 32), "agent_events.data", "123", "event-id")
	b.Run("Seal", func(b *testing.B) {
		for range b.N {
			_ = k.Seal(plain, ad)
		}
	})
	sealed := k.Seal(plain, ad)
	b.Run("OpenInPlace", func(b *testing.B) {
		buf := make([]byte, len(sealed))
		for range b.N {
			copy(buf, sealed)
			if _, err := k.OpenInPlace(buf, ad); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestCachedKeyFollowsShred (issue 37, item 1): a Ring that holds a key
// in its cache does not hand it out once another Ring on the same
// directory (here, in this process; TestShreddedKeyStaysShredded in
// package archive does it from another process too) shredded it, and it
// knows the key was shredded there, while a key it never held is not
// known as shredded.
func TestCachedKeyFollowsShred(t *testing.T) {
	ctx := context.Background()
	p, _ := provider(t, "v1")
	dir := t.TempDir()
	a, err := OpenRing(dir, p, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenRing(dir, p, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := a.NewKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Key(ctx, id); err != nil { // b caches it
		t.Fatal(err)
	}
	if err := a.Shred(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = b.Key(ctx, id)
	var ke *store.KeyError
	if !errors.Is(err, store.ErrKeyShredded) || !errors.As(err, &ke) || ke.KeyID != id || ke.Ring != dir {
		t.Fatalf("cached key after another ring's shred: %v (%+v), want ErrKeyShredded naming key and ring", err, ke)
	}
	for _, r := range []*Ring{a, b} {
		if here, err := r.ShreddedHere(ctx, id); err != nil || !here {
			t.Fatalf("ShreddedHere: %v, %v", here, err)
		}
	}
	// A file removed behind the rings' back (no shred log line): the
	// ring that had cached it knows it went; a fresh one cannot tell.
	id2, _, err := a.NewKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Key(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, id2)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Key(ctx, id2); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("cached key whose file went: %v", err)
	}
	if here, _ := b.ShreddedHere(ctx, id2); !here {
		t.Fatal("the ring that saw the key go does not know it")
	}
	fresh, _ := OpenRing(dir, p, RingOptions{})
	if here, _ := fresh.ShreddedHere(ctx, id2); here {
		t.Fatal("a fresh ring claims a key removed behind its back was shredded here")
	}
	if here, _ := fresh.ShreddedHere(ctx, strings.Repeat("ab", 16)); here {
		t.Fatal("a key never held is reported shredded")
	}
	// The shred log is never taken for a key.
	if ids, _ := fresh.IDs(); len(ids) != 0 {
		t.Fatalf("ids %v", ids)
	}
}

// TestOpenRingNoCreate: with NoCreate a missing directory is a
// *RingDirError naming it (fs.ErrNotExist), and nothing is created.
func TestOpenRingNoCreate(t *testing.T) {
	p, _ := provider(t, "v1")
	dir := filepath.Join(t.TempDir(), "typo.keyring")
	_, err := OpenRing(dir, p, RingOptions{NoCreate: true})
	var de *RingDirError
	if !errors.As(err, &de) || de.Dir != dir || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("NoCreate created the directory: %v", err)
	}
	if _, err := OpenRing(filepath.Dir(dir), p, RingOptions{NoCreate: true}); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRingKeyCached measures Key for a key in the cache: the stat
// of its file that keeps a shredded key from coming back (issue 37) is
// what it costs. Run: go test -run '^$' -bench RingKeyCached ./keys
func BenchmarkRingKeyCached(b *testing.B) {
	ctx := context.Background()
	p, _ := provider(b, "v1")
	r, err := OpenRing(b.TempDir(), p, RingOptions{})
	if err != nil {
		b.Fatal(err)
	}
	id, _, err := r.NewKey(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("cached", func(b *testing.B) {
		for range b.N {
			if _, err := r.Key(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	u, _ := OpenRing(r.Dir(), p, RingOptions{CacheSize: -1})
	b.Run("uncached", func(b *testing.B) {
		for range b.N {
			if _, err := u.Key(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestShredLogIsBounded: the shred log keeps the newer half of its lines
// once it reaches maxShredLog, so it does not grow with every key ever
// shredded; the newest shreds are still told from keys never held, whole
// lines only, and no temporary file is left behind.
func TestShredLogIsBounded(t *testing.T) {
	old := maxShredLog
	maxShredLog = 10 * 33 // ten lines
	defer func() { maxShredLog = old }()
	ctx := context.Background()
	p, _ := provider(t, "v1")
	dir := t.TempDir()
	r, err := OpenRing(dir, p, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 40 {
		id, _, err := r.NewKey(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Shred(ctx, id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	b, err := os.ReadFile(filepath.Join(dir, shredLog))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) > maxShredLog+33 {
		t.Fatalf("shred log is %d bytes, bound %d", len(b), maxShredLog)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !validID(l) {
			t.Fatalf("shred log line %q is not a whole key id", l)
		}
	}
	fresh, _ := OpenRing(dir, p, RingOptions{}) // no memory of its own
	for _, id := range ids[len(ids)-5:] {
		if here, err := fresh.ShreddedHere(ctx, id); err != nil || !here {
			t.Fatalf("a recent shred %s: %v, %v", id, here, err)
		}
	}
	if here, _ := fresh.ShreddedHere(ctx, ids[0]); here {
		t.Fatal("the oldest shred is still in a log that should have been cut")
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != shredLog {
			t.Fatalf("left in the directory: %s", e.Name())
		}
	}
}

// TestCreateFile: a new key file holds one KEK that FromFile reads as the
// current version, mode 0600; an existing file is refused (fs.ErrExist)
// and left as it was; a bad version is ErrBadKeys and writes nothing.
func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kek")
	if err := CreateFile(path, "v7"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat: %v, %v; want mode 0600", fi, err)
	}
	p, err := FromFile(path)
	if err != nil || p.CurrentVersion() != "v7" || len(p.Versions()) != 1 {
		t.Fatalf("FromFile: %v, %v", p, err)
	}
	before, _ := os.ReadFile(path)
	if err := CreateFile(path, "v8"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over an existing file: %v, want fs.ErrExist", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Error("the existing file was changed")
	}
	bad := filepath.Join(dir, "bad")
	if err := CreateFile(bad, "a b"); !errors.Is(err, ErrBadKeys) {
		t.Errorf("bad version: %v, want ErrBadKeys", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a bad version wrote a file: %v", err)
	}
}
