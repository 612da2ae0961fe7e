package sqlstore

import (
	"context"
	"time"

	"github.com/agentstore/sessionstore/store"
)

var _ store.UseRecorder = (*Governance)(nil)

// UseRecords returns a page of the session's use records (see
// store.UseRecorder).
func (g *Governance) UseRecords(ctx context.Context, req store.UseRecordsRequest) (store.Page[store.UseRecord], error) {
	if g.s.closed.Load() {
		return store.Page[store.UseRecord]{}, store.ErrStoreClosed
	}
	return g.core.UseRecords(ctx, req)
}

// RecentRefusals returns the latest refused use records of every session
// (see store.UseRecorder).
func (g *Governance) RecentRefusals(ctx context.Context, limit int) ([]store.UseRecord, error) {
	if g.s.closed.Load() {
		return nil, store.ErrStoreClosed
	}
	return g.core.RecentRefusals(ctx, limit)
}

// UseOutcomes counts use records by outcome and UTC day (see
// store.UseRecorder).
func (g *Governance) UseOutcomes(ctx context.Context, since time.Time) ([]store.UseOutcomeCount, error) {
	if g.s.closed.Load() {
		return nil, store.ErrStoreClosed
	}
	return g.core.UseOutcomes(ctx, since)
}
