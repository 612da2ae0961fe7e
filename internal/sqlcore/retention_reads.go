package sqlcore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// readsCacheTTL is how long a Store trusts what it read of the policies
// that let reads count: a policy set by another process applies to this
// one's reads within that time (SetPolicy in this process applies at once).
const readsCacheTTL = 5 * time.Second

// readsCache remembers which idle policies have ReadsCount set. Reads
// check it without a lock; one reader at a time refreshes it when stale.
type readsCache struct {
	cur atomic.Pointer[readsState]
	mu  sync.Mutex // held by the refresher
}

// readsState is one reading of the policies.
type readsState struct {
	loaded time.Time // wall clock
	conv   bool
	agent  bool
}

func (c *readsCache) invalidate() { c.cur.Store(nil) }

// readsCount reports whether reads of facet's sessions count (a
// conversations_idle or agent_sessions_idle policy with ReadsCount).
func (s *Store) readsCount(ctx context.Context, facet string) bool {
	c := s.reads
	st := c.cur.Load()
	if st == nil || time.Since(st.loaded) > readsCacheTTL {
		c.mu.Lock()
		if st = c.cur.Load(); st == nil || time.Since(st.loaded) > readsCacheTTL {
			var rows []policyRow
			if err := s.selectRows(ctx, &rows, policySelectSQL); err != nil {
				c.mu.Unlock()
				return false // a read does not fail on its bookkeeping
			}
			st = &readsState{loaded: time.Now()}
			for _, p := range orderPolicies(rows) {
				st.conv = st.conv || (p.Kind == store.PolicyConversationsIdle && p.ReadsCount)
				st.agent = st.agent || (p.Kind == store.PolicyAgentSessionsIdle && p.ReadsCount)
			}
			c.cur.Store(st)
		}
		c.mu.Unlock()
	}
	if facet == store.HoldConversations {
		return st.conv
	}
	return st.agent
}

// recordRead moves the last-access time of the session a read returned,
// when a policy lets reads count (never its update time). It costs a
// write transaction per read, only then. A failure is logged, not
// returned: the read itself succeeded. Reads inside a snapshot, and on a
// read-only store, are not recorded.
func (s *Store) recordRead(ctx context.Context, ref store.SessionRef) {
	if !s.readsCount(ctx, ref.Facet) {
		return
	}
	err := s.Retention().Accessed(ctx, ref)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrSnapshotWrite),
		errors.Is(err, store.ErrReadOnly), errors.Is(err, store.ErrStoreClosed), ctx.Err() != nil:
	default:
		s.log.Warn("retention: could not record a read", "facet", ref.Facet, "err", err)
	}
}
