package sqlstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

var _ store.Totaler = (*Store)(nil)

// Totals returns store-wide aggregates of governed sessions and
// conversations, computed by the database (see store.Totaler).
func (s *Store) Totals(ctx context.Context, req store.TotalsRequest) (store.Totals, error) {
	if s.closed.Load() {
		return store.Totals{}, store.ErrStoreClosed
	}
	return s.core.Totals(ctx, req)
}
