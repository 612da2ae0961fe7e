package sqlstore

import (
	"context"

	"github.com/agentstore/sessionstore/store"
)

var _ store.UseRecorder = (*Governance)(nil)

// UseRecords returns a page of the session's use records (see
// store.UseRecorder).
func (g *Governance) UseRecords(ctx context.Context, req store.UseRecordsRequest) (store.Page[store.UseRecord], error) {
	if g.s.closed.Load() {
		return store.Page[store.UseRecord]{}, store.ErrStoreClosed
	}
	return g.s.core.UseRecords(ctx, req)
}
