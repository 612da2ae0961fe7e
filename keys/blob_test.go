package keys

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

func testDataKey(t *testing.T, id string) *DataKey {
	t.Helper()
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	dk, err := NewDataKey(id, raw)
	if err != nil {
		t.Fatal(err)
	}
	return dk
}

// TestSealBlob: a sealed blob opens with its key and associated data
// only; plaintext, damage and another identity are ErrKeyMismatch.
func TestSealBlob(t *testing.T) {
	dk := testDataKey(t, "k1")
	plain := []byte("upload content")
	ad := AD("k1", "upload_blobs.content", "x")
	s := dk.SealBlob(plain, ad)
	if !IsSealedBlob(s) || bytes.Contains(s, plain) {
		t.Fatalf("sealed blob %q", s)
	}
	got, err := dk.OpenBlob(s, ad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %q, %v", got, err)
	}
	damaged := append([]byte(nil), s...)
	damaged[len(damaged)-1] ^= 1
	for name, c := range map[string]struct {
		dk     *DataKey
		stored []byte
		ad     []byte
	}{
		"plaintext":     {dk, plain, ad},
		"damaged":       {dk, damaged, ad},
		"other place":   {dk, s, AD("k1", "upload_blobs.content", "y")},
		"other key":     {testDataKey(t, "k1"), s, ad},
		"only a marker": {dk, []byte(BlobMarker), ad},
	} {
		if _, err := c.dk.OpenBlob(c.stored, c.ad); !errors.Is(err, store.ErrKeyMismatch) {
			t.Errorf("%s: %v, want ErrKeyMismatch", name, err)
		}
	}
	if _, err := dk.OpenBlob(s, ad); err != nil {
		t.Fatalf("OpenBlob modified the stored value: %v", err)
	}
}

// TestTag: a tag is stable for one key and label, differs across keys and
// labels, and is not the message's SHA-256.
func TestTag(t *testing.T) {
	a, b := testDataKey(t, "a"), testDataKey(t, "b")
	sum := sha256.Sum256([]byte("content"))
	ta := a.Tag("blob", sum[:])
	if len(ta) != 32 || !bytes.Equal(ta, a.Tag("blob", sum[:])) {
		t.Fatalf("tag %x is not stable", ta)
	}
	if bytes.Equal(ta, b.Tag("blob", sum[:])) || bytes.Equal(ta, a.Tag("other", sum[:])) || bytes.Equal(ta, sum[:]) {
		t.Fatal("tags of different keys, labels or the digest itself coincide")
	}
}
