package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// WithKeyRing turns on encryption at rest with ring as the keyring: every
// agent session the store creates gets a data key of its own in ring, and
// its content (event data, session-scope state, the state log, initial
// state) is stored sealed (see store.KeyRing). A store opened without a
// keyring refuses to read encrypted sessions (store.ErrKeyUnavailable).
// Every process sharing the schema must use the same keyring.
func WithKeyRing(ring store.KeyRing) Option {
	return func(c *config) { c.keyRing = ring }
}

// WithKeyProvider turns on encryption at rest with a directory keyring at
// dir (see package keys), its data keys wrapped by p. The database server
// has no file to put the keyring beside: dir must be shared by every
// process using the schema, and kept (and backed up) apart from the
// database. WithKeyRing takes precedence.
func WithKeyProvider(p store.KeyProvider, dir string) Option {
	return func(c *config) { c.keyProvider, c.keyDir = p, dir }
}

// openKeyRing resolves the keyring options.
func (c *config) openKeyRing() error {
	if c.keyRing != nil || c.keyProvider == nil {
		return nil
	}
	if c.keyDir == "" {
		return store.Invalid("key_provider", "needs a keyring directory")
	}
	r, err := keys.OpenRing(c.keyDir, c.keyProvider, keys.RingOptions{})
	if err != nil {
		return err
	}
	c.keyRing = r
	return nil
}

// ShredPending shreds the data keys of deleted encrypted sessions that no
// row names any more (deletes do it after they commit; this finishes what
// a crash interrupted). It returns how many keys it shredded.
func (s *Store) ShredPending(ctx context.Context) (int, error) {
	return s.core.ShredPending(ctx)
}

var _ store.KeyCollector = (*Store)(nil)

// CollectOrphanKeys shreds (or, with DryRun, lists) the keyring's data
// keys that no row of the store's schema names and that are older than
// the grace period: keys left by a crash between a key's creation and the
// commit of its session (see store.KeyCollector). The keyring must be
// this schema's alone: a keyring directory shared by two schemas would
// lose the other schema's keys.
func (s *Store) CollectOrphanKeys(ctx context.Context, req store.CollectKeysRequest) (store.CollectKeysResult, error) {
	if s.closed.Load() {
		return store.CollectKeysResult{}, store.ErrStoreClosed
	}
	return s.core.CollectOrphanKeys(ctx, req)
}

// WithSearchEncrypted opts in to full-text search of encrypted sessions:
// the store writes the search document of an encrypted agent session's
// event itself, with the event's plaintext (the index triggers see only
// ciphertext and skip it). The index then holds plaintext terms of
// encrypted sessions (search_docs.body and the full-text index), so a
// byte scan of the database finds them: the option trades that for
// search. Deleting the session (which shreds its key) deletes its search
// documents with its events. Without the option, encrypted content is
// never indexed.
func WithSearchEncrypted() Option {
	return func(c *config) { c.searchEncrypted = true }
}
