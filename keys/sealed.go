package keys

import (
	"crypto/cipher"
	"encoding/binary"

	"github.com/segmentio/asm/base64"

	"github.com/agentstore/sessionstore/store"
)

// b64 is the encoding of sealed values: standard base64 without padding.
// It is segmentio/asm's, which decodes the same text as the standard
// library's RawStdEncoding (it falls back to it for the tail and for any
// input its vector loop stops at, so an invalid character is the same
// error) with AVX2 where the CPU has it: 4-5 times faster on a sealed
// event of 600 bytes, which made the decoding more than half of the cost
// of an encrypted read (issue 29's read goal, see sealed_bench_test.go).
var b64 = base64.RawStdEncoding

// Marker starts every sealed column value: format version 1, then the
// base64 (standard, unpadded) of nonce || AES-256-GCM ciphertext. JSON
// never starts with it, so a reader tells ciphertext from plaintext
// without a lookup.
const Marker = "ssenc1:"

// IsSealed reports whether a stored value is sealed (starts with Marker).
func IsSealed(v []byte) bool { return len(v) >= len(Marker) && string(v[:len(Marker)]) == Marker }

// DataKey seals and opens the column values of one session with its data
// key. It is safe for concurrent use.
type DataKey struct {
	id   string
	aead cipher.AEAD
	mac  []byte // blob.go
}

// NewDataKey returns the sealer of the 32-byte data key named id.
func NewDataKey(id string, key []byte) (*DataKey, error) {
	if len(key) != 32 {
		return nil, &store.KeyError{KeyID: id, Op: "load", Kind: store.ErrKeyMismatch}
	}
	a, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &DataKey{id: id, aead: a, mac: macKey(key)}, nil
}

// ID returns the data key's id.
func (k *DataKey) ID() string { return k.id }

// AD builds associated data from the parts of a row's identity (table,
// the session's key id, position or state key...), each length-prefixed
// so that no two different identities give the same bytes.
func AD(parts ...string) []byte {
	n := 0
	for _, p := range parts {
		n += len(p) + binary.MaxVarintLen64
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	return out
}

// Seal returns plain sealed with associated data ad, as stored text.
func (k *DataKey) Seal(plain, ad []byte) string {
	ct := seal(k.aead, plain, ad)
	out := make([]byte, len(Marker)+b64.EncodedLen(len(ct)))
	copy(out, Marker)
	b64.Encode(out[len(Marker):], ct)
	return string(out)
}

// OpenInPlace is Open that overwrites stored, which the caller owns and
// gives up: the base64 is decoded over the bytes already read and the
// ciphertext opened in place, so no buffer is allocated. The plaintext it
// returns shares stored's memory. A decoding that went wrong could only
// give bytes that fail authentication: ErrKeyMismatch, never wrong
// plaintext.
func (k *DataKey) OpenInPlace(stored, ad []byte) ([]byte, error) {
	if !IsSealed(stored) {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	// The decoder writes behind where it reads (3 bytes per 4, and the
	// output starts len(Marker) bytes before the input).
	n, err := b64.Decode(stored, stored[len(Marker):])
	if err != nil {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	plain, err := open(k.aead, stored[:n], ad)
	if err != nil {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	return plain, nil
}

// Open returns the plaintext of a stored sealed value. A value without
// the marker (plaintext where ciphertext is expected), damaged, sealed
// under another key or with other associated data (a row moved or
// replayed elsewhere) is ErrKeyMismatch.
func (k *DataKey) Open(stored, ad []byte) ([]byte, error) {
	if !IsSealed(stored) {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	body := stored[len(Marker):]
	ct := make([]byte, b64.DecodedLen(len(body)))
	n, err := b64.Decode(ct, body)
	if err != nil {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	plain, err := open(k.aead, ct[:n], ad)
	if err != nil {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	return plain, nil
}
