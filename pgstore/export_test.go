package pgstore

import (
	"context"
	"slices"

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
// more than one session, and how many batches were rerun with their rows
// locked first.
func (s *Store) UseBatchMixed() (mixed, relocked int64) {
	return s.uses.mixed.Load(), s.uses.relocked.Load()
}

// DecideUseBatch decides reqs as one batch of concurrent governed Use
// calls (of the default tenant), as a leader does with what it took from
// the queue, and returns each call's session and error.
func (s *Store) DecideUseBatch(ctx context.Context, reqs []store.UseRequest) ([]store.Session, []error) {
	g := &Governance{s: s, core: s.core}
	batch := make([]*useCall, len(reqs))
	for i, req := range reqs {
		batch[i] = &useCall{ctx: ctx, req: req, tools: nonNil(req.Tools), done: make(chan struct{})}
		batch[i].state.Store(callTaken)
	}
	g.runUses(slices.Clone(batch), func() {})
	sessions, errs := make([]store.Session, len(reqs)), make([]error, len(reqs))
	for i, c := range batch {
		sessions[i], errs[i] = c.v.sess, c.err
		if c.err == nil && c.v.refusal != nil {
			errs[i] = c.v.refusal
		}
	}
	return sessions, errs
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
