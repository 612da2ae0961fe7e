package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

const driverName = "sqlite"

// govCacheSize bounds the cache of immutable governed-session fields.
const govCacheSize = 4096

func init() {
	// sqlx does not know modernc's driver name; tell it the bind style.
	sqlx.BindDriver(driverName, sqlx.QUESTION)
}

var _ store.Store = (*Store)(nil)

// Store is a session store on one SQLite file. It is safe for concurrent
// use by many goroutines, and several processes may open the same file.
type Store struct {
	cfg    config
	path   string // empty for OpenDB
	reads  *sqlx.DB
	writes *sqlx.DB
	owned  bool // reads and writes were opened by the store
	w      *writer
	cp     *checkpointer // nil for OpenDB and read-only stores
	lock   *fileLock

	readStmts sync.Map // query string -> *sqlx.Stmt
	govCache  *govCache
	stamper   stamper // ChangeStamp's connection
	core      *sqlcore.Store
	sweeper   *sqlcore.Sweeper // WithSweeper; nil without
	indexer   *sqlcore.Indexer // the background search indexer (search.go)
	closed    atomic.Bool
	// wrote is set by the first write of content that committed (not a
	// fold's): Close folds the search queue only after one.
	wrote     atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the session store in the SQLite file at
// path and migrates its schema forward. It refuses a file that is not a
// session store (store.ErrNotSessionStore), a damaged file
// (store.ErrCorrupt), a schema newer than this binary
// (store.ErrSchemaTooNew) and a database it cannot write — the file
// read-only or immutable, or its directory unable to take the -wal, -shm
// and -writer.lock files (store.ErrReadOnly) — without modifying the file
// or creating anything beside it. A path whose directory does not exist is
// an error matching fs.ErrNotExist that says so.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if path == "" {
		return nil, store.Invalid("path", "must not be empty")
	}
	if path == ":memory:" || hasMemoryMode(path) {
		return nil, store.Invalid("path", "in-memory databases are not supported; use a temporary file")
	}
	if err := checkDir(path); err != nil {
		return nil, err
	}
	if err := cfg.openKeyRing(path); err != nil { // keys.go
		return nil, err
	}
	if cfg.readOnly {
		return openReadOnly(ctx, path, cfg)
	}
	if err := probe(ctx, path, &cfg); err != nil {
		return nil, err
	}
	if err := checkWritable(path); err != nil {
		return nil, err
	}

	s := &Store{cfg: cfg, path: path, owned: true, govCache: newGovCache(govCacheSize)}
	s.newCore()
	if cfg.fileLock {
		l, err := openFileLock(WriterLockPath(path))
		if err != nil {
			cfg.logger.Warn("sqlstore: writer file lock unavailable; relying on busy retries", "err", err)
		} else {
			s.lock = l
		}
	}
	wdb, err := s.migrate(ctx)
	if err != nil {
		s.closeLock()
		return nil, err
	}
	s.writes = sqlx.NewDb(wdb, driverName) // migrate's pool, see there
	s.writes.SetMaxOpenConns(1)
	s.writes.SetConnMaxIdleTime(0)
	s.writes.SetConnMaxLifetime(0)
	s.reads, err = openReadPool(readDSN(path, &cfg))
	if err != nil {
		s.writes.Close()
		s.closeLock()
		return nil, mapErr(err)
	}
	s.reads.SetMaxOpenConns(cfg.readers)
	s.reads.SetMaxIdleConns(cfg.readers)
	if !cfg.noCheckpointer {
		if s.cp, err = startCheckpointer(path, &cfg); err != nil {
			s.reads.Close()
			s.writes.Close()
			s.closeLock()
			return nil, mapErr(err)
		}
	}
	if err := s.startWriter(ctx); err != nil {
		if s.cp != nil {
			s.cp.close()
		}
		s.reads.Close()
		s.writes.Close()
		s.closeLock()
		return nil, err
	}
	if err := s.startSweeper(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.startIndexer(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenDB builds a Store on a *sql.DB the caller opened with the
// modernc.org/sqlite driver ("sqlite"). The caller keeps ownership: Close
// does not close db. The DSN should set the store's pragmas (see Open);
// the store sets foreign_keys and busy_timeout on its write connection
// itself. db must allow at least two connections: the store keeps one for
// writing and reads through the others. The schema is migrated forward.
func OpenDB(ctx context.Context, db *sql.DB, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	cfg.fileLock = false
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, store.Invalid("db", "must not be nil")
	}
	if cfg.readOnly {
		return nil, store.Invalid("read_only", "not supported by OpenDB; use Open")
	}
	if err := cfg.openKeyRing(""); err != nil { // keys.go
		return nil, err
	}
	if n := db.Stats().MaxOpenConnections; n == 1 {
		return nil, store.Invalid("db", "needs at least two connections (one writer, readers)")
	}
	x := sqlx.NewDb(db, driverName)
	s := &Store{cfg: cfg, reads: x, writes: x, govCache: newGovCache(govCacheSize)}
	s.newCore()
	if err := checkSchema(ctx, db); err != nil {
		return nil, err
	}
	if err := s.migrateDB(ctx, db); err != nil {
		return nil, err
	}
	if err := s.startWriter(ctx); err != nil {
		return nil, err
	}
	if err := s.startSweeper(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.startIndexer(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) startWriter(ctx context.Context) error {
	conn, err := s.writes.Connx(ctx)
	if err != nil {
		return mapErr(err)
	}
	pragmas := []string{
		"PRAGMA foreign_keys = ON",
		fmt.Sprintf("PRAGMA busy_timeout = %d", s.cfg.busyTimeout.Milliseconds()),
		"PRAGMA synchronous = " + string(s.cfg.sync),
	}
	if s.cp != nil || s.cfg.noCheckpointer {
		// The checkpointer copies the WAL back, off the commit path (or,
		// in tests that count the log's pages, nothing does).
		pragmas = append(pragmas, "PRAGMA wal_autocheckpoint = 0")
	}
	for _, p := range pragmas {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			conn.Close()
			return mapErr(err)
		}
	}
	s.w = newWriter(conn, s.lock, &s.cfg)
	s.w.cp = s.cp
	return nil
}

// Close stops the writer (after the transaction in progress), then closes
// the connections. Calls made after Close return store.ErrStoreClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.indexer.Stop() // its batch in progress ends, and it gives the lease up
		if !s.cfg.readOnly && s.wrote.Load() {
			// What is still queued (a bounded amount), indexer or not:
			// a store that wrote leaves its items indexed for the
			// read-only stores (a console) that cannot fold them. A
			// store that wrote nothing (a refused command) leaves the
			// file as it found it.
			s.core.FoldOnClose(context.Background())
		}
		s.sweeper.Stop() // its last sweep ends and gives the lease up
		s.closed.Store(true)
		s.core.Close()
		var errs []error
		if s.w != nil {
			s.w.close()
		}
		if s.cp != nil {
			errs = append(errs, s.cp.close())
		}
		if s.w != nil {
			errs = append(errs, s.w.conn.Close())
		}
		s.readStmts.Range(func(_, v any) bool {
			v.(*sqlx.Stmt).Close()
			return true
		})
		if s.owned {
			if s.reads != nil {
				errs = append(errs, s.reads.Close())
			}
			if s.writes != nil {
				errs = append(errs, s.writes.Close())
			}
		}
		errs = append(errs, s.stamper.close())
		errs = append(errs, s.closeLock())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (s *Store) closeLock() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.close()
	s.lock = nil
	return err
}

// Path returns the database file path, or "" for a store built with OpenDB.
func (s *Store) Path() string { return s.path }

// Backend returns "sqlite".
func (s *Store) Backend() string { return "sqlite" }

// HealthCheck checks that the database answers a query on a read
// connection and can be written: on the write connection it updates a
// row of the migration table in place and rolls the change back, so that
// nothing is changed. A database the store cannot write is
// store.ErrReadOnly, whether it was read-only when opened or became so
// later: a file (or its -wal or -shm) made read-only or immutable under
// an open store still takes writes through the descriptors the store
// holds, so the rolled-back probe would pass, but the next Open refuses
// it; HealthCheck makes the checks Open makes (access(2) on the files and
// the directory, which change nothing). Other failures keep their
// storage kind.
func (s *Store) HealthCheck(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	var one int
	if err := s.reads.GetContext(ctx, &one, "SELECT 1 FROM "+versionTable+" LIMIT 1"); err != nil {
		return mapErr(err)
	}
	if s.path != "" && s.w != nil {
		if err := checkWritable(s.path); err != nil {
			return err
		}
	}
	err := s.write(ctx, func(tx *wtx) error {
		if _, err := tx.exec(healthProbeSQL); err != nil {
			return err
		}
		return errHealthProbe // roll the probe back
	})
	if errors.Is(err, errHealthProbe) {
		return nil
	}
	return mapErr(err)
}

// healthProbeSQL is HealthCheck's write: a row of the migration table
// rewritten with its own values (then rolled back).
const healthProbeSQL = `UPDATE ` + versionTable + ` SET tstamp = tstamp
	WHERE id = (SELECT max(id) FROM ` + versionTable + `)`

// errHealthProbe rolls HealthCheck's write probe back.
var errHealthProbe = errors.New("sqlstore: health probe rolled back")

// Governance returns the governed-session facet.
func (s *Store) Governance() store.Governance { return &Governance{s: s, core: s.core} }

// now reads the injected clock, truncated to the stored precision.
func (s *Store) now() time.Time { return rowcodec.FromMillis(rowcodec.ToMillis(s.cfg.clock())) }

// write runs fn on the writer (group commit) and returns its outcome.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	if err := s.canWrite(ctx); err != nil {
		return err
	}
	defer s.core.FeedCommitted() // wake this store's change feeds at once
	err := s.w.do(ctx, fn)
	if err == nil {
		s.wrote.Store(true)
	}
	return err
}

