package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Governance = (*Governance)(nil)

// Governance is the governed-session facet of a Store (see
// store.Governance). Obtain it with Store.Governance, or through a tenant
// handle (Store.Tenant) for a tenant's sessions.
//
// Governed-session ids are global: a tenant's facet finds only its own
// sessions (another tenant's id is store.ErrNotFound), but a Create with an
// id another tenant's session holds fails with store.ErrConflict, so ids
// should be random (Create makes one when the request has none).
type Governance struct {
	s    *Store
	core *sqlcore.Store // s.core, or its copy scoped to a tenant
}

// tenant is the tenant whose sessions g reads and writes.
func (g *Governance) tenant() string { return g.core.Tenant() }

// govTenantSQL sets the tenant of a transaction a tenant's facet runs
// (see tenantSQL), for a store connected as a role subject to row-level
// security; every statement names the tenant as well.
const govTenantSQL = `SELECT set_config('sessionstore.tenant', $1, true)`

// inTx is Store.inTx with the tenant set first in a tenant's facet.
func (g *Governance) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tenant := g.tenant()
	if tenant == "" {
		return g.s.inTx(ctx, fn)
	}
	return g.s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, govTenantSQL, tenant); err != nil {
			return err
		}
		return fn(tx)
	})
}

// reader is Store.reader for a tenant's facet: outside a snapshot, its
// reads run in a read-only transaction that sets the tenant first.
func (g *Governance) reader(ctx context.Context, fn func(q querier) error) error {
	tenant := g.tenant()
	if tenant == "" || g.s.snapshotOf(ctx) != nil {
		return g.s.reader(ctx, fn)
	}
	return pgx.BeginTxFunc(ctx, g.s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, govTenantSQL, tenant); err != nil {
			return err
		}
		return fn(tx)
	})
}

const govColumns = `id, agent_id, delegation_chain, declared_intent, authorized_tools,
	authorized_credentials, time_limit_ms, call_budget, calls_made, rate_limit,
	rate_window_ms, rate_window_start_ms, rate_window_calls, sensitivity, status,
	created_at_ms, expires_at_ms`

// govRow is a governed_sessions row as stored.
type govRow struct {
	ID                    string   `db:"id"`
	AgentID               string   `db:"agent_id"`
	DelegationChain       []string `db:"delegation_chain"`
	DeclaredIntent        string   `db:"declared_intent"`
	AuthorizedTools       []string `db:"authorized_tools"`
	AuthorizedCredentials []string `db:"authorized_credentials"`
	TimeLimitMS           int64    `db:"time_limit_ms"`
	CallBudget            int64    `db:"call_budget"`
	CallsMade             int64    `db:"calls_made"`
	RateLimit             int64    `db:"rate_limit"`
	RateWindowMS          int64    `db:"rate_window_ms"`
	RateWindowStartMS     int64    `db:"rate_window_start_ms"`
	RateWindowCalls       int64    `db:"rate_window_calls"`
	Sensitivity           string   `db:"sensitivity"`
	Status                string   `db:"status"`
	CreatedAtMS           int64    `db:"created_at_ms"`
	ExpiresAtMS           int64    `db:"expires_at_ms"`
}

