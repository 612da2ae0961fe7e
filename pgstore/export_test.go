package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Test-only access to internals, for the tests in package pgstore_test.

// UseBatchStats returns how many transactions decided more than one
// governed Use call, and how many calls they decided.
func (s *Store) UseBatchStats() (transactions, calls int64) {
	return s.uses.shared.Load(), s.uses.sharedCalls.Load()
}

// UseBatchMixed returns how many of those transactions decided calls of
// more than one session, and how many calls were taken out of their batch
// (their session's row held by another transaction, or their batch rolled
// back) and decided alone.
func (s *Store) UseBatchMixed() (mixed, apart int64) {
	return s.uses.mixed.Load(), s.uses.apart.Load()
}

// Rebind is rebind: a statement of package sqlcore with PostgreSQL's
// placeholders, for EXPLAIN in tests.
func Rebind(query string) string { return rebind(query) }

// DirectUses is directUses, exported for tests.
const DirectUses = directUses

// UseDirect returns how many governed Use calls were decided at once,
// without queueing, as few calls of their tenant were in flight.
func (s *Store) UseDirect() int64 { return s.uses.direct.Load() }

// SetUseDirectHook sets a function that runs before each call decided
// without queueing, with its session id (nil: none). Set it before any Use.
func (s *Store) SetUseDirectHook(fn func(sessionID string)) { s.uses.directHook = fn }

// HoldUseTurn takes the leader's turn of the default tenant's queue, as a
// batch running its statements holds it, until the returned function is
// called.
func (s *Store) HoldUseTurn() (release func()) {
	b := &s.uses
	b.mu.Lock()
	if b.queues == nil {
		b.queues = make(map[string]*useQueue)
	}
	q := b.queues[""]
	if q == nil {
		q = &useQueue{}
		b.queues[""] = q
	}
	q.pins++
	b.mu.Unlock()
	q.acquireTurn()
	return func() {
		q.releaseTurn()
		b.mu.Lock()
		if q.pins--; q.pins == 0 && q.users == 0 {
			delete(b.queues, "")
		}
		b.mu.Unlock()
	}
}

// DecideUseBatch decides reqs as one batch of concurrent governed Use
// calls (of the default tenant), as a leader does with what it took from
// the queue, and returns each call's session and error.
func (s *Store) DecideUseBatch(ctx context.Context, reqs []store.UseRequest) ([]store.Session, []error) {
	return DecideUseBatchOf(ctx, &Governance{s: s, core: s.core}, reqs)
}

// DecideUseBatchOf is DecideUseBatch on a governance facet of a store (a
// tenant handle's, for its tenant's sessions).
func DecideUseBatchOf(ctx context.Context, gov store.Governance, reqs []store.UseRequest) ([]store.Session, []error) {
	return decideUseBatch(ctx, gov.(*Governance), reqs, false)
}

// DecideUseBatchAfterCommit is DecideUseBatch as the batch that follows
// one holding every session of reqs while it commits (a COMMIT already
// answered): the batch locks their rows waiting for that COMMIT
// (useQueue.committing), as the next batch of one session's callers does.
func (s *Store) DecideUseBatchAfterCommit(ctx context.Context, reqs []store.UseRequest) ([]store.Session, []error) {
	return decideUseBatch(ctx, &Governance{s: s, core: s.core}, reqs, true)
}

func decideUseBatch(ctx context.Context, g *Governance, reqs []store.UseRequest, afterCommit bool) ([]store.Session, []error) {
	batch := make([]*useCall, len(reqs))
	q := &useQueue{}
	if afterCommit {
		done := make(chan struct{})
		close(done)
		q.committing = make(map[string]chan struct{})
		for _, req := range reqs {
			q.committing[req.SessionID] = done
		}
	}
	for i, req := range reqs {
		batch[i] = newUseCall(ctx, req, nonNil(req.Tools))
		batch[i].state.Store(callTaken)
	}
	g.runUses(q, slices.Clone(batch), func() {})
	for _, c := range batch {
		<-c.wake
	}
	sessions, errs := make([]store.Session, len(reqs)), make([]error, len(reqs))
	for i, c := range batch {
		sessions[i], errs[i] = c.v.sess, c.err
		if c.err == nil && c.v.refusal != nil {
			errs[i] = c.v.refusal
		}
	}
	return sessions, errs
}

// UseEvent is one step of the calls of side queues (see SetUseTrace).
type UseEvent = useEvent

// SetUseTrace sets a function told where the calls of side queues go:
// each call moved to a side queue, each side batch that waits for its
// row, each committed batch (shared or side) and each session given back
// to its tenant's queue (nil: none). Set it before any Use.
func (s *Store) SetUseTrace(fn func(UseEvent)) { s.uses.trace = fn }

