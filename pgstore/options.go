package pgstore

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Option configures a Store.
type Option func(*config)

type config struct {
	clock       func() time.Time
	logger      *slog.Logger
	maxConns    int32
	maxAttempts int
	lockWait    time.Duration
	runtime     sqlcore.RuntimeLimits
	// auditOff (tests only, see export_test.go) appends no audit events:
	// the baseline of the audit trail's benchmarks.
	auditOff bool
	readOnly bool                 // WithReadOnly (readonly.go)
	sweeper  *store.SweeperConfig // WithSweeper (retention.go)
	// WithKeyRing, WithKeyProvider (keys.go)
	keyRing     store.KeyRing
	keyProvider store.KeyProvider
	keyDir      string

	// eagerSearch: a test-only option (export_test.go), sqlcore.Config.EagerSearch.
	eagerSearch bool
	// largeSearchMin: a test-only option, sqlcore.Config.LargeSearchMin.
	largeSearchMin int
	// searchTrace: a test-only option, sqlcore.Config.SearchTrace.
	searchTrace func(tx sqlcore.Tx, query string, args []any) error
	// searchEncrypted: WithSearchEncrypted (keys.go).
	searchEncrypted bool
	// searchIndex: WithSearchIndex; nil leaves the database's setting.
	searchIndex *bool
	// indexer configures the background indexer; noIndexer (tests only,
	// see export_test.go) runs none.
	indexer   sqlcore.IndexerConfig
	noIndexer bool
}

func defaultConfig() config {
	return config{
		clock:       time.Now,
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		maxAttempts: 10,
		lockWait:    5 * time.Minute,
		runtime:     sqlcore.DefaultRuntimeLimits(DefaultCancelPollInterval),
	}
}

// WithSearchIndex turns the schema's full-text search index on or off; by
// default the schema keeps its setting (on for a new schema). The setting
// belongs to the schema, not to the process.
//
// On, a write of searchable content queues the item's key in its own
// transaction, and the store's background indexer folds the queue into
// the index in batches after the commit (one indexer at a time across the
// stores sharing the schema, under a lease). Search and History fold
// whatever is still queued first, so they find every item acknowledged
// before the call and never one deleted before it.
//
// Off, nothing is queued or indexed, the index is emptied, and Search,
// History, CheckSearchIndex and Reindex return store.ErrSearchDisabled.
// Turning it on again queues every stored item once.
func WithSearchIndex(on bool) Option {
	return func(c *config) { c.searchIndex = &on }
}

// WithBackgroundIndexer runs (the default) or does not run the background
// search indexer in this store. Without it, what the store writes stays
// queued until a search (of any store on the database) or another
// store's indexer folds it in, or until the store's Close. Close of a
// store that wrote folds what is still queued (a bounded amount) with
// the indexer or without it, so that a short-lived process (a command-line tool) leaves what it
// wrote indexed for the stores that cannot fold (a read-only console).
func WithBackgroundIndexer(on bool) Option {
	return func(c *config) { c.noIndexer = !on }
}

// WithClock injects the clock used for creation times, expiry and rate
// windows. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.clock = now
		}
	}
}

// WithLogger sets the logger for operational events (retries, migrations).
// The store is silent by default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// DefaultMaxConns is the size of the pool Open creates unless the URL's
// pool_max_conns or WithMaxConns sets another. pgx's own default (the
// larger of 4 and the number of CPUs) suits CPU-bound work; a governed
// decision is a short transaction whose time is mostly a wait for its
// commit to reach the disk, and PostgreSQL flushes the commits that wait
// together in one WAL flush. A caller who finds no free connection waits
// for one instead of joining that flush: with 4 connections, 32 callers on
// 32 sessions commit no faster than 4. 32 connections let a runtime's
// concurrent callers commit together, and stay well below PostgreSQL's
// default max_connections (100) for three or so processes sharing a
// server; size it to the callers one process runs at once.
const DefaultMaxConns = 32

// WithMaxConns bounds the connection pool Open creates (default
// DefaultMaxConns; a pool_max_conns parameter in the URL also works). It
// has no effect with OpenPool.
func WithMaxConns(n int32) Option {
	return func(c *config) { c.maxConns = n }
}

// WithMaxAttempts bounds how many times one transaction is run when
// PostgreSQL aborts it with a serialization failure or a deadlock (default
// 10). The last failure reaches the caller as store.ErrBusy.
func WithMaxAttempts(n int) Option {
	return func(c *config) { c.maxAttempts = n }
}

// WithMigrationLockWait bounds how long Open waits for another process that
// is migrating the same schema (default 5 minutes, whole seconds).
func WithMigrationLockWait(d time.Duration) Option {
	return func(c *config) { c.lockWait = d }
}

func (c *config) validate() error {
	if c.maxConns < 0 {
		return store.Invalid("option max_conns", "must not be negative")
	}
	if c.maxAttempts < 1 {
		return store.Invalid("option max_attempts", "must be at least 1")
	}
	if c.lockWait < time.Second {
		return store.Invalid("option migration_lock_wait", "must be at least 1s")
	}
	return c.runtime.Validate()
}

// invalidOption reports a bad Option value.
func invalidOption(name, reason string) error {
	return store.Invalid("option "+name, reason)
}

// hasPoolMaxConns reports whether the connection string sets
// pool_max_conns (as a URL query parameter or a keyword/value pair).
func hasPoolMaxConns(conn string) bool {
	return strings.Contains(conn, "pool_max_conns")
}