func (r *govRow) session() store.Session {
	return store.Session{
		ID:                    r.ID,
		AgentID:               r.AgentID,
		DelegationChain:       nonNil(r.DelegationChain),
		DeclaredIntent:        r.DeclaredIntent,
		AuthorizedTools:       nonNil(r.AuthorizedTools),
		AuthorizedCredentials: nonNil(r.AuthorizedCredentials),
		TimeLimit:             time.Duration(r.TimeLimitMS) * time.Millisecond,
		CallBudget:            r.CallBudget,
		CallsMade:             r.CallsMade,
		RateLimit:             r.RateLimit,
		RateWindow:            time.Duration(r.RateWindowMS) * time.Millisecond,
		RateWindowStart:       rowcodec.FromMillis(r.RateWindowStartMS),
		RateWindowCalls:       r.RateWindowCalls,
		Sensitivity:           store.Sensitivity(r.Sensitivity),
		Status:                store.Status(r.Status),
		CreatedAt:             rowcodec.FromMillis(r.CreatedAtMS),
		ExpiresAt:             rowcodec.FromMillis(r.ExpiresAtMS),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// scanGov reads one governed_sessions row; pgx.ErrNoRows when none.
func scanGov(rows pgx.Rows, err error) (store.Session, error) {
	if err != nil {
		return store.Session{}, err
	}
	row, err := pgx.CollectExactlyOneRow(rows, govRowByPos)
	if err != nil {
		return store.Session{}, err
	}
	return row.session(), nil
}

// govRowByPos scans a row of govColumns, in their order, into a govRow
// (every statement that reads or returns a governed session selects
// govColumns): matching the columns to the fields by name, per row
// (pgx.RowToStructByName), cost a governed Use batch's client more than
// decoding them. It decodes the wire values itself (govRowRaw) when they
// are as the schema stores them, and scans them with pgx otherwise.
// TestGovColumnsOrder keeps govColumns and the order of the fields here
// the same, TestGovRowRawAsScan govRowRaw and govRowScan.
func govRowByPos(row pgx.CollectableRow) (govRow, error) {
	if r, ok := govRowRaw(row.FieldDescriptions(), row.RawValues()); ok {
		return r, nil
	}
	return govRowScan(row)
}

// govRowScan is govRowByPos with pgx's Scan, for any row govRowRaw does
// not decode.
func govRowScan(row pgx.CollectableRow) (govRow, error) {
	var r govRow
	err := row.Scan(&r.ID, &r.AgentID, &r.DelegationChain, &r.DeclaredIntent, &r.AuthorizedTools,
		&r.AuthorizedCredentials, &r.TimeLimitMS, &r.CallBudget, &r.CallsMade, &r.RateLimit,
		&r.RateWindowMS, &r.RateWindowStartMS, &r.RateWindowCalls, &r.Sensitivity, &r.Status,
		&r.CreatedAtMS, &r.ExpiresAtMS)
	return r, err
}

const (
	// govLockAgentSQL takes the transaction advisory lock that serializes
	// capped creates of one agent. Its first key is 0x474F5653 ("GOVS"),
	// the second hashtext(agent_id); a hash collision only serializes two
	// agents' creates.
	govLockAgentSQL = `SELECT pg_advisory_xact_lock(1196381779, hashtext($1::text))`

	// Every statement names the tenant: the cap counts the tenant's own
	// sessions of the agent (governed_sessions_agent leads with it), and
	// a session id of another tenant is not found.
	govCountActiveSQL = `SELECT count(*) FROM governed_sessions
		WHERE tenant = $3 AND agent_id = $1 AND status = 'active' AND expires_at_ms > $2`

	govInsertSQL = `INSERT INTO governed_sessions (` + govColumns + `, any_tool, tenant)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
		ON CONFLICT (id) DO NOTHING`

	govGetSQL = `SELECT ` + govColumns + ` FROM governed_sessions WHERE id = $1 AND tenant = $2`

	govLockSQL = `SELECT ` + govColumns + ` FROM governed_sessions WHERE id = $1 AND tenant = $2 FOR UPDATE`

	// govUseSQL is the whole governed check-and-increment in one statement:
	// it updates the row only if every check passes (agent, status, expiry,
	// budget, tools, rate window) and returns the new row. Under READ
	// COMMITTED a concurrent update of the row makes it wait and re-check
	// the conditions on the committed row, so a budget is never overspent.
	// When it matches nothing, the cold path locks the row and asks
	// store.Session.CheckUse which check refused.
	//
	// Parameters: 1 now_ms, 2 n, 3 id, 4 agent ('' = any), 5 tools, 6 the
	// tenant.
	govUseSQL = `UPDATE governed_sessions SET
		calls_made = calls_made + $2::bigint,
		rate_window_calls = CASE
			WHEN rate_limit = 0 THEN rate_window_calls
			WHEN $1::bigint >= rate_window_start_ms + rate_window_ms THEN $2::bigint
			ELSE rate_window_calls + $2::bigint END,
		rate_window_start_ms = CASE
			WHEN rate_limit > 0 AND $1::bigint >= rate_window_start_ms + rate_window_ms THEN $1::bigint
			ELSE rate_window_start_ms END
		WHERE id = $3::text AND tenant = $6::text
		AND ($4::text = '' OR agent_id = $4::text)
		AND status = 'active' AND $1::bigint < expires_at_ms
		AND calls_made + $2::bigint <= call_budget
		AND (any_tool OR $5::text[] <@ authorized_tools)
		AND (rate_limit = 0 OR rate_limit >= $2::bigint + CASE
			WHEN $1::bigint >= rate_window_start_ms + rate_window_ms THEN 0
			ELSE rate_window_calls END)
		RETURNING ` + govColumns

	// govApplySQL writes the counters of a use decided on a locked row.
	govApplySQL = `UPDATE governed_sessions
		SET calls_made = $2, rate_window_start_ms = $3, rate_window_calls = $4 WHERE id = $1`

	govCloseSQL = `UPDATE governed_sessions SET status = 'closed', ended_at_ms = $2
		WHERE id = $1 AND tenant = $3 AND status <> 'closed' RETURNING ` + govColumns

	govExistsSQL = `SELECT EXISTS (SELECT 1 FROM governed_sessions WHERE id = $1 AND tenant = $2)`

	govCloseAgentSQL = `UPDATE governed_sessions SET status = 'closed', ended_at_ms = $2
		WHERE tenant = $3 AND agent_id = $1 AND status = 'active' AND expires_at_ms > $2`

	govRequestGetSQL = `SELECT tools, outcome, detail FROM governed_use_requests
		WHERE session_id = $1 AND request_id = $2 AND tenant = $3`

	govRequestPutSQL = `INSERT INTO governed_use_requests
		(session_id, request_id, tools, outcome, detail, created_at_ms, tenant) VALUES ($1, $2, $3, $4, $5, $6, $7)`
)

// Create creates a governed session (see store.Governance.Create). With
// MaxActivePerAgent, a transaction advisory lock on the agent serializes
// the count and the insert against every other capped create of the agent.
func (g *Governance) Create(ctx context.Context, req store.CreateRequest) (store.Session, error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Session{}, err
	}
	id := req.ID
	if id == "" {
		id = uuid.NewString()
	}
	var out store.Session
	var refusal error
	err = g.inTx(ctx, func(tx pgx.Tx) error {
		refusal = nil
		now := g.s.now()
		if req.MaxActivePerAgent > 0 {
			if _, err := tx.Exec(ctx, govLockAgentSQL, req.AgentID); err != nil {
				return err
			}
			var n int64
			if err := tx.QueryRow(ctx, govCountActiveSQL, req.AgentID, rowcodec.ToMillis(now), g.tenant()).Scan(&n); err != nil {
				return err
			}
			if n >= req.MaxActivePerAgent {
				// A refusal is a decision: its audit event commits.
				refusal = &store.TooManySessionsError{AgentID: req.AgentID, Max: req.MaxActivePerAgent, Current: n}
				return g.core.AuditRefusal(&pgTx{ctx: ctx, q: tx}, store.AuditCreate, req.AgentID, req.ID, "", refusal)
			}
		}
		sess := req.NewSession(id, now)
		tag, err := tx.Exec(ctx, govInsertSQL,
			sess.ID, sess.AgentID, sess.DelegationChain, sess.DeclaredIntent,
			sess.AuthorizedTools, sess.AuthorizedCredentials,
			sess.TimeLimit.Milliseconds(), sess.CallBudget, sess.CallsMade, sess.RateLimit,
			sess.RateWindow.Milliseconds(), rowcodec.ToMillis(sess.RateWindowStart), sess.RateWindowCalls,
			string(sess.Sensitivity), string(sess.Status),
			rowcodec.ToMillis(sess.CreatedAt), rowcodec.ToMillis(sess.ExpiresAt),
			slices.Contains(sess.AuthorizedTools, store.AnyTool), g.tenant())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return &store.ConflictError{Resource: "session", ID: id, Reason: "id exists"}
		}
		out = sess
		// The session's spend limits and the audit event of the create.
		return g.core.OnCreate(&pgTx{ctx: ctx, q: tx}, sess, req)
	})
	if err == nil && refusal != nil {
		err = refusal
	}
	if err != nil {
		return store.Session{}, err
	}
	g.s.cfg.logger.Debug("pgstore: created governed session", "session_id", out.ID, "agent_id", out.AgentID)
	return out, nil
}

