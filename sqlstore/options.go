package sqlstore

import (
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Synchronous is SQLite's synchronous level for the write connection.
type Synchronous string

// Synchronous levels. SyncFull is the default: every acknowledged write
// survives power loss. SyncNormal in WAL mode survives process crashes but
// may lose the last commits on power loss. SyncOff is for throwaway data.
const (
	SyncFull   Synchronous = "FULL"
	SyncNormal Synchronous = "NORMAL"
	SyncOff    Synchronous = "OFF"
)

// Option configures a Store.
type Option func(*config)

type config struct {
	clock       func() time.Time
	logger      *slog.Logger
	sync        Synchronous
	busyTimeout time.Duration
	busyRetry   time.Duration
	readers     int
	maxBatch    int
	fileLock    bool
	journalMax  int64
	runtime     sqlcore.RuntimeLimits
	feedPoll    time.Duration
	readOnly    bool                 // WithReadOnly (readonly.go)
	sweeper     *store.SweeperConfig // WithSweeper (retention.go)
	keyRing     store.KeyRing        // WithKeyRing (keys.go)
	keyProvider store.KeyProvider    // WithKeyProvider (keys.go)

	// eagerSearch: a test-only option (export_test.go), sqlcore.Config.EagerSearch.
	eagerSearch bool
	// largeSearchMin: a test-only option, sqlcore.Config.LargeSearchMin.
	largeSearchMin int
	// searchTimeWalk: a test-only option, sqlcore.Config.SearchTimeWalk.
	searchTimeWalk int
	// searchTrace: a test-only option, sqlcore.Config.SearchTrace.
	searchTrace func(tx sqlcore.Tx, query string, args []any) error
	// searchEncrypted: WithSearchEncrypted (keys.go).
	searchEncrypted bool
	// searchIndex: WithSearchIndex; nil leaves the file's setting.
	searchIndex *bool
	// indexer configures the background indexer; noIndexer (tests only,
	// see export_test.go) runs none.
	indexer   sqlcore.IndexerConfig
	noIndexer bool
	// noCheckpointer (tests only, see export_test.go) starts no
	// checkpointer: the log grows until the store closes.
	noCheckpointer bool

	// faults, when set (tests only, see export_test.go), is consulted
	// before every statement the writer runs in a write transaction,
	// BEGIN and COMMIT included; a non-nil error is returned in place of
	// running the statement.
	faults func(query string) error
	// guarded (tests only, see export_test.go) runs every batch of two or
	// more requests with a savepoint per request from the first pass
	// (writer.runOnce).
	guarded bool
	// auditOff (tests only, see export_test.go) appends no audit events:
	// the baseline of the audit trail's benchmarks.
	auditOff bool
}

func defaultConfig() config {
	return config{
		clock:       time.Now,
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		sync:        SyncFull,
		busyTimeout: 5 * time.Second,
		busyRetry:   30 * time.Second,
		readers:     max(4, 2*runtime.GOMAXPROCS(0)),
		maxBatch:    256,
		fileLock:    true,
		journalMax:  64 << 20,
		runtime:     sqlcore.DefaultRuntimeLimits(DefaultCancelPollInterval),
		feedPoll:    DefaultFeedPollInterval,
	}
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

// WithSynchronous sets the synchronous level of the write connection. The
// default, SyncFull, makes every acknowledged write survive power loss.
func WithSynchronous(s Synchronous) Option {
	return func(c *config) { c.sync = s }
}

// WithBusyTimeout sets how long one attempt waits for a lock held by
// another connection before SQLite reports busy (default 5s).
func WithBusyTimeout(d time.Duration) Option {
	return func(c *config) { c.busyTimeout = d }
}

// WithBusyRetry bounds the total time a write transaction is retried after
// busy errors before ErrBusy reaches the caller (default 30s). The caller's
// context still applies.
func WithBusyRetry(d time.Duration) Option {
	return func(c *config) { c.busyRetry = d }
}

// WithReaders sets the size of the read connection pool (default
// 2 × GOMAXPROCS, at least 4).
func WithReaders(n int) Option {
	return func(c *config) { c.readers = n }
}

// WithMaxBatch bounds how many queued writes one transaction commits
// together (default 256). 1 disables group commit.
func WithMaxBatch(n int) Option {
	return func(c *config) { c.maxBatch = n }
}

// WithFileLock enables or disables the OS file lock ("<path>-writer.lock")
// that queues writers of several processes fairly. It is on by default for
// Open and off for OpenDB.
func WithFileLock(on bool) Option {
	return func(c *config) { c.fileLock = on }
}

// WithSearchIndex turns the file's full-text search index on or off; by
// default the file keeps its setting (on for a new file). The setting
// belongs to the file, not to the process: every process that opens it
// afterwards sees it.
//
// On, a write of searchable content (a message, an agent event, a trace
// event, an artifact, a run) queues the item's key in its own transaction,
// and the store's background indexer folds the queue into the index in
// batches after the commit (one indexer at a time across the processes
// sharing the file, under a lease). Search and History fold whatever is
// still queued first, so they find every item acknowledged before the call
// and never one deleted before it. After a crash the queue is still
// there, and the next store to open the file folds it.
//
// Off, nothing is queued or indexed, the index is emptied, and Search,
// History, CheckSearchIndex and Reindex return store.ErrSearchDisabled.
// Turning it on again queues every stored item once, and the indexer (or
// the first search) folds them in.
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

func (c *config) validate() error {
	switch c.sync {
	case SyncFull, SyncNormal, SyncOff:
	default:
		return invalidOption("synchronous", "must be FULL, NORMAL or OFF")
	}
	if c.busyTimeout < 0 || c.busyRetry < 0 {
		return invalidOption("busy_timeout", "must not be negative")
	}
	if c.readers < 1 {
		return invalidOption("readers", "must be at least 1")
	}
	if c.maxBatch < 1 {
		return invalidOption("max_batch", "must be at least 1")
	}
	if c.feedPoll <= 0 {
		return invalidOption("feed_poll", "must be positive")
	}
	return c.runtime.Validate()
}
