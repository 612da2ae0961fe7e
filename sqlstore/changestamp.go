package sqlstore

import (
	"context"
	"database/sql"
	"sync"

	"github.com/agentstore/sessionstore/store"
)

var _ store.ChangeStamper = (*Store)(nil)

// stamper reads PRAGMA data_version on a read-only connection of its
// own: the value changes whenever another connection (this store's
// writer, another Store, another process) has committed since the last
// read on this connection, and this connection never writes.
type stamper struct {
	mu   sync.Mutex
	db   *sql.DB
	stmt *sql.Stmt
	// epoch counts the connections the stamper has opened: data_version
	// values of two connections are not comparable, so a stamp carries
	// the epoch in its high bits.
	epoch  uint64
	closed bool
}

// ChangeStamp implements store.ChangeStamper (about 10 µs, one statement
// on a connection of its own; concurrent callers take turns).
func (s *Store) ChangeStamp(ctx context.Context) (uint64, error) {
	if s.path == "" || ctx.Value(snapshotKey{}) != nil {
		// OpenDB's connections may write; a read under ReadSnapshot must
		// see its snapshot, not what a cache kept.
		return 0, store.ErrNoChangeStamp
	}
	st := &s.stamper
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || s.closed.Load() {
		return 0, store.ErrClosed
	}
	if st.stmt == nil {
		db, err := sql.Open(driverName, readDSN(s.path, &s.cfg))
		if err != nil {
			return 0, mapErr(err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		stmt, err := db.PrepareContext(ctx, "PRAGMA data_version")
		if err != nil {
			db.Close()
			return 0, mapErr(err)
		}
		st.db, st.stmt = db, stmt
		st.epoch++
	}
	var v int64
	if err := st.stmt.QueryRowContext(ctx).Scan(&v); err != nil {
		// Start over on a new connection next time: a stamp of the new
		// one is never equal to one of this one.
		st.closeLocked()
		return 0, mapErr(err)
	}
	return st.epoch<<40 | uint64(v)&(1<<40-1), nil
}

// close releases the stamper's connection for good.
func (st *stamper) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	return st.closeLocked()
}

func (st *stamper) closeLocked() error {
	if st.stmt == nil {
		return nil
	}
	st.stmt.Close()
	err := st.db.Close()
	st.db, st.stmt = nil, nil
	return err
}
