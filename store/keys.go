package store

import (
	"context"
	"errors"
)

// Encryption at rest (envelope encryption). A store given a KeyRing
// creates every new agent session with a random data key of its own; the
// session's content (event data, session-scope state values, the state log
// and the initial state of a fork or rewind) is sealed with AES-256-GCM
// under that key, with the row's identity as associated data. The data key
// never touches the database: the KeyRing keeps it wrapped by a
// key-encryption key (KEK) of a KeyProvider, outside the database file, and
// the session row holds only the key's random id. Deleting the session
// destroys its data key (crypto-shredding), so its rows are unreadable in
// every copy of the database: backups, WAL frames, exports.

// Sentinel errors of encryption at rest.
var (
	// ErrKeyUnavailable: the content is encrypted and the store has no key
	// ring (it was opened without a key provider), or the key provider
	// does not hold the KEK version that wrapped the session's data key.
	// Nothing was read or changed.
	ErrKeyUnavailable = errors.New("encryption key unavailable")
	// ErrKeyShredded: the session's data key was destroyed (the session
	// was deleted, or the keyring lost its file): its content can never be
	// read again.
	ErrKeyShredded = errors.New("encryption key shredded")
	// ErrKeyAbsent: the data key an import needs is not in the keyring it
	// was given, and that keyring never held it as far as it can tell (it
	// did not shred it): the keyring of another store, say. The KeyError
	// names the key and the keyring (KeyID, Ring). Nothing was changed.
	ErrKeyAbsent = errors.New("encryption key not in the keyring")
	// ErrKeyMismatch: a key did not authenticate what it was given: a
	// wrong key-encryption key, a data key that is not the row's, a row
	// moved or replayed from elsewhere, a damaged ciphertext, or plaintext
	// where the session's rows must be ciphertext. Nothing is deleted or
	// changed because of it.
	ErrKeyMismatch = errors.New("encrypted content failed authentication")
)

// KeyError details an encryption failure for logs: the data key id (a
// random id, never a session id) and what was being done. Error() says
// only the kind.
type KeyError struct {
	// KeyID is the data key's id ("" when the KEK itself failed).
	KeyID string
	// KEKVersion is the key-encryption key version involved, if known.
	KEKVersion string
	// Ring is where the key was looked for (a keyring directory), if
	// known.
	Ring string
	// Op is what failed: "wrap", "unwrap", "open", "seal", "load", "shred".
	Op string
	// Kind is ErrKeyUnavailable, ErrKeyShredded, ErrKeyAbsent or
	// ErrKeyMismatch.
	Kind error
	// Err is the underlying cause, if any.
	Err error
}

// Error returns the kind's constant text.
func (e *KeyError) Error() string {
	if e.Kind == nil {
		return ErrKeyMismatch.Error()
	}
	return e.Kind.Error()
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *KeyError) Unwrap() []error {
	out := []error{e.Kind}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// KeyProvider holds key-encryption keys (KEKs) by version and wraps data
// keys under them. Package keys implements it over a key file and an
// environment variable; a KMS client can implement it too. Implementations
// are safe for concurrent use.
type KeyProvider interface {
	// CurrentVersion names the KEK version new and rotated data keys are
	// wrapped under.
	CurrentVersion() string
	// Wrap seals dataKey under KEK version, binding aad (the data key's
	// id) so a wrapped key cannot be swapped for another.
	Wrap(ctx context.Context, version string, dataKey, aad []byte) ([]byte, error)
	// Unwrap opens what Wrap sealed. An unknown version is
	// ErrKeyUnavailable; a wrapped key that does not authenticate is
	// ErrKeyMismatch.
	Unwrap(ctx context.Context, version string, wrapped, aad []byte) ([]byte, error)
}

// KeyRing keeps the data keys of encrypted sessions, wrapped, outside the
// database. Package keys implements it as a directory beside the database
// file; a KMS-backed store can replace it. Implementations are safe for
// concurrent use by goroutines and by OS processes sharing the directory.
type KeyRing interface {
	// NewKey creates a random 256-bit data key and stores it wrapped
	// under the provider's current KEK version, durably, before it
	// returns; id is random and names the key (never a session id).
	NewKey(ctx context.Context) (id string, key []byte, err error)
	// Key returns the data key named id: ErrKeyShredded when it is gone,
	// ErrKeyUnavailable or ErrKeyMismatch when it cannot be unwrapped.
	Key(ctx context.Context, id string) ([]byte, error)
	// Shred destroys the data key named id durably; shredding a key that
	// is already gone is not an error.
	Shred(ctx context.Context, id string) error
}
