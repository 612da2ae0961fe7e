package store

import (
	"context"
	"fmt"
)

// Snapshotter runs a group of reads against one snapshot of the database,
// so that what they return is the state of one instant however many
// statements, pages and facets they span. The archive's export uses it:
// a session created while an export runs is wholly in it or wholly out of
// it, never present in one facet and missing from another.
//
// Both backends implement it: SQLite with one read transaction on one
// connection of the read pool (WAL readers keep their snapshot until it
// ends), PostgreSQL with one REPEATABLE READ, READ ONLY transaction.
type Snapshotter interface {
	// ReadSnapshot calls fn with a context under which every read of this
	// store sees the same snapshot, taken when ReadSnapshot begins, and
	// returns fn's error. Writes of this store under that context fail
	// with ErrSnapshotWrite and change nothing. The reads under one
	// snapshot run one at a time: a read started while another is in
	// progress (from another goroutine, or from inside a callback of the
	// first) fails with ErrSnapshotBusy rather than wait. A nested
	// ReadSnapshot with a context of the same store and snapshot calls fn
	// in the snapshot it already has. The snapshot ends when fn returns;
	// the context must not be used for reads after that (they fail with
	// ErrSnapshotEnded).
	ReadSnapshot(ctx context.Context, fn func(ctx context.Context) error) error
}

// ErrSnapshotWrite: a write was called with a context of ReadSnapshot. It
// matches ErrInvalidInput: the call is wrong, not the data.
var ErrSnapshotWrite = fmt.Errorf("a read snapshot cannot write: %w", ErrInvalidInput)

// ErrSnapshotBusy: a read was called under a snapshot while another read
// of the same snapshot was in progress.
// It matches ErrInvalidInput.
var ErrSnapshotBusy = fmt.Errorf("the read snapshot is in use by another read: %w", ErrInvalidInput)

// ErrSnapshotEnded: a read was called with the context of a snapshot whose
// ReadSnapshot has returned.
// It matches ErrInvalidInput.
var ErrSnapshotEnded = fmt.Errorf("the read snapshot has ended: %w", ErrInvalidInput)