// verdict is the outcome of a Use: the updated session, or a refusal.
type verdict struct {
	sess    store.Session
	refusal error
}

// Use checks and records one call per tool (see store.Governance.Use).
//
// Without a request id, the hot path is one conditional UPDATE … RETURNING
// (one round trip, its own transaction); concurrent calls in this process
// share one transaction and one commit, whatever their sessions (see
// usebatch.go). When the UPDATE matches nothing, the row is locked
// (SELECT … FOR UPDATE) and the call decided on it with
// store.Session.CheckUse: the refusal with its reason, the durable expired
// mark, or, if a concurrent change made the call allowable meanwhile, the
// increment on the locked row. With a request id, the whole use runs on
// the locked row, so that concurrent retries of one id wait for each other
// and consume once.
func (g *Governance) Use(ctx context.Context, req store.UseRequest) (store.Session, error) {
	if err := req.Validate(); err != nil {
		return store.Session{}, err
	}
	if g.s.snapshotOf(ctx) != nil { // a use decides outside s.write too
		return store.Session{}, store.ErrSnapshotWrite
	}
	tools := nonNil(req.Tools)
	var v verdict
	if req.RequestID == "" && len(tools) > 0 {
		// Concurrent calls share a transaction (see useBatched in
		// usebatch.go).
		v, err := g.useBatched(ctx, req, tools)
		if err != nil {
			return store.Session{}, err
		}
		if v.refusal != nil {
			return store.Session{}, v.refusal
		}
		return v.sess, nil
	}
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if req.RequestID == "" {
			v, err = g.decideLocked(ctx, tx, req, tools)
		} else {
			v, err = g.decideOnce(ctx, tx, req, tools)
		}
		return err
	})
	if err != nil {
		return store.Session{}, err
	}
	if v.refusal != nil {
		return store.Session{}, v.refusal
	}
	return v.sess, nil
}

