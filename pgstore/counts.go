package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

var _ store.Counter = (*Store)(nil)

// Counts returns how many items every facet holds, counted by the
// database in one read transaction (see store.Counter).
func (s *Store) Counts(ctx context.Context) (store.Counts, error) {
	if s.closed.Load() {
		return store.Counts{}, store.ErrStoreClosed
	}
	return s.core.Counts(ctx)
}
