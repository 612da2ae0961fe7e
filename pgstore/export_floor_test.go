package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

// DecideUseBatchAfter is DecideUseBatch for a batch whose sessions' rows
// the previous batch of its queue holds while it commits, as the batches
// of many callers on one session run: each locks its session's row
// waiting for that COMMIT (useLockAfterSQL) before the lock-first step.
// Here that COMMIT is already done, so nothing waits. The floor of
// BenchmarkGovernedConcurrency records what such a batch sends.
func (s *Store) DecideUseBatchAfter(ctx context.Context, reqs []store.UseRequest) ([]store.Session, []error) {
	done := make(chan struct{})
	close(done)
	q := &useQueue{token: make(chan struct{}, useLeaders), committing: make(map[string]chan struct{})}
	for _, r := range reqs {
		q.committing[r.SessionID] = done
	}
	return decideUseBatchIn(ctx, &Governance{s: s, core: s.core}, q, reqs)
}