// lockSession reads the session row and locks it until the transaction
// ends. A missing session is a refusal, not an error.
func (g *Governance) lockSession(ctx context.Context, tx querier, id string) (store.Session, error, error) {
	sess, err := scanGov(tx.Query(ctx, govLockSQL, id, g.tenant()))
	if errNoRows(err) {
		return store.Session{}, &store.NotFoundError{Resource: "session", ID: id}, nil
	}
	return sess, nil, err
}

// decideLocked locks the session, decides the use with CheckUse and applies
// it. A refusal is returned as such (not as err) because its write, if
// any, is kept: an expired session is marked expired durably.
func (g *Governance) decideLocked(ctx context.Context, tx querier, req store.UseRequest, tools []string) (verdict, error) {
	sess, refusal, err := g.lockSession(ctx, tx, req.SessionID)
	if err != nil || refusal != nil {
		return verdict{refusal: refusal}, err
	}
	return g.decideOn(ctx, tx, sess, req, tools)
}

// decideOn decides a use on a session row the transaction has locked.
func (g *Governance) decideOn(ctx context.Context, tx querier, sess store.Session, req store.UseRequest, tools []string) (verdict, error) {
	now := g.s.now()
	atx := &pgTx{ctx: ctx, q: tx}
	refusal := sess.CheckUse(req.AgentID, tools, now)
	if refusal != nil {
		if errors.Is(refusal, store.ErrExpired) && sess.Status == store.StatusActive {
			// Marked expired durably, and audited as such.
			if err := g.core.MarkExpired(atx, sess.ID, sess.AgentID, rowcodec.ToMillis(now)); err != nil {
				return verdict{}, err
			}
		}
		if err := g.core.AuditRefusal(atx, store.AuditUse, sess.AgentID, sess.ID, req.RequestID, refusal); err != nil {
			return verdict{}, err
		}
		return verdict{refusal: refusal}, nil
	}
	if n := int64(len(tools)); n > 0 {
		sess.Apply(n, now)
		if _, err := tx.Exec(ctx, govApplySQL, sess.ID, sess.CallsMade, rowcodec.ToMillis(sess.RateWindowStart), sess.RateWindowCalls); err != nil {
			return verdict{}, err
		}
	}
	if err := g.core.AppendAudit(atx, rowcodec.ToMicros(now), sqlcore.UseAudit(sess.AgentID, sess.ID, req.RequestID, tools)); err != nil {
		return verdict{}, err
	}
	return verdict{sess: sess}, nil
}

