// Package storetest is the conformance suite of package store: the
// executable specification every backend must pass. A backend's tests call
// Run with a Harness, and call RunHelperProcess from TestMain so that the
// suite can start second OS processes on the same database:
//
//	func TestMain(m *testing.M) {
//		storetest.RunHelperProcess(harness)
//		os.Exit(m.Run())
//	}
//
//	func TestConformance(t *testing.T) { storetest.Run(t, harness) }
//
// The suite uses only the store interfaces, never SQL, so that every
// backend runs the same tests. The package also holds the benchmarks every
// backend runs the same way (see Bench):
//
//	func BenchmarkStore(b *testing.B) { storetest.Bench(b, harness, storetest.BenchOptions{}) }
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Harness opens stores of one backend for the suite.
type Harness struct {
	// NewLocation returns the location (file path, URL, ...) of a fresh,
	// empty database for t. Two stores opened on one location share data.
	NewLocation func(t testing.TB) string
	// Open opens the store at loc with the given clock. The suite closes
	// the stores it opens.
	Open func(ctx context.Context, loc string, clock store.Clock) (store.Store, error)
	// OpenWith opens the store at loc with the given clock and settings.
	// Zero fields of opts keep the backend's defaults.
	OpenWith func(ctx context.Context, loc string, clock store.Clock, opts Options) (store.Store, error)
	// Exec runs one SQL statement on the database at loc behind the
	// store's back (the audit tests tamper with the trail this way). The
	// statements use only literals, no parameters. Tests that need it
	// skip without it.
	Exec func(ctx context.Context, loc, query string) error
	// Count runs one query returning a single integer on the database at
	// loc behind the store's back (the encryption tests count upload
	// blobs this way). Tests that need it skip without it.
	Count func(ctx context.Context, loc, query string) (int64, error)

	// keyringDir and keyringKEK are the keyring of an Encrypted harness,
	// passed on to helper processes.
	keyringDir, keyringKEK string
}

// Options are backend settings some tests need.
type Options struct {
	// MaxSessions is the global cap on runtime sessions (0: none).
	MaxSessions int64
	// MaxUploadBytes is the upload size limit (0: the default,
	// store.DefaultMaxUploadBytes).
	MaxUploadBytes int64
	// Durability selects how durable a commit is, in the backend's own
	// terms (SQLite: a synchronous level such as "NORMAL"; PostgreSQL: a
	// synchronous_commit value such as "off"). Empty keeps the backend's
	// default, which makes every acknowledged write survive power loss.
	// The benchmarks set it (BenchOptions.Durability); the tests do not.
	Durability string
	// TurnLease is the lease of the turns the store begins (0: the
	// default, store.DefaultTurnLease).
	TurnLease time.Duration
	// NoAudit opens a store that appends no audit events: the baseline
	// against which the benchmarks measure the audit trail's cost. A
	// backend offers it to its tests only.
	NoAudit bool
	// Sweeper, when set, runs a background sweeper in the store (the
	// backend's WithSweeper option).
	Sweeper *store.SweeperConfig
	// Keys, when set, is the keyring of encryption at rest (the backend's
	// WithKeyRing option).
	Keys store.KeyRing
	// SearchEncrypted opts in to indexing encrypted content (the
	// backend's WithSearchEncrypted option).
	SearchEncrypted bool
	// NoIndexer opens a store without the background search indexer (the
	// backend's WithBackgroundIndexer(false)): what it writes stays
	// queued until a search of a store that can write, or its Close,
	// folds it.
	NoIndexer bool
	// ReadOnly opens a store that refuses every write (the backend's
	// WithReadOnly(true)).
	ReadOnly bool
	// EagerSearch opens a store whose Search reads every candidate of the
	// index before it chooses a page, as it did before it stopped early
	// (a backend's test-only option): the reference of LargeTermPages.
	EagerSearch bool
	// LargeSearchMin, when positive, opens a store whose Search stops
	// early from that many candidates of the index on (a backend's
	// test-only option), so that a small store takes that path.
	LargeSearchMin int
	// SearchTimeWalk, when not 0, opens a store whose Search newest first
	// of a term in many documents always (1) or never (-1) walks an index
	// of the documents by time (a backend's test-only option; a backend
	// without such an index ignores it), so that a small store's tests
	// cover both ways; 0 leaves the choice to the store.
	SearchTimeWalk int
}

// Run runs the whole conformance suite.
func Run(t *testing.T, h Harness) {
	t.Run("Governance", func(t *testing.T) { RunGovernance(t, h) })
	t.Run("Ordering", func(t *testing.T) { RunOrdering(t, h) })
	t.Run("Conversations", func(t *testing.T) { RunConversations(t, h) })
	t.Run("Runtime", func(t *testing.T) { RunRuntime(t, h) })
	t.Run("AgentSessions", func(t *testing.T) { RunAgentSessions(t, h) })
	t.Run("AgentBranches", func(t *testing.T) { RunAgentBranches(t, h) })
	t.Run("ConversationBranches", func(t *testing.T) { RunConversationBranches(t, h) })
	t.Run("Store", func(t *testing.T) { RunStore(t, h) })
	t.Run("RestoreRecords", func(t *testing.T) { RunRestoreRecords(t, h) })
	t.Run("Feed", func(t *testing.T) { RunFeed(t, h) })
	t.Run("Spend", func(t *testing.T) { RunSpend(t, h) })
	t.Run("Audit", func(t *testing.T) { RunAudit(t, h) })
	t.Run("UseRecords", func(t *testing.T) { RunUseRecords(t, h) })
	t.Run("Totals", func(t *testing.T) { RunTotals(t, h) })
	t.Run("AuditCounts", func(t *testing.T) { RunAuditCounts(t, h) })
	t.Run("Counts", func(t *testing.T) { RunCounts(t, h) })
	t.Run("Retention", func(t *testing.T) { RunRetention(t, h) })
	t.Run("Search", func(t *testing.T) { RunSearch(t, h) })
	t.Run("Encryption", func(t *testing.T) { RunEncryption(t, h) })
	t.Run("Tenants", func(t *testing.T) { RunTenants(t, h) })
}

// Clock is a manual clock for tests: time moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock set to a fixed, millisecond-aligned instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (which may be negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one test's fresh database, clock and store.
type env struct {
	t     *testing.T
	h     Harness
	loc   string
	clock *Clock
	st    store.Store
	ctx   context.Context
	// ids prefixes the global ids (runtime sessions, conversations) the
	// counts fixture writes, so that it can be written in several tenants
	// of one store ("" otherwise).
	ids string
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	e := &env{t: t, h: h, loc: h.NewLocation(t), clock: NewClock(), ctx: context.Background()}
	e.st = e.open()
	return e
}

// open opens another store on the env's database, closed at test end.
func (e *env) open() store.Store {
	e.t.Helper()
	st, err := e.h.Open(e.ctx, e.loc, e.clock.Now)
	if err != nil {
		e.t.Fatalf("open store: %v", err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// openWith opens another store on the env's database with opts, closed at
// test end.
func (e *env) openWith(opts Options) store.Store {
	e.t.Helper()
	if e.h.OpenWith == nil {
		e.t.Fatal("storetest: the harness has no OpenWith; this test needs store settings")
	}
	st, err := e.h.OpenWith(e.ctx, e.loc, e.clock.Now, opts)
	if err != nil {
		e.t.Fatalf("open store with %+v: %v", opts, err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// reopen closes the env's store and opens it again.
func (e *env) reopen() {
	e.t.Helper()
	if err := e.st.Close(); err != nil {
		e.t.Fatalf("close store: %v", err)
	}
	e.st = e.open()
}
