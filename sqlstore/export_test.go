package sqlstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// Test-only access to internals, for the reliability tests in package
// sqlstore_test. Nothing here is part of the package API.

// WithFaults installs a fault hook on the writer: f is called with every
// statement the writer is about to run inside a write transaction (BEGIN
// IMMEDIATE, SAVEPOINT, the statements of each request, RELEASE, COMMIT);
// a non-nil error is returned in place of running the statement. ROLLBACK
// is never hooked. f runs on the goroutine of the leader running the batch.
func WithFaults(f func(query string) error) Option {
	return func(c *config) { c.faults = f }
}

// WithGuardedBatches opens a store whose writer runs every batch with a
// savepoint per request from its first pass, where it otherwise runs them
// without and reruns a batch guarded only after a request failed: the
// fault sweeps fault each statement of both layouts.
func WithGuardedBatches() Option {
	return func(c *config) { c.guarded = true }
}

// WithoutAudit opens a store that appends no audit events: the baseline
// of the audit trail's benchmarks (storetest.Options.NoAudit).
func WithoutAudit() Option {
	return func(c *config) { c.auditOff = true }
}

// WithoutCheckpointer opens a store without its checkpointer (checkpoint.go):
// nothing restarts the log while a test counts the pages in it.
func WithoutCheckpointer() Option {
	return func(c *config) { c.noCheckpointer = true }
}

// BenchCPU exposes benchCPU (fold_cpu_bench_test.go): this process's CPU
// time so far, for the benchmarks of package sqlstore_test.
func BenchCPU() time.Duration { return benchCPU() }

// BenchWords exposes benchWords (fold_cpu_bench_test.go): ~1 KiB of a
// runner's reply drawn with rng.
func BenchWords(rng *rand.Rand) string { return benchWords(rng) }

// MapErr exposes mapErr, the one place SQLite errors become store errors.
func MapErr(err error) error { return mapErr(err) }

// SQLiteCode exposes sqliteCode (the primary result code, or 0).
func SQLiteCode(err error) int { return sqliteCode(err) }

// WriterExec runs query on the store's write connection inside a write
// transaction (for example PRAGMA max_page_count, a per-connection
// setting).
func (s *Store) WriterExec(ctx context.Context, query string, args ...any) error {
	return s.write(ctx, func(tx *wtx) error {
		_, err := tx.w.conn.ExecContext(tx.w.ctx, query, args...)
		return err
	})
}

// WriterQueryInt runs a one-value query on the write connection.
func (s *Store) WriterQueryInt(ctx context.Context, query string) (int64, error) {
	var v int64
	err := s.write(ctx, func(tx *wtx) error {
		return tx.w.conn.QueryRowContext(tx.w.ctx, query).Scan(&v)
	})
	return v, err
}

// PauseWriter occupies the writer with a request that blocks until the
// returned resume is called, so that requests queued meanwhile are
// committed together in the next batch. It returns once the writer is
// blocked. queued reports how many requests wait in the queue.
func (s *Store) PauseWriter(ctx context.Context) (queued func() int, resume func(), err error) {
	started := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(ctx, func(tx *wtx) error {
			select {
			case <-started:
			default:
				close(started)
			}
			<-release
			// The requests queued meanwhile commit in a transaction of
			// their own, not joined to this one.
			tx.w.noJoin = true
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-done:
		if err == nil {
			err = errors.New("pause request finished without blocking")
		}
		return nil, nil, err
	case <-time.After(30 * time.Second):
		return nil, nil, errors.New("writer did not start the pause request")
	}
	queued = func() int {
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		return len(s.w.queue)
	}
	resume = func() {
		close(release)
		<-done
	}
	return queued, resume, nil
}

// WithoutIndexer is WithBackgroundIndexer(false).
func WithoutIndexer() Option { return WithBackgroundIndexer(false) }

// WithIndexerHook sets the background indexer's interval and a function
// called after each of its rounds that folded something.
func WithIndexerHook(interval time.Duration, onFold func(n int64)) Option {
	return func(c *config) {
		c.indexer.Interval = interval
		c.indexer.OnFold = onFold
	}
}

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

// WithSearchTimeWalk opens a store whose Search newest first of a term in
// many documents always walks the index of documents by time (mode 1) or
// never (-1) (sqlcore.Config.SearchTimeWalk); 0 chooses by cost.
func WithSearchTimeWalk(mode int) Option {
	return func(c *config) { c.searchTimeWalk = mode }
}

// WithSearchTrace opens a store whose Search gives fn each statement it
// runs on the search index, with its arguments, before it runs it
// (sqlcore.Config.SearchTrace); an error from fn fails the search before
// the statement runs.
func WithSearchTrace(fn func(query string, args []any) error) Option {
	return func(c *config) {
		c.searchTrace = func(_ sqlcore.Tx, query string, args []any) error { return fn(query, args) }
	}
}