// useRecord is what is kept of a Use that carried a request id.
type useRecord struct {
	Tools   []string `db:"tools"`
	Outcome string   `db:"outcome"`
	Detail  string   `db:"detail"`
}

// decideOnce is a use with a request id, on the locked session row: a
// replay returns the recorded outcome and consumes nothing.
func (g *Governance) decideOnce(ctx context.Context, tx querier, req store.UseRequest, tools []string) (verdict, error) {
	sess, refusal, err := g.lockSession(ctx, tx, req.SessionID)
	if err != nil || refusal != nil {
		return verdict{refusal: refusal}, err
	}
	rows, err := tx.Query(ctx, govRequestGetSQL, req.SessionID, req.RequestID, g.tenant())
	if err != nil {
		return verdict{}, err
	}
	rec, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[useRecord])
	if err != nil && !errNoRows(err) {
		return verdict{}, err
	}
	if err == nil {
		if req.AgentID != "" && req.AgentID != sess.AgentID {
			return verdict{refusal: &store.AgentMismatchError{SessionID: sess.ID, Expected: sess.AgentID, Actual: req.AgentID}}, nil
		}
		if !slices.Equal(rec.Tools, tools) {
			return verdict{refusal: &store.ConflictError{Resource: "request", ID: req.RequestID, Reason: "request id reused with different tools"}}, nil
		}
		if rec.Outcome == rowcodec.UseOutcomeOK {
			// The session as the first call returned it; a record that
			// kept no counters (an older version) replays as it is now.
			u, recorded, err := rowcodec.DecodeUseSuccess(rec.Detail)
			if err != nil || !recorded {
				sess.Status = sess.EffectiveStatus(g.s.now())
				return verdict{sess: sess}, err
			}
			return verdict{sess: u.Replay(sess)}, nil
		}
		refusal, err := rowcodec.DecodeUseOutcome(rec.Outcome, rec.Detail)
		return verdict{refusal: refusal}, err
	}
	v, err := g.decideOn(ctx, tx, sess, req, tools)
	if err != nil {
		return verdict{}, err
	}
	// Refusals that do not belong to the session's agent are not recorded:
	// another agent must not be able to pin a request id of this one.
	if errors.Is(v.refusal, store.ErrAgentMismatch) {
		return v, nil
	}
	outcome, detail, ok := rowcodec.EncodeUseOutcome(v.refusal)
	if !ok {
		return verdict{}, fmt.Errorf("pgstore: unexpected refusal %T", v.refusal)
	}
	if v.refusal == nil {
		detail = rowcodec.EncodeUseSuccess(v.sess)
	}
	if _, err := tx.Exec(ctx, govRequestPutSQL, req.SessionID, req.RequestID, tools, outcome, detail, rowcodec.ToMillis(g.s.now()), g.tenant()); err != nil {
		return verdict{}, err
	}
	return v, nil
}

// Close closes a session (see store.Governance.Close).
func (g *Governance) Close(ctx context.Context, id string) (store.Session, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Session{}, err
	}
	var out store.Session
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		sess, err := scanGov(tx.Query(ctx, govCloseSQL, id, rowcodec.ToMillis(g.s.now()), g.tenant()))
		if errNoRows(err) {
			var exists bool
			if err := tx.QueryRow(ctx, govExistsSQL, id, g.tenant()).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return &store.NotFoundError{Resource: "session", ID: id}
			}
			return &store.ClosedError{SessionID: id}
		}
		if err != nil {
			return err
		}
		out = sess
		return g.core.AuditClosed(&pgTx{ctx: ctx, q: tx}, sess.AgentID, sess.ID)
	})
	return out, err
}

