package store

import (
	"context"
	"time"
)

// AuditCounter is implemented by the Audit facets of the backends
// (sqlstore and pgstore): a grouped count of the audit trail's decisions,
// computed by the database, for inspection tools (the web console's
// overview and its /metrics). It is kept out of the Audit interface so that
// other implementations need not provide it.
type AuditCounter interface {
	// DecisionCounts counts the audit events made at or after since (zero
	// means all of them) by UTC day, kind and outcome, in day, kind, then
	// outcome order. Every allowed and every refused decision is one
	// event, whatever its agent or session.
	DecisionCounts(ctx context.Context, since time.Time) ([]AuditDayCount, error)
}

// AuditDayCount is the number of audit events of one kind and outcome on
// one UTC day.
type AuditDayCount struct {
	Day     time.Time `json:"day"` // midnight UTC
	Kind    AuditKind `json:"kind"`
	Outcome string    `json:"outcome"`
	Count   int64     `json:"count"`
}
