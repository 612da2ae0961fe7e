package sqlstore

import (
	"slices"
	"sync"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// govCache keeps the immutable part of recently used governed sessions
// (agent, allow-lists, limits, times), so that the hot Use statement only
// has to return the counters. Decisions never depend on it: every check
// runs in SQL against the stored row. An entry is trusted only while its
// creation time matches the row's, so an id deleted and created again (by
// any process) is re-read.
type govCache struct {
	mu  sync.Mutex
	m   map[string]store.Session
	max int
}

func newGovCache(max int) *govCache {
	return &govCache{m: make(map[string]store.Session), max: max}
}

// get returns a private copy of the cached session for id.
func (c *govCache) get(id string, createdAtMS int64) (store.Session, bool) {
	c.mu.Lock()
	s, ok := c.m[id]
	c.mu.Unlock()
	if !ok || rowcodec.ToMillis(s.CreatedAt) != createdAtMS {
		return store.Session{}, false
	}
	s.DelegationChain = slices.Clone(s.DelegationChain)
	s.AuthorizedTools = slices.Clone(s.AuthorizedTools)
	s.AuthorizedCredentials = slices.Clone(s.AuthorizedCredentials)
	return s, true
}

// put remembers s; when full, an arbitrary entry makes room.
func (c *govCache) put(s store.Session) {
	s.DelegationChain = slices.Clone(s.DelegationChain)
	s.AuthorizedTools = slices.Clone(s.AuthorizedTools)
	s.AuthorizedCredentials = slices.Clone(s.AuthorizedCredentials)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[s.ID]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[s.ID] = s
}
