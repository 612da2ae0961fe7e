package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Spend limits and reservations (see store.Spend), written once for every
// backend. Every decision is one write transaction on the rows of one
// agent: the session row, the limits of the session and of its agent, the
// agent's reservations and its audit chain. Where rows are locked one by
// one (PostgreSQL), a decision locks the lapsed reservations and their
// limits first, then the limits it checks, in id order; a deadlock that
// slips through is retried whole by the backend.

const (
	limitColumns = `id, agent_id, coalesce(session_id, '') AS session_id, ord, metric, period,
		amount, currency, window_start_ms, spent, reserved`
	// spendLimitsOfSQL reads the limits of a session and of its agent.
	spendLimitsOfSQL = `SELECT ` + limitColumns + ` FROM spend_limits
		WHERE ((agent_id = ? AND session_id IS NULL) OR session_id = ?) AND tenant = ? ORDER BY id`
	spendAgentLimitsSQL = `SELECT ` + limitColumns + ` FROM spend_limits
		WHERE agent_id = ? AND session_id IS NULL AND tenant = ? ORDER BY id`
	spendLimitsByIDSQL = `SELECT ` + limitColumns + ` FROM spend_limits WHERE `
	spendSetLimitSQL   = `UPDATE spend_limits SET window_start_ms = ?, spent = ?, reserved = ? WHERE id = ?`
	spendPutLimitSQL   = `INSERT INTO spend_limits
		(id, agent_id, session_id, ord, metric, period, amount, currency, window_start_ms, spent, reserved, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	spendChangeLimitSQL = `UPDATE spend_limits SET ord = ?, amount = ? WHERE id = ?`
	spendDropLimitSQL   = `DELETE FROM spend_limits WHERE id = ?`

	resColumns = `session_id, request_id, agent_id, status, input_tokens, output_tokens, cost, currency,
		actual_input_tokens, actual_output_tokens, actual_cost, holds, detail, created_at_ms, expires_at_ms, closed_at_ms`
	spendResGetSQL = `SELECT ` + resColumns + ` FROM spend_reservations WHERE session_id = ? AND request_id = ? AND tenant = ?`
	spendResPutSQL = `INSERT INTO spend_reservations (` + resColumns + `, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	spendResCloseSQL = `UPDATE spend_reservations SET status = ?, actual_input_tokens = ?, actual_output_tokens = ?,
		actual_cost = ?, closed_at_ms = ? WHERE session_id = ? AND request_id = ?`
	// spendLapsedSQL finds an agent's lapsed reservations on the partial
	// index of live ones.
	spendLapsedSQL = `SELECT ` + resColumns + ` FROM spend_reservations
		WHERE agent_id = ? AND status = 'reserved' AND expires_at_ms <= ? AND tenant = ?
		ORDER BY expires_at_ms, session_id, request_id LIMIT 1000`
	// spendLapsedAgentsSQL lists the agents with lapsed reservations.
	spendLapsedAgentsSQL = `SELECT DISTINCT agent_id FROM spend_reservations
		WHERE status = 'reserved' AND expires_at_ms <= ? AND tenant = ? ORDER BY agent_id LIMIT 1000`
	spendLiveSQL = `SELECT count(*) FROM spend_reservations
		WHERE session_id = ? AND status = 'reserved' AND expires_at_ms > ? AND tenant = ?`
	spendLiveAgentSQL = `SELECT count(*) FROM spend_reservations
		WHERE agent_id = ? AND status = 'reserved' AND expires_at_ms > ? AND tenant = ?`
	spendSessionSQL    = `SELECT agent_id, status, expires_at_ms FROM governed_sessions WHERE id = ? AND tenant = ?`
	spendMarkExpired   = `UPDATE governed_sessions SET status = 'expired' WHERE id = ? AND status = 'active' AND tenant = ?`
	spendSessionAgent  = `SELECT agent_id FROM governed_sessions WHERE id = ? AND tenant = ?`
	spendLapsedOfAgent = `SELECT ` + resColumns + ` FROM spend_reservations
		WHERE agent_id = ? AND status = 'reserved' AND expires_at_ms <= ? AND tenant = ?`
)

// spendStatements are the spend statements whose text depends on the
// dialect.
type spendStatements struct {
	session, limitsOf, agentLimits, resGet, lapsed string
	limitsByID                                     string
}

func newSpendStatements(d *Dialect) spendStatements {
	return spendStatements{
		session:     spendSessionSQL + d.ForUpdate,
		limitsOf:    spendLimitsOfSQL + d.ForUpdate,
		agentLimits: spendAgentLimitsSQL + d.ForUpdate,
		resGet:      spendResGetSQL + d.ForUpdate,
		lapsed:      spendLapsedSQL + d.ForUpdate,
		limitsByID:  spendLimitsByIDSQL + d.InList("id") + ` ORDER BY id` + d.ForUpdate,
	}
}

// limitRow is a spend_limits row.
type limitRow struct {
	ID            string `db:"id"`
	AgentID       string `db:"agent_id"`
	SessionID     string `db:"session_id"`
	Ord           int64  `db:"ord"`
	Metric        string `db:"metric"`
	Period        string `db:"period"`
	Amount        int64  `db:"amount"`
	Currency      string `db:"currency"`
	WindowStartMS int64  `db:"window_start_ms"`
	Spent         int64  `db:"spent"`
	Reserved      int64  `db:"reserved"`

	dirty bool
}

func (l *limitRow) scope() store.SpendScope {
	if l.SessionID == "" {
		return store.ScopeAgent
	}
	return store.ScopeSession
}

func (l *limitRow) limit() store.SpendLimit {
	return store.SpendLimit{Metric: store.SpendMetric(l.Metric), Window: store.SpendWindow(l.Period), Limit: l.Amount, Currency: l.Currency}
}

// roll moves the limit to the window that holds nowMS, with nothing spent
// or reserved in it, when its stored window ended. A stored window later
// than now (the clock moved back) stays current.
func (l *limitRow) roll(nowMS int64) {
	w := store.SpendWindow(l.Period)
	if w == store.WindowLifetime {
		return
	}
	start := rowcodec.ToMillis(w.Start(rowcodec.FromMillis(nowMS)))
	if l.WindowStartMS < start {
		l.WindowStartMS, l.Spent, l.Reserved, l.dirty = start, 0, 0, true
	}
}

// status is the limit as seen at nowMS, without the holds of lapsed
// reservations (lapsed).
func (l limitRow) status(nowMS int64, lapsed map[string]int64) store.LimitStatus {
	l.roll(nowMS)
	return store.LimitStatus{Scope: l.scope(), SpendLimit: l.limit(), WindowStart: rowcodec.FromMillis(l.WindowStartMS),
		Spent: l.Spent, Reserved: max(0, l.Reserved-lapsed[l.ID])}
}

func scanLimits(tx Tx, query string, args ...any) ([]*limitRow, error) {
	var out []*limitRow
	err := tx.Query(query, args, func(r Rows) error {
		l, err := scanLimit(r)
		if err != nil {
			return err
		}
		out = append(out, l)
		return nil
	})
	return out, err
}

// scanLimit scans a row of limitColumns.
func scanLimit(r Rows) (*limitRow, error) {
	l := &limitRow{}
	err := r.Scan(&l.ID, &l.AgentID, &l.SessionID, &l.Ord, &l.Metric, &l.Period, &l.Amount, &l.Currency,
		&l.WindowStartMS, &l.Spent, &l.Reserved)
	return l, err
}

// scanRes scans a row of resColumns.
func scanRes(r Rows) (*resRow, error) {
	x := &resRow{}
	err := r.Scan(&x.SessionID, &x.RequestID, &x.AgentID, &x.Status, &x.InputTokens, &x.OutputTokens, &x.Cost, &x.Currency,
		&x.ActualInput, &x.ActualOutput, &x.ActualCost, &x.Holds, &x.Detail, &x.CreatedAtMS, &x.ExpiresAtMS, &x.ClosedAtMS)
	return x, err
}

// checkOrder sorts limits in the order a reservation is checked against
// them: the session's before the agent's, each in the order they were set.
func checkOrder(limits []*limitRow) []*limitRow {
	out := slices.Clone(limits)
	slices.SortStableFunc(out, func(a, b *limitRow) int {
		if as, bs := a.SessionID != "", b.SessionID != ""; as != bs {
			if as {
				return -1
			}
			return 1
		}
		return int(min(max(a.Ord-b.Ord, -1), 1))
	})
	return out
}

// hold is what a reservation took from one limit: in the window that
// started at W (ms) of limit L.
type hold struct {
	L string `json:"l"`
	W int64  `json:"w"`
}

// resRow is a spend_reservations row.
type resRow struct {
	SessionID    string `db:"session_id"`
	RequestID    string `db:"request_id"`
	AgentID      string `db:"agent_id"`
	Status       string `db:"status"`
	InputTokens  int64  `db:"input_tokens"`
	OutputTokens int64  `db:"output_tokens"`
	Cost         int64  `db:"cost"`
	Currency     string `db:"currency"`
	ActualInput  int64  `db:"actual_input_tokens"`
	ActualOutput int64  `db:"actual_output_tokens"`
	ActualCost   int64  `db:"actual_cost"`
	Holds        string `db:"holds"`
	Detail       string `db:"detail"`
	CreatedAtMS  int64  `db:"created_at_ms"`
	ExpiresAtMS  int64  `db:"expires_at_ms"`
	ClosedAtMS   int64  `db:"closed_at_ms"`
}

func (r *resRow) amount() store.SpendAmount {
	return store.SpendAmount{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostMicros: r.Cost}
}

func (r *resRow) actual() store.SpendAmount {
	return store.SpendAmount{InputTokens: r.ActualInput, OutputTokens: r.ActualOutput, CostMicros: r.ActualCost}
}

func (r *resRow) holds() ([]hold, error) {
	var hs []hold
	if err := json.Unmarshal([]byte(r.Holds), &hs); err != nil {
		return nil, fmt.Errorf("%w: reservation %q of session %q: holds: %w", store.ErrCorrupt, r.RequestID, r.SessionID, err)
	}
	return hs, nil
}

func (r *resRow) reservation() store.Reservation {
	out := store.Reservation{SessionID: r.SessionID, ID: r.RequestID, AgentID: r.AgentID,
		Status: store.ReservationStatus(r.Status), Amount: r.amount(), Currency: r.Currency, Actual: r.actual(),
		CreatedAt: rowcodec.FromMillis(r.CreatedAtMS), ExpiresAt: rowcodec.FromMillis(r.ExpiresAtMS)}
	if r.ClosedAtMS != 0 {
		out.ClosedAt = rowcodec.FromMillis(r.ClosedAtMS)
	}
	return out
}

// put inserts the reservation as tenant's.
func (r *resRow) put(tx Tx, tenant string) error {
	_, err := tx.Exec(spendResPutSQL, r.SessionID, r.RequestID, r.AgentID, r.Status, r.InputTokens, r.OutputTokens,
		r.Cost, r.Currency, r.ActualInput, r.ActualOutput, r.ActualCost, r.Holds, r.Detail,
		r.CreatedAtMS, r.ExpiresAtMS, r.ClosedAtMS, tenant)
	return err
}

func (r *resRow) close(tx Tx, status store.ReservationStatus, actual store.SpendAmount, atMS int64) error {
	r.Status, r.ActualInput, r.ActualOutput, r.ActualCost, r.ClosedAtMS = string(status), actual.InputTokens, actual.OutputTokens, actual.CostMicros, atMS
	_, err := tx.Exec(spendResCloseSQL, r.Status, r.ActualInput, r.ActualOutput, r.ActualCost, atMS, r.SessionID, r.RequestID)
	return err
}

// The recorded refusal of a reservation that carried a request id.
type recordedRefusal struct {
	Outcome string          `json:"outcome"`
	Error   json.RawMessage `json:"error"`
}

func encodeSpendRefusal(refusal error) (string, error) {
	b, err := json.Marshal(refusal)
	if err != nil {
		return "", err
	}
	d, err := json.Marshal(recordedRefusal{Outcome: store.AuditOutcome(refusal), Error: b})
	return string(d), err
}

func decodeSpendRefusal(detail string) error {
	var rec recordedRefusal
	if err := json.Unmarshal([]byte(detail), &rec); err != nil {
		return fmt.Errorf("%w: recorded reservation refusal: %w", store.ErrCorrupt, err)
	}
	var target error
	switch rec.Outcome {
	case store.OutcomeClosed:
		target = &store.ClosedError{}
	case store.OutcomeExpired:
		target = &store.ExpiredError{}
	case store.OutcomeSpendExceeded:
		target = &store.SpendLimitError{}
	default:
		return fmt.Errorf("%w: unknown recorded reservation outcome %q", store.ErrCorrupt, rec.Outcome)
	}
	if err := json.Unmarshal(rec.Error, target); err != nil {
		return fmt.Errorf("%w: recorded reservation refusal: %w", store.ErrCorrupt, err)
	}
	return target
}

// spendSession is what a reservation reads of its governed session.
type spendSession struct {
	AgentID     string `db:"agent_id"`
	Status      string `db:"status"`
	ExpiresAtMS int64  `db:"expires_at_ms"`
}

// SpendFacet is the spend facet (see store.Spend).
type SpendFacet struct{ s *Store }

// Spend returns the spend facet.
func (s *Store) Spend() store.Spend { return &SpendFacet{s: s} }

// audit appends one event at the transaction's time: a spend decision
// is taken at a time in milliseconds (its windows and expiries are), and
// its event is stored at that instant, in microseconds.
func (sp *SpendFacet) audit(tx Tx, nowMS int64, rec AuditRecord) error {
	return sp.s.AppendAudit(tx, nowMS*1000, rec)
}

// reserveDetail is the audit detail of a reservation.
type reserveDetail struct {
	Amount    store.SpendAmount `json:"amount"`
	Currency  string            `json:"currency,omitempty"`
	ExpiresAt int64             `json:"expires_at_ms,omitempty"`
}

// Reserve checks and counts a reservation (see store.Spend.Reserve).
func (sp *SpendFacet) Reserve(ctx context.Context, req store.ReserveRequest) (store.Reservation, error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Reservation{}, err
	}
	id := req.RequestID
	if id == "" {
		id = uuid.NewString()
	}
	var out store.Reservation
	var refusal error
	err = sp.s.write(ctx, func(tx Tx) error {
		out, refusal = store.Reservation{}, nil
		nowMS := rowcodec.ToMillis(sp.s.now())
		// The session row first, locked where rows are locked one by one:
		// concurrent retries of one request id wait for each other here.
		var sess spendSession
		if err := tx.Get(&sess, sp.s.q.spend.session, req.SessionID, sp.s.tenant); errors.Is(err, sql.ErrNoRows) {
			refusal = &store.NotFoundError{Resource: "session", ID: req.SessionID}
			return nil
		} else if err != nil {
			return err
		}
		if req.RequestID != "" {
			var r resRow
			err := tx.Get(&r, sp.s.q.spend.resGet, req.SessionID, id, sp.s.tenant)
			if err == nil {
				out, refusal, err = replayReserve(&r, req)
				return err
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if err := sp.checkSession(tx, sess, req.SessionID, req.AgentID, id, store.AuditReserve, nowMS); err != nil {
			var r *refused
			if errors.As(err, &r) {
				refusal = r.err
				return sp.recordRefusal(tx, req, id, sess.AgentID, r, nowMS)
			}
			return err
		}
		if err := sp.sweepAgent(tx, sess.AgentID, nowMS); err != nil {
			return err
		}
		limits, err := scanLimits(tx, sp.s.q.spend.limitsOf, sess.AgentID, req.SessionID, sp.s.tenant)
		if err != nil {
			return err
		}
		var holds []hold
		for _, l := range checkOrder(limits) {
			l.roll(nowMS)
			want := req.Amount.Of(store.SpendMetric(l.Metric))
			if want == 0 {
				continue
			}
			if l.Metric == string(store.MetricCost) && l.Currency != req.Currency {
				return store.Invalid("currency", "is not the currency of a cost limit that applies")
			}
			if want > l.Amount-min(l.Amount, satAdd(l.Spent, l.Reserved)) {
				refusal = &store.SpendLimitError{SessionID: req.SessionID, AgentID: sess.AgentID, Scope: l.scope(),
					Metric: store.SpendMetric(l.Metric), Window: store.SpendWindow(l.Period),
					WindowStart: rowcodec.FromMillis(l.WindowStartMS), Currency: l.Currency,
					Limit: l.Amount, Spent: l.Spent, Reserved: l.Reserved, Requested: want}
				return sp.recordRefusal(tx, req, id, sess.AgentID, &refused{err: refusal}, nowMS)
			}
			l.Reserved, l.dirty = l.Reserved+want, true
			holds = append(holds, hold{L: l.ID, W: l.WindowStartMS})
		}
		for _, l := range limits {
			if l.dirty {
				if _, err := tx.Exec(spendSetLimitSQL, l.WindowStartMS, l.Spent, l.Reserved, l.ID); err != nil {
					return err
				}
			}
		}
		hb, err := json.Marshal(holds)
		if err != nil {
			return err
		}
		if holds == nil {
			hb = []byte("[]")
		}
		r := resRow{SessionID: req.SessionID, RequestID: id, AgentID: sess.AgentID, Status: string(store.ReservationReserved),
			InputTokens: req.Amount.InputTokens, OutputTokens: req.Amount.OutputTokens, Cost: req.Amount.CostMicros,
			Currency: req.Currency, Holds: string(hb), Detail: "{}", CreatedAtMS: nowMS, ExpiresAtMS: nowMS + req.TTL.Milliseconds()}
		if err := r.put(tx, sp.s.tenant); err != nil {
			return err
		}
		out = r.reservation()
		return sp.audit(tx, nowMS, AuditRecord{AgentID: sess.AgentID, Kind: store.AuditReserve, Outcome: store.OutcomeAllowed,
			SessionID: req.SessionID, RequestID: id,
			Detail: reserveDetail{Amount: req.Amount, Currency: req.Currency, ExpiresAt: r.ExpiresAtMS}})
	})
	if err != nil {
		return store.Reservation{}, err
	}
	if refusal != nil {
		return store.Reservation{}, refusal
	}
	return out, nil
}

// replayReserve answers a retry of a reservation's request id from its
// record: the reservation as it is now, or the refusal recorded.
func replayReserve(r *resRow, req store.ReserveRequest) (store.Reservation, error, error) {
	if req.AgentID != "" && req.AgentID != r.AgentID {
		return store.Reservation{}, &store.AgentMismatchError{SessionID: r.SessionID, Expected: r.AgentID, Actual: req.AgentID}, nil
	}
	if r.amount() != req.Amount || r.Currency != req.Currency {
		return store.Reservation{}, nil, &store.ConflictError{Resource: "reservation", ID: r.RequestID, Reason: "request id reused with another amount"}
	}
	if r.Status == string(store.ReservationRefused) {
		return store.Reservation{}, decodeSpendRefusal(r.Detail), nil
	}
	return r.reservation(), nil, nil
}

// refused carries a refusal of a reservation; audited says whether it is
// in the audit trail already.
type refused struct {
	err     error
	audited bool
}

func (r *refused) Error() string { return r.err.Error() }

// recordRefusal keeps a refused reservation's outcome for replays of its
// request id (refusals that belong to the session's agent only, as for
// Use), after auditing it unless checkSession did.
func (sp *SpendFacet) recordRefusal(tx Tx, req store.ReserveRequest, id, agent string, r *refused, nowMS int64) error {
	if !r.audited {
		if err := sp.audit(tx, nowMS, AuditRecord{AgentID: agent, Kind: store.AuditReserve, Outcome: store.AuditOutcome(r.err),
			SessionID: req.SessionID, RequestID: id, Detail: r.err}); err != nil {
			return err
		}
	}
	if req.RequestID == "" || errors.Is(r.err, store.ErrNotFound) || errors.Is(r.err, store.ErrAgentMismatch) {
		return nil
	}
	detail, err := encodeSpendRefusal(r.err)
	if err != nil {
		return err
	}
	row := resRow{SessionID: req.SessionID, RequestID: id, AgentID: agent, Status: string(store.ReservationRefused),
		InputTokens: req.Amount.InputTokens, OutputTokens: req.Amount.OutputTokens, Cost: req.Amount.CostMicros,
		Currency: req.Currency, Holds: "[]", Detail: detail, CreatedAtMS: nowMS, ExpiresAtMS: nowMS, ClosedAtMS: nowMS}
	return row.put(tx, sp.s.tenant)
}

// checkSession applies a decision's session checks after not found, in
// the documented order (agent mismatch, closed, expired), marking an
// expired session durably. A refusal comes back as an audited *refused
// error.
func (sp *SpendFacet) checkSession(tx Tx, sess spendSession, id, agent, requestID string, kind store.AuditKind, nowMS int64) error {
	var refusal error
	switch {
	case agent != "" && agent != sess.AgentID:
		refusal = &store.AgentMismatchError{SessionID: id, Expected: sess.AgentID, Actual: agent}
	case sess.Status == string(store.StatusClosed):
		refusal = &store.ClosedError{SessionID: id}
	case sess.Status == string(store.StatusExpired) || nowMS >= sess.ExpiresAtMS:
		refusal = &store.ExpiredError{SessionID: id, ExpiresAt: rowcodec.FromMillis(sess.ExpiresAtMS)}
		if sess.Status == string(store.StatusActive) {
			if err := sp.s.MarkExpired(tx, id, sess.AgentID, nowMS); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if err := sp.audit(tx, nowMS, AuditRecord{AgentID: sess.AgentID, Kind: kind, Outcome: store.AuditOutcome(refusal),
		SessionID: id, RequestID: requestID, Detail: refusal}); err != nil {
		return err
	}
	return &refused{err: refusal, audited: true}
}

// MarkExpired marks an active session expired durably and audits it,
// inside the caller's write transaction.
func (s *Store) MarkExpired(tx Tx, sessionID, agentID string, nowMS int64) error {
	res, err := tx.Exec(spendMarkExpired, sessionID, s.tenant)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	return s.AppendAudit(tx, nowMS*1000, AuditRecord{AgentID: agentID, Kind: store.AuditExpire, Outcome: store.OutcomeAllowed, SessionID: sessionID})
}

// sweepAgent releases the agent's lapsed reservations: each gives back
// what it holds and is marked expired, and the lapse is audited.
func (sp *SpendFacet) sweepAgent(tx Tx, agent string, nowMS int64) error {
	for {
		var lapsed []resRow
		if err := tx.Select(&lapsed, sp.s.q.spend.lapsed, agent, nowMS, sp.s.tenant); err != nil {
			return err
		}
		if len(lapsed) == 0 {
			return nil
		}
		var ids []string
		holds := make([][]hold, len(lapsed))
		for i := range lapsed {
			hs, err := lapsed[i].holds()
			if err != nil {
				return err
			}
			holds[i] = hs
			for _, h := range hs {
				ids = append(ids, h.L)
			}
		}
		limits, err := sp.limitsByID(tx, ids)
		if err != nil {
			return err
		}
		for i := range lapsed {
			r := &lapsed[i]
			giveBack(limits, holds[i], r.amount(), store.SpendAmount{}, true)
			if err := r.close(tx, store.ReservationExpired, store.SpendAmount{}, nowMS); err != nil {
				return err
			}
			if err := sp.audit(tx, nowMS, AuditRecord{AgentID: agent, Kind: store.AuditLapse, Outcome: store.OutcomeAllowed,
				SessionID: r.SessionID, RequestID: r.RequestID,
				Detail: reserveDetail{Amount: r.amount(), Currency: r.Currency, ExpiresAt: r.ExpiresAtMS}}); err != nil {
				return err
			}
		}
		if err := saveLimits(tx, limits); err != nil {
			return err
		}
		if len(lapsed) < 1000 {
			return nil
		}
	}
}

// limitsByID reads (and locks) the limits of ids, by id.
func (sp *SpendFacet) limitsByID(tx Tx, ids []string) (map[string]*limitRow, error) {
	out := map[string]*limitRow{}
	if len(ids) == 0 {
		return out, nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	arg, err := sp.s.d.ListArg(ids)
	if err != nil {
		return nil, err
	}
	rows, err := scanLimits(tx, sp.s.q.spend.limitsByID, arg)
	if err != nil {
		return nil, err
	}
	for _, l := range rows {
		out[l.ID] = l
	}
	return out, nil
}

// giveBack takes a reservation's holds off its limits: the reserved
// amount (when reserved is true) and adds the actual usage to what is
// spent, in the windows the reservation was counted in. A hold whose limit
// is gone, or whose window has ended since, is skipped: that window's
// counters are gone.
func giveBack(limits map[string]*limitRow, holds []hold, amount, actual store.SpendAmount, reserved bool) {
	for _, h := range holds {
		l, ok := limits[h.L]
		if !ok || l.WindowStartMS != h.W {
			continue
		}
		m := store.SpendMetric(l.Metric)
		if reserved {
			l.Reserved = max(0, l.Reserved-amount.Of(m))
		}
		l.Spent = satAdd(l.Spent, actual.Of(m))
		l.dirty = true
	}
}

func saveLimits(tx Tx, limits map[string]*limitRow) error {
	ids := make([]string, 0, len(limits))
	for id, l := range limits {
		if l.dirty {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := limits[id]
		if _, err := tx.Exec(spendSetLimitSQL, l.WindowStartMS, l.Spent, l.Reserved, l.ID); err != nil {
			return err
		}
		l.dirty = false
	}
	return nil
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// settleDetail is the audit detail of a settle or a release.
type settleDetail struct {
	Amount       store.SpendAmount  `json:"amount"`
	Actual       *store.SpendAmount `json:"actual,omitempty"`
	Currency     string             `json:"currency,omitempty"`
	Late         bool               `json:"late,omitempty"`
	Conversation string             `json:"conversation,omitempty"`
}

// Settle records the actual usage of a reservation (see
// store.Spend.Settle).
func (sp *SpendFacet) Settle(ctx context.Context, req store.SettleRequest) (store.Reservation, error) {
	if err := req.Validate(); err != nil {
		return store.Reservation{}, err
	}
	return sp.finish(ctx, req.SessionID, req.RequestID, req.AgentID, func(tx Tx, r *resRow, nowMS int64) (bool, error) {
		switch store.ReservationStatus(r.Status) {
		case store.ReservationSettled:
			if r.actual() == req.Actual {
				return false, nil
			}
			return false, &store.ConflictError{Resource: "reservation", ID: r.RequestID, Reason: "settled with another usage"}
		case store.ReservationReleased, store.ReservationRefused:
			return false, &store.ConflictError{Resource: "reservation", ID: r.RequestID, Reason: "not held: " + r.Status}
		}
		if !req.Actual.Within(r.amount()) {
			return false, store.Invalid("actual", "exceeds the reserved amount")
		}
		late := r.Status == string(store.ReservationExpired) || nowMS >= r.ExpiresAtMS
		if err := sp.giveBack(tx, r, req.Actual, r.Status == string(store.ReservationReserved)); err != nil {
			return false, err
		}
		if err := r.close(tx, store.ReservationSettled, req.Actual, nowMS); err != nil {
			return false, err
		}
		if req.Conversation != "" {
			if err := sp.recordUsage(tx, req.Conversation, r.Currency, req.Actual); err != nil {
				return false, err
			}
		}
		actual := req.Actual
		return true, sp.audit(tx, nowMS, AuditRecord{AgentID: r.AgentID, Kind: store.AuditSettle, Outcome: store.OutcomeAllowed,
			SessionID: r.SessionID, RequestID: r.RequestID,
			Detail: settleDetail{Amount: r.amount(), Actual: &actual, Currency: r.Currency, Late: late, Conversation: req.Conversation}})
	})
}

// Release gives a reservation back (see store.Spend.Release).
func (sp *SpendFacet) Release(ctx context.Context, req store.ReleaseRequest) (store.Reservation, error) {
	if err := req.Validate(); err != nil {
		return store.Reservation{}, err
	}
	return sp.finish(ctx, req.SessionID, req.RequestID, req.AgentID, func(tx Tx, r *resRow, nowMS int64) (bool, error) {
		switch store.ReservationStatus(r.Status) {
		case store.ReservationReleased, store.ReservationExpired:
			return false, nil
		case store.ReservationSettled, store.ReservationRefused:
			return false, &store.ConflictError{Resource: "reservation", ID: r.RequestID, Reason: "not held: " + r.Status}
		}
		if err := sp.giveBack(tx, r, store.SpendAmount{}, true); err != nil {
			return false, err
		}
		if err := r.close(tx, store.ReservationReleased, store.SpendAmount{}, nowMS); err != nil {
			return false, err
		}
		return true, sp.audit(tx, nowMS, AuditRecord{AgentID: r.AgentID, Kind: store.AuditRelease, Outcome: store.OutcomeAllowed,
			SessionID: r.SessionID, RequestID: r.RequestID, Detail: settleDetail{Amount: r.amount(), Currency: r.Currency}})
	})
}

// finish runs the end of a reservation (settle or release) on its locked
// row: fn returns whether it changed anything.
func (sp *SpendFacet) finish(ctx context.Context, session, request, agent string, fn func(tx Tx, r *resRow, nowMS int64) (bool, error)) (store.Reservation, error) {
	var out store.Reservation
	var refusal error
	err := sp.s.write(ctx, func(tx Tx) error {
		out, refusal = store.Reservation{}, nil
		nowMS := rowcodec.ToMillis(sp.s.now())
		// The session row first, as every decision on a session takes it
		// (its audit event advances the head kept in it): taking it after
		// the agent's limits would deadlock with a Reserve.
		var sess spendSession
		if err := tx.Get(&sess, sp.s.q.spend.session, session, sp.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Resource: "reservation", ID: request}
		} else if err != nil {
			return err
		}
		var r resRow
		if err := tx.Get(&r, sp.s.q.spend.resGet, session, request, sp.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Resource: "reservation", ID: request}
		} else if err != nil {
			return err
		}
		if agent != "" && agent != r.AgentID {
			refusal = &store.AgentMismatchError{SessionID: session, Expected: r.AgentID, Actual: agent}
			return nil
		}
		if _, err := fn(tx, &r, nowMS); err != nil {
			return err
		}
		out = r.reservation()
		return nil
	})
	if err != nil {
		return store.Reservation{}, err
	}
	if refusal != nil {
		return store.Reservation{}, refusal
	}
	return out, nil
}

// giveBack gives a reservation's holds back to its limits (see the
// function giveBack) and saves them.
func (sp *SpendFacet) giveBack(tx Tx, r *resRow, actual store.SpendAmount, reserved bool) error {
	hs, err := r.holds()
	if err != nil {
		return err
	}
	ids := make([]string, len(hs))
	for i, h := range hs {
		ids[i] = h.L
	}
	limits, err := sp.limitsByID(tx, ids)
	if err != nil {
		return err
	}
	giveBack(limits, hs, r.amount(), actual, reserved)
	return saveLimits(tx, limits)
}

// recordUsage adds a settled usage to a conversation (tokens, and the cost
// when it is in US dollars, the conversation's currency).
func (sp *SpendFacet) recordUsage(tx Tx, conversation, currency string, actual store.SpendAmount) error {
	req := store.AppendRequest{ID: conversation, Usage: &store.TokenUsage{
		PromptTokens: actual.InputTokens, CompletionTokens: actual.OutputTokens, TotalTokens: actual.TotalTokens()}}
	if currency == "USD" {
		// The conversation keeps its total cost as a float of dollars.
		req.Cost = float64(actual.CostMicros) / store.MicrosPerUnit
	}
	contents, err := req.Validate()
	if err != nil {
		return err
	}
	_, err = (&Conversations{s: sp.s}).appendTx(tx, req, contents)
	if errors.Is(err, store.ErrNotFound) {
		// The conversation is missing, not the governed session.
		return &store.NotFoundError{Resource: "conversation", ID: conversation}
	}
	return err
}

// Reservation returns one reservation.
func (sp *SpendFacet) Reservation(ctx context.Context, sessionID, requestID string) (store.Reservation, error) {
	if err := store.ValidateID("session_id", sessionID); err != nil {
		return store.Reservation{}, err
	}
	if err := store.ValidateID("request_id", requestID); err != nil {
		return store.Reservation{}, err
	}
	var r resRow
	if err := sp.s.get(ctx, &r, spendResGetSQL, sessionID, requestID, sp.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return store.Reservation{}, &store.NotFoundError{Resource: "reservation", ID: requestID}
	} else if err != nil {
		return store.Reservation{}, err
	}
	return r.reservation(), nil
}

// limitsDetail is the audit detail of a change of an agent's limits.
type limitsDetail struct {
	Limits []store.SpendLimit `json:"limits"`
}

// SetAgentLimits replaces an agent's limits (see
// store.Spend.SetAgentLimits).
func (sp *SpendFacet) SetAgentLimits(ctx context.Context, agentID string, limits []store.SpendLimit) error {
	if err := store.ValidateName("agent_id", agentID); err != nil {
		return err
	}
	limits, err := store.NormalizeSpendLimits("limits", limits)
	if err != nil {
		return err
	}
	return sp.s.write(ctx, func(tx Tx) error {
		if err := sp.s.lockKey(tx, lockClassSpendAgent, agentID); err != nil {
			return err
		}
		nowMS := rowcodec.ToMillis(sp.s.now())
		old, err := scanLimits(tx, sp.s.q.spend.agentLimits, agentID, sp.s.tenant)
		if err != nil {
			return err
		}
		keep := map[string]bool{}
		for i, l := range limits {
			idx := slices.IndexFunc(old, func(o *limitRow) bool {
				return o.Metric == string(l.Metric) && o.Period == string(l.Window) && o.Currency == l.Currency
			})
			if idx >= 0 {
				keep[old[idx].ID] = true
				if _, err := tx.Exec(spendChangeLimitSQL, int64(i), l.Limit, old[idx].ID); err != nil {
					return err
				}
				continue
			}
			// A limit of a metric and window it had in another currency
			// goes: its counters are in that currency.
			for _, o := range old {
				if o.Metric == string(l.Metric) && o.Period == string(l.Window) && !keep[o.ID] {
					if _, err := tx.Exec(spendDropLimitSQL, o.ID); err != nil {
						return err
					}
					keep[o.ID] = true // gone
				}
			}
			if err := putLimit(tx, sp.s.tenant, agentID, "", i, l, nowMS); err != nil {
				return err
			}
		}
		for _, o := range old {
			if !keep[o.ID] {
				if _, err := tx.Exec(spendDropLimitSQL, o.ID); err != nil {
					return err
				}
			}
		}
		return sp.audit(tx, nowMS, AuditRecord{AgentID: agentID, Kind: store.AuditLimits, Outcome: store.OutcomeAllowed,
			Detail: limitsDetail{Limits: nonNilLimits(limits)}})
	})
}

func nonNilLimits(l []store.SpendLimit) []store.SpendLimit {
	if l == nil {
		return []store.SpendLimit{}
	}
	return l
}

// putLimit inserts a new limit whose window starts at the one holding
// nowMS, with nothing spent or reserved, as tenant's.
func putLimit(tx Tx, tenant, agentID, sessionID string, ord int, l store.SpendLimit, nowMS int64) error {
	var session any
	if sessionID != "" {
		session = sessionID
	}
	start := rowcodec.ToMillis(l.Window.Start(rowcodec.FromMillis(nowMS)))
	_, err := tx.Exec(spendPutLimitSQL, uuid.NewString(), agentID, session, int64(ord), string(l.Metric), string(l.Window),
		l.Limit, l.Currency, start, int64(0), int64(0), tenant)
	return err
}

// createDetail is the audit detail of a created session.
type createDetail struct {
	CallBudget        int64              `json:"call_budget"`
	RateLimit         int64              `json:"rate_limit,omitempty"`
	RateWindowMS      int64              `json:"rate_window_ms,omitempty"`
	TimeLimitMS       int64              `json:"time_limit_ms"`
	Tools             []string           `json:"tools"`
	Sensitivity       string             `json:"sensitivity"`
	MaxActivePerAgent int64              `json:"max_active_per_agent,omitempty"`
	SpendLimits       []store.SpendLimit `json:"spend_limits,omitempty"`
}

// OnCreate records a created governed session's spend limits and audits
// the create, inside the backend's Create transaction. req is the
// normalized request.
func (s *Store) OnCreate(tx Tx, sess store.Session, req store.CreateRequest) error {
	nowMS := rowcodec.ToMillis(sess.CreatedAt)
	for i, l := range req.SpendLimits {
		if err := putLimit(tx, s.tenant, sess.AgentID, sess.ID, i, l, nowMS); err != nil {
			return err
		}
	}
	d := createDetail{CallBudget: sess.CallBudget, TimeLimitMS: sess.TimeLimit.Milliseconds(), Tools: sess.AuthorizedTools,
		Sensitivity: string(sess.Sensitivity), MaxActivePerAgent: req.MaxActivePerAgent, SpendLimits: req.SpendLimits}
	if sess.RateLimit > 0 {
		d.RateLimit, d.RateWindowMS = sess.RateLimit, sess.RateWindow.Milliseconds()
	}
	// A session created with the id of a removed one continues its chain.
	if err := ContinueSessionChain(tx, s.tenant, sess.AgentID, sess.ID); err != nil {
		return err
	}
	return s.AppendAudit(tx, rowcodec.ToMicros(sess.CreatedAt), AuditRecord{AgentID: sess.AgentID, Kind: store.AuditCreate, Outcome: store.OutcomeAllowed,
		SessionID: sess.ID, Detail: d})
}

// AuditRefusal audits a governance refusal (of a create or a use) inside
// the backend's transaction.
func (s *Store) AuditRefusal(tx Tx, kind store.AuditKind, agentID, sessionID, requestID string, refusal error) error {
	return s.AppendAudit(tx, rowcodec.ToMicros(s.now()), AuditRecord{AgentID: agentID, Kind: kind,
		Outcome: store.AuditOutcome(refusal), SessionID: sessionID, RequestID: requestID, Detail: refusal})
}

// useDetail is the audit detail of an allowed use.
type useDetail struct {
	Tools []string `json:"tools"`
}

// UseAudit returns the audit record of an allowed use.
func UseAudit(agentID, sessionID, requestID string, tools []string) AuditRecord {
	if tools == nil {
		tools = []string{}
	}
	return AuditRecord{AgentID: agentID, Kind: store.AuditUse, Outcome: store.OutcomeAllowed, SessionID: sessionID,
		RequestID: requestID, Detail: useDetail{Tools: tools}}
}

// AuditClosed audits sessions closed by Close or CloseAllForAgent.
func (s *Store) AuditClosed(tx Tx, agentID string, sessionIDs ...string) error {
	nowUS := rowcodec.ToMicros(s.now())
	for _, id := range sessionIDs {
		if err := s.AppendAudit(tx, nowUS, AuditRecord{AgentID: agentID, Kind: store.AuditClose, Outcome: store.OutcomeAllowed, SessionID: id}); err != nil {
			return err
		}
	}
	return nil
}

// Cleanup statements: the sessions Cleanup may remove are closed or
// expired, without a reservation still held (it may yet be settled).
const (
	cleanupSelectSQL = `SELECT id, agent_id, status, audit_seq, audit_hash FROM governed_sessions AS s
		WHERE (status IN ('closed', 'expired') OR (status = 'active' AND expires_at_ms <= ?))
		AND NOT EXISTS (SELECT 1 FROM spend_reservations AS r
			WHERE r.session_id = s.id AND r.status = 'reserved' AND r.expires_at_ms > ?)
		AND s.tenant = ?
		ORDER BY agent_id, id`
	cleanupDeleteSQL = `DELETE FROM governed_sessions WHERE id = ? AND tenant = ?`
)

// cleanupRow is a session Cleanup removes.
type cleanupRow struct {
	ID        string `db:"id"`
	AgentID   string `db:"agent_id"`
	Status    string `db:"status"`
	AuditSeq  int64  `db:"audit_seq"`
	AuditHash string `db:"audit_hash"`
}

// CleanupGoverned is the whole of a governed Cleanup inside the backend's
// write transaction: it releases every lapsed reservation, removes the
// closed and expired sessions that hold no live reservation (their
// limits, reservations and request records go with them), audits each
// removal and returns how many it removed.
func (s *Store) CleanupGoverned(tx Tx) (int64, error) {
	sp := &SpendFacet{s: s}
	now := s.now()
	nowMS := rowcodec.ToMillis(now)
	if _, err := sp.sweepAll(tx, nowMS); err != nil {
		return 0, err
	}
	var rows []cleanupRow
	if err := tx.Select(&rows, cleanupSelectSQL+s.d.ForUpdate, nowMS, nowMS, s.tenant); err != nil {
		return 0, err
	}
	for _, r := range rows {
		if _, err := tx.Exec(cleanupDeleteSQL, r.ID, s.tenant); err != nil {
			return 0, err
		}
		if err := s.AuditRemoval(tx, rowcodec.ToMicros(now), store.AuditCleanup, r.AgentID, r.ID,
			RemovalDetail{Status: r.Status, FinalSeq: r.AuditSeq, FinalHash: r.AuditHash}); err != nil {
			return 0, err
		}
	}
	return int64(len(rows)), nil
}

// RemovalDetail is the detail of a removal event in an agent's chain: the
// removed session's status and its chain's final head (none when its
// chain is empty).
type RemovalDetail struct {
	Status    string `json:"status"`
	FinalSeq  int64  `json:"final_seq,omitempty"`
	FinalHash string `json:"final_hash,omitempty"`
}

// AuditRemoval records the removal of a governed session in its agent's
// chain, with its chain's final head, inside the caller's transaction
// (which removes the session's row). Every path that removes a governed
// session calls it, so that its chain verifies after the session is gone
// and its events can be pruned without losing the evidence.
func (s *Store) AuditRemoval(tx Tx, atUS int64, kind store.AuditKind, agentID, sessionID string, d RemovalDetail) error {
	if d.FinalSeq == 0 {
		d.FinalHash = ""
	}
	return s.AppendAudit(tx, atUS, AuditRecord{AgentID: agentID, Kind: kind, Outcome: store.OutcomeAllowed,
		SessionID: sessionID, Detail: d})
}

// sweepAll releases the lapsed reservations of every agent.
func (sp *SpendFacet) sweepAll(tx Tx, nowMS int64) (int64, error) {
	var n int64
	for {
		var agents []string
		if err := tx.Select(&agents, spendLapsedAgentsSQL, nowMS, sp.s.tenant); err != nil {
			return n, err
		}
		for _, a := range agents {
			if err := sp.sweepAgent(tx, a, nowMS); err != nil {
				return n, err
			}
		}
		n += int64(len(agents))
		if len(agents) < 1000 {
			return n, nil
		}
	}
}

// ReleaseExpired releases every lapsed reservation, in one transaction
// (see store.Spend.ReleaseExpired).
func (sp *SpendFacet) ReleaseExpired(ctx context.Context) (int64, error) {
	var n int64
	err := sp.s.write(ctx, func(tx Tx) error {
		nowMS := rowcodec.ToMillis(sp.s.now())
		if err := tx.Get(&n, `SELECT count(*) FROM spend_reservations WHERE status = 'reserved' AND expires_at_ms <= ? AND tenant = ?`, nowMS, sp.s.tenant); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		_, err := sp.sweepAll(tx, nowMS)
		return err
	})
	return n, err
}

// Status returns a session's spend (see store.Spend.Status).
func (sp *SpendFacet) Status(ctx context.Context, sessionID string) (store.SpendStatus, error) {
	if err := store.ValidateID("session_id", sessionID); err != nil {
		return store.SpendStatus{}, err
	}
	var out store.SpendStatus
	err := sp.s.readTx(ctx, func(tx Tx) error {
		var agent string
		if err := tx.Get(&agent, spendSessionAgent, sessionID, sp.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return &store.NotFoundError{Resource: "session", ID: sessionID}
		} else if err != nil {
			return err
		}
		var err error
		out, err = sp.status(tx, agent, sessionID)
		return err
	})
	return out, err
}

// AgentStatus returns an agent's spend (see store.Spend.AgentStatus).
func (sp *SpendFacet) AgentStatus(ctx context.Context, agentID string) (store.SpendStatus, error) {
	if err := store.ValidateName("agent_id", agentID); err != nil {
		return store.SpendStatus{}, err
	}
	var out store.SpendStatus
	err := sp.s.readTx(ctx, func(tx Tx) error {
		var err error
		out, err = sp.status(tx, agentID, "")
		return err
	})
	return out, err
}

// status reads limits and counts them as of now: windows that ended read
// empty, lapsed reservations released.
func (sp *SpendFacet) status(tx Tx, agent, session string) (store.SpendStatus, error) {
	nowMS := rowcodec.ToMillis(sp.s.now())
	query, args := spendAgentLimitsSQL, []any{agent, sp.s.tenant}
	if session != "" {
		query, args = spendLimitsOfSQL, []any{agent, session, sp.s.tenant}
	}
	limits, err := scanLimits(tx, query, args...)
	if err != nil {
		return store.SpendStatus{}, err
	}
	var lapsed []resRow
	if err := tx.Select(&lapsed, spendLapsedOfAgent, agent, nowMS, sp.s.tenant); err != nil {
		return store.SpendStatus{}, err
	}
	held := map[string]int64{}
	byID := map[string]*limitRow{}
	for _, l := range limits {
		byID[l.ID] = l
	}
	for i := range lapsed {
		hs, err := lapsed[i].holds()
		if err != nil {
			return store.SpendStatus{}, err
		}
		for _, h := range hs {
			if l, ok := byID[h.L]; ok && l.WindowStartMS == h.W {
				held[h.L] += lapsed[i].amount().Of(store.SpendMetric(l.Metric))
			}
		}
	}
	out := store.SpendStatus{SessionID: session, AgentID: agent, Limits: []store.LimitStatus{}}
	for _, l := range checkOrder(limits) {
		out.Limits = append(out.Limits, l.status(nowMS, held))
	}
	live, liveArg := spendLiveAgentSQL, agent
	if session != "" {
		live, liveArg = spendLiveSQL, session
	}
	if err := tx.Get(&out.Live, live, liveArg, nowMS, sp.s.tenant); err != nil {
		return store.SpendStatus{}, err
	}
	return out, nil
}
