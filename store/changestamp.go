package store

import (
	"context"
	"errors"
)

// ChangeStamper is implemented by a store that can tell cheaply whether
// anything has been committed to its database since an earlier moment: by
// itself, by another Store on the same database, or by another process.
// A caller that keeps what it read (the ADK adapter's cache of decoded
// events) takes a stamp before the read and reuses the result only while
// the stamp it takes later is the same. Like Counter it is kept out of the
// Store interface: a store without it is simply read every time.
//
// sqlstore implements it with SQLite's PRAGMA data_version on a read-only
// connection of its own (a store opened with OpenDB returns
// ErrNoChangeStamp, since its connections may also write, and a
// connection does not see its own commits in data_version), and so does
// every store under a context of ReadSnapshot: a read there must see the
// snapshot.
type ChangeStamper interface {
	// ChangeStamp returns a value that differs from every value it
	// returned before a commit made after that value was returned. Two
	// equal stamps therefore mean that nothing was committed between the
	// two calls. Read it before the read whose result is kept: what was
	// committed between the stamp and the read is then caught by the next
	// stamp.
	ChangeStamp(ctx context.Context) (uint64, error)
}

// ErrNoChangeStamp is returned by a ChangeStamp that cannot tell: the
// caller reads afresh.
var ErrNoChangeStamp = errors.New("store: no change stamp for this store")