// Get returns one session with its effective status (see
// store.Session.EffectiveStatus).
func (g *Governance) Get(ctx context.Context, id string) (store.Session, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Session{}, err
	}
	var sess store.Session
	err := g.s.retry(ctx, func(ctx context.Context) error {
		var err error
		return g.reader(ctx, func(q querier) error {
			sess, err = scanGov(q.Query(ctx, govGetSQL, id, g.tenant()))
			return err
		})
	})
	if errNoRows(err) {
		return store.Session{}, &store.NotFoundError{Resource: "session", ID: id}
	}
	if err != nil {
		return store.Session{}, err
	}
	sess.Status = sess.EffectiveStatus(g.s.now())
	return sess, nil
}

// List returns a page of sessions ordered by id in byte order (see
// store.Governance.List).
func (g *Governance) List(ctx context.Context, f store.ListFilter) (store.Page[store.Session], error) {
	f, err := f.Normalize()
	if err != nil {
		return store.Page[store.Session]{}, err
	}
	now := g.s.now()
	query := `SELECT ` + govColumns + ` FROM governed_sessions WHERE id > $1 AND tenant = $2`
	args := []any{f.After, g.tenant()}
	if f.AgentID != "" {
		args = append(args, f.AgentID)
		query += fmt.Sprintf(` AND agent_id = $%d`, len(args))
	}
	switch f.Status {
	case store.StatusActive:
		args = append(args, rowcodec.ToMillis(now))
		query += fmt.Sprintf(` AND status = 'active' AND expires_at_ms > $%d`, len(args))
	case store.StatusExpired:
		args = append(args, rowcodec.ToMillis(now))
		query += fmt.Sprintf(` AND (status = 'expired' OR (status = 'active' AND expires_at_ms <= $%d))`, len(args))
	case store.StatusClosed:
		query += ` AND status = 'closed'`
	}
	args = append(args, f.Limit+1)
	query += fmt.Sprintf(` ORDER BY id COLLATE "C" LIMIT $%d`, len(args))
	var rows []govRow
	err = g.s.retry(ctx, func(ctx context.Context) error {
		return g.reader(ctx, func(q querier) error {
			r, err := q.Query(ctx, query, args...)
			if err != nil {
				return err
			}
			rows, err = pgx.CollectRows(r, govRowByPos)
			return err
		})
	})
	if err != nil {
		return store.Page[store.Session]{}, err
	}
	page := store.Page[store.Session]{Items: make([]store.Session, 0, min(len(rows), f.Limit))}
	for i := range rows {
		if i == f.Limit {
			page.Next = page.Items[len(page.Items)-1].ID
			break
		}
		sess := rows[i].session()
		sess.Status = sess.EffectiveStatus(now)
		page.Items = append(page.Items, sess)
	}
	return page, nil
}

// CountActive counts the agent's active sessions.
func (g *Governance) CountActive(ctx context.Context, agentID string) (int64, error) {
	if err := store.ValidateName("agent_id", agentID); err != nil {
		return 0, err
	}
	var n int64
	err := g.s.retry(ctx, func(ctx context.Context) error {
		return g.reader(ctx, func(q querier) error {
			return q.QueryRow(ctx, govCountActiveSQL, agentID, rowcodec.ToMillis(g.s.now()), g.tenant()).Scan(&n)
		})
	})
	return n, err
}

// CloseAllForAgent closes every active session of the agent.
func (g *Governance) CloseAllForAgent(ctx context.Context, agentID string) (int64, error) {
	if err := store.ValidateName("agent_id", agentID); err != nil {
		return 0, err
	}
	var n int64
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, govCloseAgentSQL+` RETURNING id`, agentID, rowcodec.ToMillis(g.s.now()), g.tenant())
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = int64(len(ids))
		return g.core.AuditClosed(&pgTx{ctx: ctx, q: tx}, agentID, ids...)
	})
	return n, err
}

// Cleanup deletes expired and closed sessions (with their request records,
// by cascade).
func (g *Governance) Cleanup(ctx context.Context) (int64, error) {
	var n int64
	err := g.inTx(ctx, func(tx pgx.Tx) error {
		// Lapsed reservations released, sessions holding none removed,
		// each removal audited (see sqlcore.Store.CleanupGoverned).
		var err error
		n, err = g.core.CleanupGoverned(&pgTx{ctx: ctx, q: tx})
		return err
	})
	if err == nil && n > 0 {
		g.s.cfg.logger.Info("pgstore: cleaned up governed sessions", "removed", n)
	}
	return n, err
}
