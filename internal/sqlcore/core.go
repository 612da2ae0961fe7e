// Package sqlcore is the backend-neutral SQL of the session store: every
// facet (conversations, runtime bookkeeping, agent sessions) written once,
// over a small driver interface (DB and Tx) and a Dialect that holds what
// really differs between SQLite and PostgreSQL. Packages sqlstore and
// pgstore implement DB for their database and keep only what is theirs:
// opening, options, migrations, error mapping, the SQLite writer (group
// commit, file lock) and PostgreSQL's notifications and advisory locks.
//
// The pattern is River's driver: the facet code never names a database,
// and the conformance suite in store/storetest checks that both backends
// behave the same.
//
// Queries are written with "?" placeholders, or "?N" where a parameter is
// used more than once; a backend whose database spells them differently
// rebinds them in its Tx (once per statement text).
package sqlcore

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Tx runs statements inside one transaction of the backend. Errors are the
// backend's mapped store errors, except sql.ErrNoRows, which Get and Scan
// return unwrapped-matchable (errors.Is) when no row matched.
type Tx interface {
	// Exec runs a statement that returns no rows.
	Exec(query string, args ...any) (sql.Result, error)
	// Get scans the one row the query returns into dest (a struct with db
	// tags, or a single value); sql.ErrNoRows when there is none.
	Get(dest any, query string, args ...any) error
	// Select scans every row the query returns into dest, a pointer to a
	// slice.
	Select(dest any, query string, args ...any) error
	// Scan scans the one row the query returns into dest, without
	// reflection; sql.ErrNoRows when there is none.
	Scan(query string, args []any, dest ...any) error
	// Query calls fn for each row; the rows are always closed.
	Query(query string, args []any, fn func(Rows) error) error
}

// Rows is the current row of a Query (both *sql.Rows and pgx.Rows are).
type Rows interface {
	// Scan copies the row's columns into dest.
	Scan(dest ...any) error
}

