package store

import (
	"context"
	"time"
)

// DefaultKeyGrace is how old an unnamed data key must be before
// CollectOrphanKeys shreds it, when the request gives no grace period.
const DefaultKeyGrace = time.Hour

// KeyEntry is one data key a keyring holds.
type KeyEntry struct {
	// ID names the key.
	ID string
	// CreatedAt is when the key was stored (a directory keyring gives its
	// file's modification time, which a rotation moves forward: never
	// older than the key).
	CreatedAt time.Time
}

// KeyLister is a KeyRing that lists its keys (package keys' directory
// ring does). Collecting orphan keys needs it.
type KeyLister interface {
	// KeyEntries returns every data key of the ring.
	KeyEntries(ctx context.Context) ([]KeyEntry, error)
}

// CollectKeysRequest configures a collection of orphan data keys.
type CollectKeysRequest struct {
	// Grace is how old (by the store's clock) an unnamed key must be to
	// be an orphan: a key is stored before the row that names it commits,
	// so a younger one may belong to a create still in flight. 0 means
	// DefaultKeyGrace; negative is ErrInvalidInput.
	Grace time.Duration
	// DryRun lists the orphans without shredding them.
	DryRun bool
}

// CollectKeysResult reports a collection of orphan data keys.
type CollectKeysResult struct {
	// Keys is how many keys the keyring holds.
	Keys int `json:"keys"`
	// Named is how many of them a row of the database names.
	Named int `json:"named"`
	// Young is how many unnamed keys are within the grace period (kept).
	Young int `json:"young"`
	// Orphans are the ids of the unnamed keys older than the grace
	// period, sorted: shredded unless DryRun.
	Orphans []string `json:"orphans"`
	// Shredded is how many orphans were shredded.
	Shredded int `json:"shredded"`
	// DryRun is the request's.
	DryRun bool `json:"dry_run"`
}

// KeyCollector is a store that collects orphan data keys: keys of its
// keyring that no row names, left behind by a crash between a key's
// creation and the commit of the row that names it.
type KeyCollector interface {
	// CollectOrphanKeys shreds (or, with DryRun, lists) the keyring's data
	// keys that no session row names and that are older than the grace
	// period. It runs on the whole database: a tenant handle refuses it
	// (ErrInvalidInput), since it cannot see the other tenants' rows. A
	// store without a keyring, or whose keyring cannot list its keys, is
	// ErrKeyUnavailable.
	CollectOrphanKeys(ctx context.Context, req CollectKeysRequest) (CollectKeysResult, error)
}