// UseBusy returns how many batches were rolled back and rerun because
// their lock-first step found a row held by another transaction.
func (s *Store) UseBusy() int64 { return s.uses.busy.Load() }

// UseWary returns how many batches went without the lock-first step,
// found a row held by another transaction, and were rerun with the step.
func (s *Store) UseWary() int64 { return s.uses.wary.Load() }

// UseQueued returns how many calls wait in the default tenant's queue.
func (s *Store) UseQueued() int {
	b := &s.uses
	b.mu.Lock()
	q := b.queues[""]
	b.mu.Unlock()
	if q == nil {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.calls)
}

// Execer runs a statement (a batch's connection, inside its transaction).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// SetUseBatchHook sets a function that runs in each batch's transaction
// of governed Use calls after its decisions, before the COMMIT (nil: none).
// Set it before any Use.
func (s *Store) SetUseBatchHook(fn func(ctx context.Context, tx Execer) error) {
	s.uses.hook = func(ctx context.Context, q querier) error { return fn(ctx, q) }
}

// BypassesRLS reports what the store found at open: whether its
// connections' role bypasses row-level security (tenant.go).
func (s *Store) BypassesRLS() bool { return s.rlsBypassFound }

// WithoutIndexer is WithBackgroundIndexer(false).
func WithoutIndexer() Option { return WithBackgroundIndexer(false) }

// SyncCommitSeen returns synchronous_commit as a write transaction of the
// store sees it: a lazy one (sqlcore.LazyWriter) or not.
func (s *Store) SyncCommitSeen(ctx context.Context, lazy bool) (string, error) {
	var v string
	fn := func(tx sqlcore.Tx) error { return tx.Scan(`SHOW synchronous_commit`, nil, &v) }
	if lazy {
		return v, coreDB{s}.WriteLazy(ctx, fn)
	}
	return v, coreDB{s}.Write(ctx, fn)
}

// UseHeldFor is useHeldFor, exported for tests.
const UseHeldFor = useHeldFor

// WithEagerSearch opens a store whose Search reads every candidate of the
// index before it chooses a page (sqlcore.Config.EagerSearch): the
// reference of the tests of the search that stops early.
func WithEagerSearch() Option {
	return func(c *config) { c.eagerSearch = true }
}

// WithLargeSearchMin opens a store whose Search stops early from n
// candidates of the index (sqlcore.Config.LargeSearchMin), so that a
// small store's tests take that path.
func WithLargeSearchMin(n int) Option {
	return func(c *config) { c.largeSearchMin = n }
}

// WithSearchExplain opens a store whose Search gives fn the plan
// (EXPLAIN (FORMAT JSON), in the search's own transaction, with the same
// arguments) of each statement it runs on search_docs, before it runs it
// (sqlcore.Config.SearchTrace); an error from fn fails the search before
// the statement runs.
func WithSearchExplain(fn func(query string, plan []byte) error) Option {
	return func(c *config) {
		c.searchTrace = func(tx sqlcore.Tx, query string, args []any) error {
			var plan string
			if err := tx.Scan(`EXPLAIN (FORMAT JSON) `+query, args, &plan); err != nil {
				return err
			}
			return fn(query, []byte(plan))
		}
	}
}

// GovColumns is govColumns, for tests.
const GovColumns = govColumns

// GovRowDecodings decodes the current row of rows, a row of govColumns,
// with govRowRaw and with govRowScan, and returns both as sessions (raw
// is meaningful only when rawOK), with the rows as decoded (govRow
// values, to compare field by field).
func GovRowDecodings(rows pgx.Rows) (raw, scanned store.Session, rawRow, scannedRow any, rawOK bool, err error) {
	r, rawOK := govRowRaw(rows.FieldDescriptions(), rows.RawValues())
	s, err := govRowScan(rows)
	return r.session(), s.session(), r, s, rawOK, err
}

// FlushedResults is what SendFlushed returns (pipeline_flush.go).
type FlushedResults = pipelineResults

// SendFlushed sends b as a store on a pool in pgx's default exec mode
// sends a batch that ends with its COMMIT: one Sync, and a Flush message
// before b's last statement (pipeline_flush.go).
func SendFlushed(ctx context.Context, conn *pgx.Conn, b *pgx.Batch, tracer pgx.BatchTracer) (FlushedResults, error) {
	return flushPlan{on: true, tracer: tracer}.sendFlushed(ctx, conn, b)
}

// UseManyFirstSQL is the statement for many calls of a batch without the
// lock-first step (govUseManyFirstSQL).
var UseManyFirstSQL = govUseManyFirstSQL