// DB is what a backend provides to the facets.
type DB interface {
	// Write runs fn in one write transaction and commits it when fn
	// returns nil; fn's error rolls the transaction back and is returned.
	// The backend may run fn more than once (a whole-transaction retry),
	// so fn must only assign its outputs.
	Write(ctx context.Context, fn func(tx Tx) error) error
	// Read runs fn in a read-only transaction: every statement of it
	// sees the same snapshot.
	Read(ctx context.Context, fn func(tx Tx) error) error
	// Get, Select, Scan and Query are single-statement reads outside a
	// transaction, with the semantics of the Tx methods.
	Get(ctx context.Context, dest any, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
	Scan(ctx context.Context, query string, args []any, dest ...any) error
	Query(ctx context.Context, query string, args []any, fn func(Rows) error) error
}

// Config is the backend's part of a Store.
type Config struct {
	// Dialect holds the statement spellings of the backend's database.
	Dialect *Dialect
	// Clock is the injected clock; times are stored with millisecond
	// precision.
	Clock store.Clock
	// Logger receives the facets' log records (never nil: the backend
	// passes a discarding logger by default).
	Logger *slog.Logger
	// RuntimeLimits are the runtime facet's settings.
	RuntimeLimits
	// IsUniqueViolation reports whether err is a PRIMARY KEY or UNIQUE
	// failure.
	IsUniqueViolation func(err error) bool
	// TurnWake, when set, runs while the Store watches running turns and
	// calls wake whenever another process may have cancelled, superseded
	// or ended a turn (PostgreSQL: LISTEN), until ctx ends. The poll
	// every CancelPoll remains the fallback.
	TurnWake func(ctx context.Context, wake func())
	// NotifyTurns, when set, runs in every write transaction that
	// cancels, supersedes or ends a turn, to wake the TurnWake of other
	// stores once it commits (PostgreSQL: NOTIFY).
	NotifyTurns func(tx Tx) error
	// FeedWake, when set, runs while at least one change feed of the Store
	// is open and calls wake whenever another connection or process may
	// have committed (SQLite: PRAGMA data_version changed; PostgreSQL: a
	// NOTIFY), until ctx ends. The backend also calls
	// Store.FeedCommitted after its own commits.
	FeedWake func(ctx context.Context, wake func())

	// Space, when set, measures the database for a sweep's report and
	// its size budget (see SpaceInfo).
	Space func(ctx context.Context) (SpaceInfo, error)
	// Reclaim, when set, gives the free space of the database back to
	// the file system after a sweep removed something, in short steps,
	// and returns the bytes it gave back (SQLite's incremental vacuum).
	Reclaim func(ctx context.Context) (int64, error)
	// CompactIndexes, when set, makes the space that removed rows held in
	// derived indexes free pages again, in short steps (SQLite: an FTS5
	// index keeps a deleted row's entries, and its pages, until its
	// segments are merged), so that Space measures what a removal freed.
	// A size-budget sweep runs it before it measures.
	CompactIndexes func(ctx context.Context) error

	// Keys, when set, is the keyring of encryption at rest: every new
	// agent session gets a data key of its own and its content is sealed
	// (crypt.go). Without it the store creates plaintext sessions and
	// refuses to read encrypted ones (store.ErrKeyUnavailable).
	Keys store.KeyRing
	// SearchEncrypted opts in to indexing the plaintext of encrypted
	// content for search (search_sealed.go); by default encrypted content
	// is never indexed.
	SearchEncrypted bool
	// EagerSearch makes Search read every candidate of the index for a
	// term before it chooses a page, as it did before it stopped early
	// (search_large.go): the reference its tests compare with. The
	// backends set it from a test-only option.
	EagerSearch bool
	// LargeSearchMin replaces largeSearchMin, the number of the index's
	// candidates from which Search stops early (0: largeSearchMin), and
	// largeSearchBatch, its first batch of candidates; the backends set
	// it from a test-only option, so that a small store's tests take that
	// path and cross batches.
	LargeSearchMin int
	// SearchTimeWalk chooses how a search newest first of a term in many
	// documents finds its page on SQLite (search_large.go): 0 by the
	// estimated cost (timeWalkFrom), 1 always by walking the index of
	// documents by time, -1 always from the match's candidates, read and
	// sorted. The backends set it from a test-only option, so that the
	// tests cover both ways on a small store.
	SearchTimeWalk int
	// SearchTrace, when set, runs in Search's read transaction before
	// each statement that reads search_docs, with that statement and its
	// arguments; an error from it fails the search. The backends set it
	// from a test-only option, so that a test can look at the plans of
	// the statements a search runs (EXPLAIN in the same transaction).
	SearchTrace func(tx Tx, query string, args []any) error
	// TenantSQL, when set, is run first in every transaction of a
	// tenant's Store (WithTenant) with the tenant as its one parameter:
	// PostgreSQL sets sessionstore.tenant for the transaction, which the
	// tenant columns' defaults and the row-level security policies read.
	// SQLite needs nothing (its triggers copy a child row's tenant from
	// its parent).
	TenantSQL string

	// AuditOff appends no audit events. Backends set it for their
	// benchmarks only (the baseline of the audit trail's cost); a store
	// in use always audits.
	AuditOff bool
}

// Store implements the conversation, runtime and agent-session facets over
// a backend's DB. Its methods are safe for concurrent use.
type Store struct {
	db    DB
	d     *Dialect
	q     statements
	cfg   Config
	log   *slog.Logger
	turns *turnRegistry
	feeds *feedHub
	reads *readsCache // retention_reads.go
	// tenant is the tenant whose rows the Store reads and writes; "" is
	// the default tenant (tenant.go).
	tenant string
	// rlsBypass: the connections' role bypasses row-level security
	// (SetRLSBypass, tenant.go).
	rlsBypass bool
	// trgm: the PostgreSQL search index is pg_trgm's
	// (SetTrigramExtension, search.go).
	trgm bool
	dks  *dataKeys // crypt.go
	// stats caches the search index's statistics (search_stats.go).
	stats *ftsStats
}

// New returns the facets over db.
func New(db DB, cfg Config) *Store {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{db: db, d: cfg.Dialect, q: newStatements(cfg.Dialect), cfg: cfg, log: log,
		turns: &turnRegistry{}, feeds: &feedHub{}, reads: &readsCache{}, dks: &dataKeys{}, stats: &ftsStats{}}
}

// Close cancels the contexts of the turns this Store began (with
// store.ErrStoreClosed) and stops watching them, and ends its change feeds
// with store.ErrStoreClosed. The backend calls it before it closes its
// connections.
func (s *Store) Close() {
	s.turns.close()
	s.feeds.close()
}

// now reads the injected clock, truncated to the stored precision.
func (s *Store) now() time.Time { return rowcodec.FromMillis(rowcodec.ToMillis(s.cfg.Clock())) }

func (s *Store) write(ctx context.Context, fn func(tx Tx) error) error { return s.db.Write(ctx, fn) }

// LazyWriter is a DB that commits a write of derived data without
// waiting for the disk: data the store rebuilds from the rest of the
// database when a power failure undoes its transaction (the search
// index's folds: the queue rows a fold deletes come back with the
// documents it wrote). Such a transaction is undone whole or kept whole,
// and never undoes a durable one committed after it.
type LazyWriter interface {
	WriteLazy(ctx context.Context, fn func(tx Tx) error) error
}

// writeDerived runs fn as a write of derived data: lazily where the DB
// can (LazyWriter), else as any write.
func (s *Store) writeDerived(ctx context.Context, fn func(tx Tx) error) error {
	if lw, ok := s.db.(LazyWriter); ok {
		return lw.WriteLazy(ctx, fn)
	}
	return s.db.Write(ctx, fn)
}

func (s *Store) readTx(ctx context.Context, fn func(tx Tx) error) error { return s.db.Read(ctx, fn) }

func (s *Store) get(ctx context.Context, dest any, query string, args ...any) error {
	return s.db.Get(ctx, dest, query, args...)
}

func (s *Store) selectRows(ctx context.Context, dest any, query string, args ...any) error {
	return s.db.Select(ctx, dest, query, args...)
}

func (s *Store) isUnique(err error) bool {
	return s.cfg.IsUniqueViolation != nil && s.cfg.IsUniqueViolation(err)
}
