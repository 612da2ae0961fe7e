package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Export and restore of spend state exactly as stored (see
// store.Spend.Export and Restore): sessionctl's export and import.

const (
	spendAllLimitsSQL     = `SELECT ` + limitColumns + ` FROM spend_limits WHERE tenant = ? ORDER BY id`
	spendAllResSQL        = `SELECT ` + resColumns + ` FROM spend_reservations WHERE tenant = ? ORDER BY session_id, request_id`
	spendSessionLimitsSQL = `SELECT ` + limitColumns + ` FROM spend_limits WHERE session_id = ? AND tenant = ? ORDER BY id`
	spendSessionResSQL    = `SELECT ` + resColumns + ` FROM spend_reservations WHERE session_id = ? AND tenant = ? ORDER BY request_id`
	// spendLimitExistsSQL: a limit id is global (a random id); the owner's
	// metric and window are the tenant's (?9).
	spendLimitExistsSQL = `SELECT count(*) FROM spend_limits WHERE id = ?
		OR (session_id IS NULL AND CAST(? AS TEXT) = '' AND agent_id = ? AND metric = ? AND period = ? AND tenant = ?)
		OR (session_id = ? AND metric = ? AND period = ?)`
	spendResExistsSQL  = `SELECT count(*) FROM spend_reservations WHERE session_id = ? AND request_id = ?`
	spendSessionExists = `SELECT count(*) FROM governed_sessions WHERE id = ? AND tenant = ?`
)

func (l *limitRow) record() store.SpendLimitRecord {
	return store.SpendLimitRecord{ID: l.ID, AgentID: l.AgentID, SessionID: l.SessionID, Position: l.Ord, SpendLimit: l.limit(),
		WindowStart: rowcodec.FromMillis(l.WindowStartMS), Spent: l.Spent, Reserved: l.Reserved}
}

func (r *resRow) record() (store.ReservationRecord, error) {
	hs, err := r.holds()
	if err != nil {
		return store.ReservationRecord{}, err
	}
	out := store.ReservationRecord{Reservation: r.reservation(), Holds: []store.SpendHold{}}
	for _, h := range hs {
		out.Holds = append(out.Holds, store.SpendHold{LimitID: h.L, WindowStart: rowcodec.FromMillis(h.W)})
	}
	if r.Status == string(store.ReservationRefused) {
		out.Refusal = json.RawMessage(r.Detail)
	}
	return out, nil
}

// Export returns spend state as stored (see store.Spend.Export).
func (sp *SpendFacet) Export(ctx context.Context, sessionIDs []string) (store.SpendRecords, error) {
	out := store.SpendRecords{Limits: []store.SpendLimitRecord{}, Reservations: []store.ReservationRecord{}}
	err := sp.ExportEach(ctx, sessionIDs,
		func(l store.SpendLimitRecord) error { out.Limits = append(out.Limits, l); return nil },
		func(r store.ReservationRecord) error { out.Reservations = append(out.Reservations, r); return nil })
	if err != nil {
		return store.SpendRecords{}, err
	}
	return out, nil
}

// ExportEach streams spend state as stored, row by row from one read
// snapshot (see store.Spend.ExportEach).
func (sp *SpendFacet) ExportEach(ctx context.Context, sessionIDs []string,
	limit func(store.SpendLimitRecord) error, reservation func(store.ReservationRecord) error) error {
	if limit == nil || reservation == nil {
		return store.Invalid("callback", "must not be nil")
	}
	for _, id := range sessionIDs {
		if err := store.ValidateID("session_id", id); err != nil {
			return err
		}
	}
	eachLimit := func(tx Tx, query string, args ...any) error {
		return tx.Query(query, args, func(r Rows) error {
			l, err := scanLimit(r)
			if err != nil {
				return err
			}
			return limit(l.record())
		})
	}
	eachRes := func(tx Tx, query string, args ...any) error {
		return tx.Query(query, args, func(r Rows) error {
			row, err := scanRes(r)
			if err != nil {
				return err
			}
			rec, err := row.record()
			if err != nil {
				return err
			}
			return reservation(rec)
		})
	}
	return sp.s.readTx(ctx, func(tx Tx) error {
		if sessionIDs == nil {
			if err := eachLimit(tx, spendAllLimitsSQL, sp.s.tenant); err != nil {
				return err
			}
			return eachRes(tx, spendAllResSQL, sp.s.tenant)
		}
		// The limits of the given sessions and, once each, of their
		// agents; then their reservations.
		agents := map[string]bool{}
		for _, id := range sessionIDs {
			var agent string
			if err := tx.Get(&agent, spendSessionAgent, id, sp.s.tenant); err == nil && !agents[agent] {
				agents[agent] = true
				if err := eachLimit(tx, spendAgentLimitsSQL, agent, sp.s.tenant); err != nil {
					return err
				}
			} else if err != nil && !isNoRows(err) {
				return err
			}
			if err := eachLimit(tx, spendSessionLimitsSQL, id, sp.s.tenant); err != nil {
				return err
			}
		}
		for _, id := range sessionIDs {
			if err := eachRes(tx, spendSessionResSQL, id, sp.s.tenant); err != nil {
				return err
			}
		}
		return nil
	})
}

// Restore inserts exported spend state (see store.Spend.Restore).
func (sp *SpendFacet) Restore(ctx context.Context, req store.SpendRestoreRequest) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	var n int64
	err := sp.s.write(ctx, func(tx Tx) error {
		n = 0
		for _, l := range req.Records.Limits {
			ok, err := putSpendLimit(tx, sp.s.tenant, l)
			if err != nil {
				return err
			}
			if !ok && !req.SkipExisting {
				return &store.ConflictError{Resource: "spend limit", ID: l.ID, Reason: "exists"}
			}
			if ok {
				n++
			}
		}
		for _, r := range req.Records.Reservations {
			ok, err := putReservation(tx, sp.s.tenant, r)
			if err != nil {
				return err
			}
			if !ok && !req.SkipExisting {
				return &store.ConflictError{Resource: "reservation", ID: r.ID, Reason: "exists"}
			}
			if ok {
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// PutSpendLimit writes one exported spend limit (see
// store.RecordWriter.PutSpendLimit).
func (w *recordWriter) PutSpendLimit(l store.SpendLimitRecord) (bool, error) {
	req := store.SpendRestoreRequest{Records: store.SpendRecords{Limits: []store.SpendLimitRecord{l}}}
	if err := req.Validate(); err != nil {
		return false, err
	}
	return putSpendLimit(w.tx, w.s.tenant, l)
}

// PutReservation writes one exported reservation (see
// store.RecordWriter.PutReservation).
func (w *recordWriter) PutReservation(r store.ReservationRecord) (bool, error) {
	req := store.SpendRestoreRequest{Records: store.SpendRecords{Reservations: []store.ReservationRecord{r}}}
	if err := req.Validate(); err != nil {
		return false, err
	}
	return putReservation(w.tx, w.s.tenant, r)
}

// spendSessionMustExist fails with a NotFoundError when no governed
// session of tenant has the id.
func spendSessionMustExist(tx Tx, tenant, id string) error {
	var c int64
	if err := tx.Get(&c, spendSessionExists, id, tenant); err != nil {
		return err
	}
	if c == 0 {
		return &store.NotFoundError{Resource: "session", ID: id}
	}
	return nil
}

// putSpendLimit inserts a validated limit record as stored, or returns
// false, writing nothing, when its id or its owner's metric and window
// exist. The limit is written as tenant's.
func putSpendLimit(tx Tx, tenant string, l store.SpendLimitRecord) (bool, error) {
	if l.SessionID != "" {
		if err := spendSessionMustExist(tx, tenant, l.SessionID); err != nil {
			return false, err
		}
	}
	var c int64
	if err := tx.Get(&c, spendLimitExistsSQL, l.ID, l.SessionID, l.AgentID, string(l.Metric), string(l.Window), tenant,
		l.SessionID, string(l.Metric), string(l.Window)); err != nil {
		return false, err
	}
	if c > 0 {
		return false, nil
	}
	var session any
	if l.SessionID != "" {
		session = l.SessionID
	}
	if _, err := tx.Exec(spendPutLimitSQL, l.ID, l.AgentID, session, l.Position, string(l.Metric), string(l.Window),
		l.Limit, l.Currency, rowcodec.ToMillis(l.WindowStart), l.Spent, l.Reserved, tenant); err != nil {
		return false, err
	}
	return true, nil
}

// putReservation inserts a validated reservation record as stored, or
// returns false, writing nothing, when its session has a reservation of
// that request id. The reservation is written as tenant's.
func putReservation(tx Tx, tenant string, r store.ReservationRecord) (bool, error) {
	if err := spendSessionMustExist(tx, tenant, r.SessionID); err != nil {
		return false, err
	}
	var c int64
	if err := tx.Get(&c, spendResExistsSQL, r.SessionID, r.ID); err != nil {
		return false, err
	}
	if c > 0 {
		return false, nil
	}
	hs := make([]hold, len(r.Holds))
	for i, h := range r.Holds {
		hs[i] = hold{L: h.LimitID, W: rowcodec.ToMillis(h.WindowStart)}
	}
	holds, err := json.Marshal(hs)
	if err != nil {
		return false, err
	}
	detail := "{}"
	if len(r.Refusal) > 0 {
		detail = string(r.Refusal)
	}
	row := resRow{SessionID: r.SessionID, RequestID: r.ID, AgentID: r.AgentID, Status: string(r.Status),
		InputTokens: r.Amount.InputTokens, OutputTokens: r.Amount.OutputTokens, Cost: r.Amount.CostMicros,
		Currency: r.Currency, ActualInput: r.Actual.InputTokens, ActualOutput: r.Actual.OutputTokens,
		ActualCost: r.Actual.CostMicros, Holds: string(holds), Detail: detail,
		CreatedAtMS: rowcodec.ToMillis(r.CreatedAt), ExpiresAtMS: rowcodec.ToMillis(r.ExpiresAt)}
	if !r.ClosedAt.IsZero() {
		row.ClosedAtMS = rowcodec.ToMillis(r.ClosedAt)
	}
	if err := row.put(tx, tenant); err != nil {
		return false, err
	}
	return true, nil
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
