package pgstore

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/store"
)

var _ store.Snapshotter = (*Store)(nil)

// snapshotKey is the context key of a ReadSnapshot's snapshot.
type snapshotKey struct{}

// snapshot is one REPEATABLE READ, READ ONLY transaction held until
// ReadSnapshot's fn returns; every read of the store under its context
// runs in it, one at a time (a pgx connection runs one statement at once).
type snapshot struct {
	s  *Store
	tx pgx.Tx
	// mu is held by the read in progress; a read that cannot take it at
	// once fails with ErrSnapshotBusy instead of waiting.
	mu    sync.Mutex
	ended bool
}

// ReadSnapshot calls fn with a context under which every read of s sees
// one snapshot of the database (see store.Snapshotter): a REPEATABLE
// READ, READ ONLY transaction whose snapshot is taken before fn runs.
func (s *Store) ReadSnapshot(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return store.Invalid("fn", "must not be nil")
	}
	if s.snapshotOf(ctx) != nil {
		return fn(ctx)
	}
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The snapshot of a REPEATABLE READ transaction is taken by its first
	// statement: take it now.
	var one int
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return mapErr(err)
	}
	sn := &snapshot{s: s, tx: tx}
	err = fn(context.WithValue(ctx, snapshotKey{}, sn))
	sn.mu.Lock()
	sn.ended = true
	sn.mu.Unlock()
	return err
}

// snapshotOf returns the snapshot of s that ctx carries, or nil (also for
// a snapshot of another store).
func (s *Store) snapshotOf(ctx context.Context) *snapshot {
	sn, _ := ctx.Value(snapshotKey{}).(*snapshot)
	if sn == nil || sn.s != s {
		return nil
	}
	return sn
}

// read runs fn as one read of the snapshot, on its transaction.
func (sn *snapshot) read(fn func(q querier) error) error {
	if sn.s.closed.Load() {
		return store.ErrStoreClosed
	}
	if !sn.mu.TryLock() {
		return store.ErrSnapshotBusy
	}
	defer sn.mu.Unlock()
	if sn.ended {
		return store.ErrSnapshotEnded
	}
	return fn(sn.tx)
}

// reader runs fn with what a single read outside a transaction runs on:
// the snapshot's transaction under ReadSnapshot, else the pool.
func (s *Store) reader(ctx context.Context, fn func(q querier) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(fn)
	}
	return fn(s.pool)
}
