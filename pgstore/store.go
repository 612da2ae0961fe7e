package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Store = (*Store)(nil)

// Store is a session store in one PostgreSQL schema. It is safe for
// concurrent use by many goroutines, and any number of processes on any
// number of hosts may open the same database.
type Store struct {
	cfg   config
	pool  *pgxpool.Pool
	owned bool // the pool was created by Open

	// channel is the NOTIFY channel of this database and schema on which
	// turn cancels, supersedes and ends are announced.
	channel string
	core    *sqlcore.Store
	sweeper *sqlcore.Sweeper // WithSweeper; nil without
	indexer *sqlcore.Indexer // the background search indexer (search.go)
	// rlsBypassFound: the connections' role bypasses row-level security
	// (found at open; tenant.go).
	rlsBypassFound bool
	// uses batches concurrent governed Use calls per tenant (usebatch.go).
	uses useBatcher
	// flush sends a batch's pipeline with its COMMIT (pipeline_flush.go).
	flush flushPlan

	closed atomic.Bool
	// wrote is set by the first write transaction that committed: Close
	// folds the search queue only after one.
	wrote     atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or a
// key=value connection string, as pgx accepts), and migrates the store's
// schema forward. The store lives in the first schema of the connection's
// search_path (public by default; add search_path=name to the URL to put it
// elsewhere). It refuses a schema that holds another application's tables
// (store.ErrNotSessionStore) and a schema newer than this binary
// (store.ErrSchemaTooNew), without modifying anything.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if url == "" {
		return nil, store.Invalid("url", "must not be empty")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts passwords in its parse errors.
		return nil, fmt.Errorf("%w: %w", store.Invalid("url", "not a valid PostgreSQL connection string"), err)
	}
	switch {
	case cfg.maxConns > 0:
		pc.MaxConns = cfg.maxConns
	case !hasPoolMaxConns(url):
		pc.MaxConns = DefaultMaxConns
	}
	rp := pc.ConnConfig.RuntimeParams
	// The store's transactions rely on READ COMMITTED: each statement
	// sees what committed before it started (after a lock wait, too).
	rp["default_transaction_isolation"] = "read committed"
	if rp["application_name"] == "" {
		rp["application_name"] = "sessionstore"
	}
	if cfg.readOnly {
		readOnlyParams(pc)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, mapErr(err)
	}
	s, err := newStore(ctx, pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// OpenPool builds a Store on a pool the caller created. The caller keeps
// ownership: Close does not close pool. The store's transactions set READ
// COMMITTED explicitly; the pool's other settings are the caller's. The
// schema is migrated forward as with Open.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if pool == nil {
		return nil, store.Invalid("pool", "must not be nil")
	}
	return newStore(ctx, pool, cfg)
}

func newStore(ctx context.Context, pool *pgxpool.Pool, cfg config) (*Store, error) {
	if err := cfg.openKeyRing(); err != nil { // keys.go
		return nil, err
	}
	s := &Store{cfg: cfg, pool: pool, flush: newFlushPlan(pool)}
	s.newCore()
	if err := pool.Ping(ctx); err != nil {
		return nil, mapErr(err)
	}
	migrate := s.migrate
	if cfg.readOnly {
		migrate = s.checkReadOnly
	}
	if err := migrate(ctx); err != nil {
		return nil, err
	}
	database, schema, err := s.identity(ctx)
	if err != nil {
		return nil, err
	}
	bypass, err := s.bypassesRLS(ctx) // tenant.go
	if err != nil {
		return nil, err
	}
	s.rlsBypassFound = bypass
	s.core.SetRLSBypass(bypass)
	trgm, err := s.trigramExtension(ctx) // search.go
	if err != nil {
		return nil, err
	}
	s.core.SetTrigramExtension(trgm)
	s.channel = "sessionstore_turns_" + hash64(database, schema)
	if err := s.startSweeper(); err != nil {
		s.core.Close()
		return nil, err
	}
	if err := s.startIndexer(ctx); err != nil {
		s.sweeper.Stop()
		s.core.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the store; with Open, also its connection pool (after the
// calls in progress returned). Calls made after Close return
// store.ErrStoreClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.indexer.Stop() // its batch in progress ends, and it gives the lease up
		if !s.cfg.readOnly && s.wrote.Load() {
			// What is still queued (a bounded amount), indexer or not:
			// a store that wrote leaves its items indexed for the
			// read-only stores (a console) that cannot fold them. A
			// store that wrote nothing (a refused command) leaves the
			// database as it found it.
			s.core.FoldOnClose(context.Background())
		}
		s.sweeper.Stop() // its last sweep ends and gives the lease up
		s.closed.Store(true)
		s.core.Close()
		if s.owned {
			s.pool.Close()
		}
	})
	return s.closeErr
}

// Backend returns "postgres".
func (s *Store) Backend() string { return "postgres" }

// Pool returns the store's connection pool, for tools that inspect the
// database. Writing to the store's tables behind its back voids its
// guarantees.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// HealthCheck checks that the store's schema answers a query and can be
// written: in one transaction it reads the migration table, updates a row
// of it in place and rolls back, so that nothing is changed. A database the
// store cannot write (a read-only server or transaction, a role without
// write privileges) is store.ErrReadOnly; other failures keep their
// storage kind.
func (s *Store) HealthCheck(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	err := s.retry(ctx, func(ctx context.Context) error {
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer tx.Rollback(context.Background()) // the probe is never kept
		var n int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+versionTable).Scan(&n); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, healthProbeSQL)
		return err
	})
	return mapErr(err)
}

// healthProbeSQL is HealthCheck's write: a row of the migration table
// rewritten with its own values (then rolled back).
const healthProbeSQL = `UPDATE ` + versionTable + ` SET tstamp = tstamp
	WHERE id = (SELECT max(id) FROM ` + versionTable + `)`

// Governance returns the governed-session facet.
func (s *Store) Governance() store.Governance { return &Governance{s: s, core: s.core} }

// now reads the injected clock, truncated to the stored precision.
func (s *Store) now() time.Time { return rowcodec.FromMillis(rowcodec.ToMillis(s.cfg.clock())) }

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// retry runs fn, and runs it again from the start while PostgreSQL aborts
// it with a serialization failure or a deadlock, at most maxAttempts times
// in all, with jittered backoff. fn must only assign its outputs, never
// accumulate: it may run several times.
func (s *Store) retry(ctx context.Context, fn func(ctx context.Context) error) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !isRetryable(err) || attempt >= s.cfg.maxAttempts {
			return mapErr(err)
		}
		s.cfg.logger.Warn("pgstore: transaction aborted by the server, retrying", "attempt", attempt, "sqlstate", pgCode(err))
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
}

// inTx runs fn in one READ COMMITTED transaction, retried as a whole (see
// retry). fn's error rolls the transaction back and reaches the caller;
// nil commits.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.snapshotOf(ctx) != nil {
		return store.ErrSnapshotWrite
	}
	err := s.retry(ctx, func(ctx context.Context) error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
	})
	if err == nil {
		s.wrote.Store(true)
	}
	return err
}

// backoff is the wait before attempt+1: exponential from 2ms, capped at
// 200ms, with full jitter.
func backoff(attempt int) time.Duration {
	d := 2 * time.Millisecond << min(attempt-1, 7)
	d = min(d, 200*time.Millisecond)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errNoRows reports whether err means the query returned no row.
func errNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }
