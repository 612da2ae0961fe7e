package sqlcore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// readsCacheTTL is how long a Store trusts what it read of the policies
// that let reads count: a policy set by another process applies to this
// one's reads within that time (SetPolicy in this process applies at once).
const readsCacheTTL = 5 * time.Second

// readsCache remembers which idle policies have ReadsCount set.
type readsCache struct {
	mu     sync.Mutex
	loaded time.Time // wall clock; zero: not loaded
	conv   bool
	agent  bool
}

func (c *readsCache) invalidate() {
	c.mu.Lock()
	c.loaded = time.Time{}
	c.mu.Unlock()
}

// readsCount reports whether reads of facet's sessions count (a
// conversations_idle or agent_sessions_idle policy with ReadsCount).
func (s *Store) readsCount(ctx context.Context, facet string) bool {
	c := &s.reads
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded.IsZero() || time.Since(c.loaded) > readsCacheTTL {
		var rows []policyRow
		if err := s.selectRows(ctx, &rows, policySelectSQL); err != nil {
			return false // a read does not fail on its bookkeeping
		}
		c.conv, c.agent = false, false
		for _, p := range orderPolicies(rows) {
			c.conv = c.conv || (p.Kind == store.PolicyConversationsIdle && p.ReadsCount)
			c.agent = c.agent || (p.Kind == store.PolicyAgentSessionsIdle && p.ReadsCount)
		}
		c.loaded = time.Now()
	}
	if facet == store.HoldConversations {
		return c.conv
	}
	return c.agent
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
