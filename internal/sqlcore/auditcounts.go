package sqlcore

import (
	"context"
	"strconv"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// auditCountsSQL groups the audit events by UTC day (whole days since the
// Unix epoch, by integer division of the stored UTC microseconds: no time
// zone of the database session takes part), kind and outcome. The index
// audit_events_at (at_us, kind, outcome) covers it: the range is one index
// scan, without reading the events' rows (on SQLite the index holds the
// primary key, tenant first, so the tenant's filter is covered too).
// Only the store's tenant's events are counted.
var auditCountsSQL = `SELECT at_us / ` + strconv.FormatInt(usPerDay, 10) + ` AS day, kind, outcome, count(*) FROM audit_events
	WHERE tenant = ?`

// usPerDay is one UTC day in microseconds.
const usPerDay int64 = 86_400_000_000

// DecisionCounts counts the audit events by UTC day, kind and outcome
// (see store.AuditCounter).
func (a *AuditFacet) DecisionCounts(ctx context.Context, since time.Time) ([]store.AuditDayCount, error) {
	query := auditCountsSQL
	args := []any{a.s.tenant}
	if !since.IsZero() {
		query += ` AND at_us >= ?`
		args = append(args, rowcodec.ToMicros(since))
	}
	query += ` GROUP BY day, kind, outcome ORDER BY day, kind, outcome`
	out := []store.AuditDayCount{}
	err := a.s.db.Query(ctx, query, args, func(r Rows) error {
		var c store.AuditDayCount
		var day int64
		var kind string
		if err := r.Scan(&day, &kind, &c.Outcome, &c.Count); err != nil {
			return err
		}
		c.Day, c.Kind = rowcodec.FromMicros(day*usPerDay), store.AuditKind(kind)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
