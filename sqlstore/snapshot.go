package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Snapshotter = (*Store)(nil)

// snapshotKey is the context key of a ReadSnapshot's snapshot.
type snapshotKey struct{}

// snapshot is one read transaction on one connection of the read pool,
// begun on the driver connection (as readTxHot does) and held until
// ReadSnapshot's fn returns. Every read of the store under its context
// runs on it, one at a time.
type snapshot struct {
	s    *Store
	conn *sqlx.Conn
	// mu is held by the read in progress; a read that cannot take it at
	// once fails with ErrSnapshotBusy instead of waiting (a nested read
	// would otherwise wait for itself).
	mu    sync.Mutex
	ended bool
	// stmts are the statements prepared on conn for this snapshot, closed
	// when it ends.
	stmts map[string]*sqlx.Stmt
}

// ReadSnapshot calls fn with a context under which every read of s sees
// one snapshot of the database (see store.Snapshotter). The snapshot pins
// the WAL while fn runs: checkpoints cannot pass it, so keep fn to the
// reads that must agree (an export, a check), not a long-lived loop.
func (s *Store) ReadSnapshot(ctx context.Context, fn func(ctx context.Context) error) error {
	if fn == nil {
		return store.Invalid("fn", "must not be nil")
	}
	if s.snapshotOf(ctx) != nil {
		return fn(ctx)
	}
	conn, err := s.readConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// BEGIN takes no snapshot in SQLite; the first read does. Read now,
	// so that the snapshot is the state when ReadSnapshot began.
	err = conn.Raw(func(dc any) error {
		if err := hotExec(ctx, dc, "BEGIN"); err != nil {
			return err
		}
		return hotQuery(ctx, dc, "SELECT 1 FROM "+versionTable+" LIMIT 1", nil, func(sqlcore.Rows) error { return nil })
	})
	sn := &snapshot{s: s, conn: conn, stmts: map[string]*sqlx.Stmt{}}
	if err == nil {
		err = fn(context.WithValue(ctx, snapshotKey{}, sn))
	}
	sn.mu.Lock()
	sn.ended = true
	for _, st := range sn.stmts {
		st.Close()
	}
	sn.mu.Unlock()
	rerr := conn.Raw(func(dc any) error {
		// The connection must not go back to the pool inside the
		// transaction, whatever ctx says.
		if err := hotExec(context.Background(), dc, "ROLLBACK"); err != nil {
			return errors.Join(err, driver.ErrBadConn) // the pool discards it
		}
		return nil
	})
	if err == nil && rerr != nil {
		err = rerr
	}
	return mapErr(err)
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

// read runs fn as one read of the snapshot.
func (sn *snapshot) read(ctx context.Context, fn func(r *rtx) error) error {
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
	return mapErr(fn(&rtx{s: sn.s, ctx: ctx, conn: sn.conn, snap: sn}))
}

// stmt returns query prepared on the snapshot's connection, once per
// snapshot. The caller holds sn.mu.
func (sn *snapshot) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if st, ok := sn.stmts[query]; ok {
		return st, nil
	}
	st, err := sn.conn.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	sn.stmts[query] = st
	return st, nil
}
