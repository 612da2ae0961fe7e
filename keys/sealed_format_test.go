package keys

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	stdbase64 "encoding/base64"
	"errors"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// sealV1 builds a sealed value the way format 1 is documented (Marker,
// then the standard library's unpadded standard base64 of nonce ||
// AES-256-GCM ciphertext), without the package's encoder: the text
// stores wrote before the vector decoder came in.
func sealV1(t *testing.T, key, plain, ad []byte) []byte {
	t.Helper()
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, g.NonceSize())
	rand.Read(nonce)
	ct := g.Seal(nonce, nonce, plain, ad)
	return []byte(Marker + stdbase64.RawStdEncoding.EncodeToString(ct))
}

// TestSealedFormatV1 pins the stored text down: values written with the
// standard library's base64 open (both ways), and what Seal writes
// decodes with it, for every length around the vector decoder's blocks
// (it works on 32 characters at a time from 45 on, the standard library
// does the rest).
func TestSealedFormatV1(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	k, err := NewDataKey("k", raw)
	if err != nil {
		t.Fatal(err)
	}
	ad := AD("k", "agent_events.data", "3", "ev")
	for n := 0; n <= 700; n++ {
		plain := make([]byte, n)
		rand.Read(plain)
		old := sealV1(t, raw, plain, ad)
		if p, err := k.Open(old, ad); err != nil || !bytes.Equal(p, plain) {
			t.Fatalf("%d bytes, format-1 text: Open %v", n, err)
		}
		if p, err := k.OpenInPlace(bytes.Clone(old), ad); err != nil || !bytes.Equal(p, plain) {
			t.Fatalf("%d bytes, format-1 text: OpenInPlace %v", n, err)
		}
		s := k.Seal(plain, ad)
		ct, err := stdbase64.RawStdEncoding.DecodeString(s[len(Marker):])
		if err != nil || !IsSealed([]byte(s)) || len(ct) != 12+n+16 {
			t.Fatalf("%d bytes: Seal wrote %q, not format 1 (%v)", n, s, err)
		}
	}
}

// TestSealedDamageRefused damages a sealed value at every position (a
// character outside the alphabet, another character of the alphabet,
// a cut): each is ErrKeyMismatch from both Open and OpenInPlace, never
// a panic and never plaintext.
func TestSealedDamageRefused(t *testing.T) {
	raw := bytes.Repeat([]byte{9}, 32)
	k, _ := NewDataKey("k", raw)
	ad := AD("k", "t", "1")
	plain := bytes.Repeat([]byte(`{"text":"abc"}`), 20)
	s := []byte(k.Seal(plain, ad))
	refused := func(what string, v []byte) {
		t.Helper()
		if p, err := k.Open(bytes.Clone(v), ad); !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("%s: Open gave %q, %v; want ErrKeyMismatch", what, p, err)
		}
		if p, err := k.OpenInPlace(bytes.Clone(v), ad); !errors.Is(err, store.ErrKeyMismatch) {
			t.Fatalf("%s: OpenInPlace gave %q, %v; want ErrKeyMismatch", what, p, err)
		}
	}
	for i := len(Marker); i < len(s); i++ {
		for _, c := range []byte{'!', '=', 0, 0xff} {
			v := bytes.Clone(s)
			v[i] = c
			refused(fmt.Sprintf("byte %d set to %q", i, c), v)
		}
		v := bytes.Clone(s)
		if v[i] == 'A' {
			v[i] = 'B'
		} else {
			v[i] = 'A'
		}
		// The last character's low bits may be padding the decoder
		// ignores; every other change alters the ciphertext.
		if i < len(s)-1 {
			refused(fmt.Sprintf("byte %d set to %q", i, v[i]), v)
		}
		refused(fmt.Sprintf("cut at %d", i), s[:i])
	}
}
