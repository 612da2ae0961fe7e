package keys

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/agentstore/sessionstore/store"
)

// BlobMarker starts every sealed binary value (upload content): format
// version 1, then nonce || AES-256-GCM ciphertext, raw (no base64: blob
// columns hold bytes).
const BlobMarker = "ssblob1:"

// IsSealedBlob reports whether a stored binary value is sealed.
func IsSealedBlob(v []byte) bool {
	return len(v) >= len(BlobMarker) && string(v[:len(BlobMarker)]) == BlobMarker
}

// SealBlob returns plain sealed with associated data ad, as stored bytes
// (BlobMarker, nonce, ciphertext).
func (k *DataKey) SealBlob(plain, ad []byte) []byte {
	ct := seal(k.aead, plain, ad)
	out := make([]byte, 0, len(BlobMarker)+len(ct))
	out = append(out, BlobMarker...)
	return append(out, ct...)
}

// OpenBlob returns the plaintext of a value SealBlob stored. A value
// without the marker, damaged, or sealed under another key or identity is
// ErrKeyMismatch. stored is not modified.
func (k *DataKey) OpenBlob(stored, ad []byte) ([]byte, error) {
	if !IsSealedBlob(stored) {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	buf := append([]byte(nil), stored[len(BlobMarker):]...)
	plain, err := open(k.aead, buf, ad)
	if err != nil {
		return nil, &store.KeyError{KeyID: k.id, Op: "open", Kind: store.ErrKeyMismatch}
	}
	return plain, nil
}

// Tag returns HMAC-SHA256 of msg under a key derived from the data key
// for label: a value that names msg within the session (the same msg and
// label give the same tag) but that confirms nothing about msg to a reader
// without the data key. Labels keep the tags of different uses apart.
func (k *DataKey) Tag(label string, msg []byte) []byte {
	m := hmac.New(sha256.New, k.mac)
	m.Write(AD(label))
	m.Write(msg)
	return m.Sum(nil)
}

// macKey derives the MAC key of a data key (never the data key itself,
// which is the AES key).
func macKey(key []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sessionstore data key: mac"))
	return m.Sum(nil)
}