// writeLazy is write for derived data (writer.doLazy).
func (s *Store) writeLazy(ctx context.Context, fn writeFunc) error {
	if err := s.canWrite(ctx); err != nil {
		return err
	}
	defer s.core.FeedCommitted()
	return s.w.doLazy(ctx, fn)
}

// canWrite refuses a write on a closed or read-only store and inside a
// snapshot.
func (s *Store) canWrite(ctx context.Context) error {
	switch {
	case s.closed.Load():
		return store.ErrStoreClosed
	case s.w == nil:
		return errReadOnlyStore
	case s.snapshotOf(ctx) != nil:
		return store.ErrSnapshotWrite
	}
	return nil
}

// readStmt returns the read pool's prepared statement for query.
func (s *Store) readStmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if s.closed.Load() {
		return nil, store.ErrStoreClosed
	}
	if st, ok := s.readStmts.Load(query); ok {
		return st.(*sqlx.Stmt), nil
	}
	st, err := s.reads.PreparexContext(ctx, query)
	if err != nil {
		return nil, mapErr(err)
	}
	if prev, loaded := s.readStmts.LoadOrStore(query, st); loaded {
		st.Close()
		return prev.(*sqlx.Stmt), nil
	}
	return st, nil
}

// get runs a prepared read returning one row.
func (s *Store) get(ctx context.Context, dest any, query string, args ...any) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, func(r *rtx) error { return r.get(dest, query, args...) })
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return err
	}
	return st.GetContext(ctx, dest, args...)
}

// selectRows runs a prepared read returning many rows into dest.
func (s *Store) selectRows(ctx context.Context, dest any, query string, args ...any) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, func(r *rtx) error { return r.selectRows(dest, query, args...) })
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return err
	}
	return mapErr(st.SelectContext(ctx, dest, args...))
}

// scan runs a prepared read returning one row into dest, without
// reflection. It returns sql.ErrNoRows unwrapped.
func (s *Store) scan(ctx context.Context, query string, args []any, dest ...any) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, func(r *rtx) error { return r.scan(query, args, dest...) })
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(ctx, args...).Scan(dest...)
}

// query runs a prepared read and calls fn for each row; rows are always
// closed (an open read pins the WAL).
func (s *Store) query(ctx context.Context, query string, args []any, fn func(sqlcore.Rows) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, func(r *rtx) error { return r.query(query, args, fn) })
	}
	st, err := s.readStmt(ctx, query)
	if err != nil {
		return err
	}
	return mapErr(eachRow(ctx, st, args, fn))
}

// eachRow runs the prepared statement st and calls fn for each row; the
// rows are always closed.
func eachRow(ctx context.Context, st *sqlx.Stmt, args []any, fn func(sqlcore.Rows) error) error {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
