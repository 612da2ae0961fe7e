package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

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

const govColumns = `id, agent_id, delegation_chain, declared_intent, authorized_tools,
	authorized_credentials, time_limit_ms, call_budget, calls_made, rate_limit,
	rate_window_ms, rate_window_start_ms, rate_window_calls, sensitivity, status,
	created_at_ms, expires_at_ms`

// govRow is a governed_sessions row as stored.
type govRow struct {
	ID                    string `db:"id"`
	AgentID               string `db:"agent_id"`
	DelegationChain       string `db:"delegation_chain"`
	DeclaredIntent        string `db:"declared_intent"`
	AuthorizedTools       string `db:"authorized_tools"`
	AuthorizedCredentials string `db:"authorized_credentials"`
	TimeLimitMS           int64  `db:"time_limit_ms"`
	CallBudget            int64  `db:"call_budget"`
	CallsMade             int64  `db:"calls_made"`
	RateLimit             int64  `db:"rate_limit"`
	RateWindowMS          int64  `db:"rate_window_ms"`
	RateWindowStartMS     int64  `db:"rate_window_start_ms"`
	RateWindowCalls       int64  `db:"rate_window_calls"`
	Sensitivity           string `db:"sensitivity"`
	Status                string `db:"status"`
	CreatedAtMS           int64  `db:"created_at_ms"`
	ExpiresAtMS           int64  `db:"expires_at_ms"`
}

func (r *govRow) session() (store.Session, error) {
	s := store.Session{
		ID:              r.ID,
		AgentID:         r.AgentID,
		DeclaredIntent:  r.DeclaredIntent,
		TimeLimit:       time.Duration(r.TimeLimitMS) * time.Millisecond,
		CallBudget:      r.CallBudget,
		CallsMade:       r.CallsMade,
		RateLimit:       r.RateLimit,
		RateWindow:      time.Duration(r.RateWindowMS) * time.Millisecond,
		RateWindowStart: rowcodec.FromMillis(r.RateWindowStartMS),
		RateWindowCalls: r.RateWindowCalls,
		Sensitivity:     store.Sensitivity(r.Sensitivity),
		Status:          store.Status(r.Status),
		CreatedAt:       rowcodec.FromMillis(r.CreatedAtMS),
		ExpiresAt:       rowcodec.FromMillis(r.ExpiresAtMS),
	}
	for _, f := range []struct {
		name string
		src  string
		dst  *[]string
	}{
		{"delegation_chain", r.DelegationChain, &s.DelegationChain},
		{"authorized_tools", r.AuthorizedTools, &s.AuthorizedTools},
		{"authorized_credentials", r.AuthorizedCredentials, &s.AuthorizedCredentials},
	} {
		if err := decodeStrings(f.src, f.dst); err != nil {
			return store.Session{}, fmt.Errorf("%w: governed session %q: column %s: %w", store.ErrCorrupt, r.ID, f.name, err)
		}
		if *f.dst == nil {
			*f.dst = []string{}
		}
	}
	return s, nil
}

// dest returns the scan destinations in govColumns order, for scanning
// without reflection.
func (r *govRow) dest() []any {
	return []any{&r.ID, &r.AgentID, &r.DelegationChain, &r.DeclaredIntent, &r.AuthorizedTools,
		&r.AuthorizedCredentials, &r.TimeLimitMS, &r.CallBudget, &r.CallsMade, &r.RateLimit,
		&r.RateWindowMS, &r.RateWindowStartMS, &r.RateWindowCalls, &r.Sensitivity, &r.Status,
		&r.CreatedAtMS, &r.ExpiresAtMS}
}

// decodeStrings decodes a JSON array of strings as written by mustJSON. The
// common case (no escapes) is split directly; anything else goes through
// encoding/json.
func decodeStrings(src string, dst *[]string) error {
	if len(src) >= 2 && src[0] == '[' && src[len(src)-1] == ']' && !strings.Contains(src, `\`) {
		inner := src[1 : len(src)-1]
		if inner == "" {
			*dst = []string{}
			return nil
		}
		if len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"' {
			parts := strings.Split(inner[1:len(inner)-1], `","`)
			ok := true
			for _, p := range parts {
				if strings.IndexByte(p, '"') >= 0 {
					ok = false
					break
				}
			}
			if ok {
				*dst = parts
				return nil
			}
		}
	}
	return json.Unmarshal([]byte(src), dst)
}

func mustJSON(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	if err != nil { // []string always marshals
		panic(err)
	}
	return string(b)
}

const (
	// Every statement names the tenant: the cap counts the tenant's own
	// sessions of the agent (governed_sessions_agent leads with it).
	govCountActiveSQL = `SELECT count(*) FROM governed_sessions
		WHERE tenant = ? AND agent_id = ? AND status = 'active' AND expires_at_ms > ?`

	govInsertSQL = `INSERT INTO governed_sessions (` + govColumns + `, any_tool, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	govGetSQL = `SELECT ` + govColumns + ` FROM governed_sessions WHERE id = ? AND tenant = ?`

	govCloseSQL = `UPDATE governed_sessions SET status = 'closed', ended_at_ms = ?2
		WHERE id = ?1 AND tenant = ?3 AND status <> 'closed' RETURNING ` + govColumns

	govCloseAgentSQL = `UPDATE governed_sessions SET status = 'closed', ended_at_ms = ?2
		WHERE tenant = ?3 AND agent_id = ?1 AND status = 'active' AND expires_at_ms > ?2`

	govRequestGetSQL = `SELECT tools, outcome, detail FROM governed_use_requests
		WHERE session_id = ? AND request_id = ? AND tenant = ?`

	govRequestPutSQL = `INSERT INTO governed_use_requests
		(session_id, request_id, tools, outcome, detail, created_at_ms, tenant) VALUES (?, ?, ?, ?, ?, ?, ?)`
)

// govUseSQL is the whole governed check-and-increment in one statement: it
// updates the row only if every check passes (agent, status, expiry,
// budget, tools, rate window) and returns the new counters. When it matches
// nothing, the cold path reads the row to tell which check refused.
//
// Parameters: 1 now_ms, 2 n, 3 id, 4 agent (” = any), 5 tools (see the
// two variants below), 6 the tenant, and when audited 7 the audit event's
// payload; an audited statement also returns the event's agent, seq and
// hashes.
func govUseSQL(toolCheck string, audited bool) string {
	set, returning := "", ""
	if audited {
		set = ",\n\t\t" + sqlcore.AuditHeadSet(dialect, "?7")
		returning = ", agent_id, " + sqlcore.AuditHeadColumns
	}
	return `UPDATE governed_sessions SET
		calls_made = calls_made + ?2,
		rate_window_calls = CASE
			WHEN rate_limit = 0 THEN rate_window_calls
			WHEN ?1 >= rate_window_start_ms + rate_window_ms THEN ?2
			ELSE rate_window_calls + ?2 END,
		rate_window_start_ms = CASE
			WHEN rate_limit > 0 AND ?1 >= rate_window_start_ms + rate_window_ms THEN ?1
			ELSE rate_window_start_ms END` + set + `
		WHERE id = ?3 AND tenant = ?6
		AND (?4 = '' OR agent_id = ?4)
		AND status = 'active' AND ?1 < expires_at_ms
		AND calls_made + ?2 <= call_budget
		AND (any_tool = 1 OR ` + toolCheck + `)
		AND (rate_limit = 0 OR rate_limit >= ?2 + CASE
			WHEN ?1 >= rate_window_start_ms + rate_window_ms THEN 0
			ELSE rate_window_calls END)
		RETURNING calls_made, rate_window_start_ms, rate_window_calls, created_at_ms` + returning
}

var (
	// govUseOneSQL checks a single tool, passed as its JSON string ("name"):
	// tool names never need JSON escaping (see store.ValidateToolName), so
	// the quoted name occurs in the stored JSON array exactly when it is an
	// element of it.
	govUseOneSQL = govUseSQL(toolCheckOne, false)
	// govUseManySQL checks a batch, passed as a JSON array.
	govUseManySQL = govUseSQL(toolCheckMany, false)
	// govUseOneAuditedSQL and govUseManyAuditedSQL also advance the audit
	// head kept in the session's row by the use's event (payload ?6), so
	// that an allowed use writes its session row and its event, and no
	// separate head row (see sqlcore.AuditHeadSet).
	govUseOneAuditedSQL  = govUseSQL(toolCheckOne, true)
	govUseManyAuditedSQL = govUseSQL(toolCheckMany, true)
)

const (
	toolCheckOne  = `instr(authorized_tools, ?5) > 0`
	toolCheckMany = `NOT EXISTS (
			SELECT 1 FROM json_each(?5) AS req
			WHERE req.value NOT IN (SELECT value FROM json_each(authorized_tools)))`
)

// Create creates a governed session (see store.Governance.Create).
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
	err = g.s.write(ctx, func(tx *wtx) error {
		refusal = nil
		now := g.s.now()
		if req.MaxActivePerAgent > 0 {
			var n int64
			if err := tx.get(&n, govCountActiveSQL, g.tenant(), req.AgentID, rowcodec.ToMillis(now)); err != nil {
				return err
			}
			if n >= req.MaxActivePerAgent {
				// A refusal is a decision: its audit event commits.
				refusal = &store.TooManySessionsError{AgentID: req.AgentID, Max: req.MaxActivePerAgent, Current: n}
				return g.core.AuditRefusal(tx, store.AuditCreate, req.AgentID, req.ID, "", refusal)
			}
		}
		sess := req.NewSession(id, now)
		// The same insert as a restore's (governance_restore.go).
		if _, err := restoreSession(tx, govInsertSQL, g.tenant(), &sess); err != nil {
			return err
		}
		out = sess
		// The session's spend limits and the audit event of the create.
		return g.core.OnCreate(tx, sess, req)
	})
	if err == nil && refusal != nil {
		err = refusal
	}
	if err != nil {
		return store.Session{}, err
	}
	g.s.govCache.put(out)
	g.s.cfg.logger.Debug("sqlstore: created governed session", "session_id", out.ID, "agent_id", out.AgentID)
	return out, nil
}

// Use checks and records one call per tool (see store.Governance.Use).
func (g *Governance) Use(ctx context.Context, req store.UseRequest) (store.Session, error) {
	if err := req.Validate(); err != nil {
		return store.Session{}, err
	}
	// The tools as a JSON array: the check of several tools and the
	// record of a request id need it; a single tool without an id (the
	// common call) is checked by its quoted name alone.
	var tools string
	if len(req.Tools) > 1 || req.RequestID != "" {
		tools = mustJSON(req.Tools)
	}
	var v verdict
	err := g.s.write(ctx, func(tx *wtx) error {
		var err error
		if req.RequestID == "" {
			v, err = g.decide(tx, req, tools)
		} else {
			v, err = g.decideOnce(tx, req, tools)
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

// verdict is the outcome of a Use: the updated session, or a refusal.
type verdict struct {
	sess    store.Session
	refusal error
}

// decide runs the checks and the increment inside the write transaction.
// A refusal is returned as such (not as err) because its writes, if any,
// are kept: an expired session is marked expired durably.
func (g *Governance) decide(tx *wtx, req store.UseRequest, tools string) (verdict, error) {
	now := g.s.now()
	nowMS, nowUS := rowcodec.ToMillis(now), rowcodec.ToMicros(now)
	n := int64(len(req.Tools))
	if n > 0 {
		audited := !g.s.cfg.auditOff
		query, toolArg := govUseManySQL, tools
		if n == 1 {
			query, toolArg = govUseOneSQL, `"`+req.Tools[0]+`"`
		}
		args := []any{nowMS, n, req.SessionID, req.AgentID, toolArg, g.tenant()}
		var calls, windowStart, windowCalls, created int64
		dest := []any{&calls, &windowStart, &windowCalls, &created}
		var rec sqlcore.AuditRecord
		var detail string
		var place sqlcore.AuditChained
		if audited {
			if n == 1 {
				query = govUseOneAuditedSQL
			} else {
				query = govUseManyAuditedSQL
			}
			rec = sqlcore.UseAudit("", req.SessionID, req.RequestID, req.Tools)
			payload, d, err := sqlcore.AuditPayload(nowUS, rec)
			if err != nil {
				return verdict{}, err
			}
			detail = d
			args = append(args, payload)
			place = sqlcore.AuditChained{Tenant: g.tenant(), Chain: req.SessionID, AtUS: nowUS}
			dest = append(dest, &place.AgentID, &place.Seq, &place.PrevHash, &place.Hash)
		}
		err := tx.scan(query, args, dest...)
		if err == nil {
			sess, ok := g.s.govCache.get(req.SessionID, created)
			if !ok {
				var row govRow
				if err := tx.get(&row, govGetSQL, req.SessionID, g.tenant()); err != nil {
					return verdict{}, err
				}
				if sess, err = row.session(); err != nil {
					return verdict{}, err
				}
				g.s.govCache.put(sess)
			}
			sess.CallsMade = calls
			sess.RateWindowStart = rowcodec.FromMillis(windowStart)
			sess.RateWindowCalls = windowCalls
			sess.Status = store.StatusActive
			if audited {
				rec.AgentID = place.AgentID
				if err := sqlcore.InsertAuditEvent(tx, place, rec, detail); err != nil {
					return verdict{}, err
				}
			}
			return verdict{sess: sess}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return verdict{}, err
		}
	}
	// Cold path: find out which check refused, in the documented order.
	var row govRow
	if err := tx.get(&row, govGetSQL, req.SessionID, g.tenant()); errors.Is(err, sql.ErrNoRows) {
		return verdict{refusal: &store.NotFoundError{Resource: "session", ID: req.SessionID}}, nil
	} else if err != nil {
		return verdict{}, err
	}
	sess, err := row.session()
	if err != nil {
		return verdict{}, err
	}
	refusal := sess.CheckUse(req.AgentID, req.Tools, now)
	if refusal == nil {
		if n > 0 {
			// The conditional update and CheckUse disagree: a bug, never
			// an allowed call that was not counted.
			return verdict{}, fmt.Errorf("sqlstore: governed use check mismatch for session %q", req.SessionID)
		}
		if err := g.core.AppendAudit(tx, nowUS, sqlcore.UseAudit(sess.AgentID, req.SessionID, req.RequestID, req.Tools)); err != nil {
			return verdict{}, err
		}
		return verdict{sess: sess}, nil
	}
	if errors.Is(refusal, store.ErrExpired) && sess.Status == store.StatusActive {
		// Marked expired durably, and audited as such.
		if err := g.core.MarkExpired(tx, req.SessionID, sess.AgentID, nowMS); err != nil {
			return verdict{}, err
		}
	}
	if err := g.core.AuditRefusal(tx, store.AuditUse, sess.AgentID, req.SessionID, req.RequestID, refusal); err != nil {
		return verdict{}, err
	}
	return verdict{refusal: refusal}, nil
}

// useRecord is what is kept of a Use that carried a request id.
type useRecord struct {
	Tools   string `db:"tools"`
	Outcome string `db:"outcome"`
	Detail  string `db:"detail"`
}

// decideOnce is decide for a request with an id: a replay returns the
// recorded outcome and consumes nothing.
func (g *Governance) decideOnce(tx *wtx, req store.UseRequest, tools string) (verdict, error) {
	var rec useRecord
	err := tx.get(&rec, govRequestGetSQL, req.SessionID, req.RequestID, g.tenant())
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return verdict{}, err
	}
	if err == nil {
		var row govRow
		if err := tx.get(&row, govGetSQL, req.SessionID, g.tenant()); err != nil {
			return verdict{}, err
		}
		sess, err := row.session()
		if err != nil {
			return verdict{}, err
		}
		if req.AgentID != "" && req.AgentID != sess.AgentID {
			return verdict{refusal: &store.AgentMismatchError{SessionID: sess.ID, Expected: sess.AgentID, Actual: req.AgentID}}, nil
		}
		if rec.Tools != tools {
			return verdict{refusal: &store.ConflictError{Resource: "request", ID: req.RequestID, Reason: "request id reused with different tools"}}, nil
		}
		if rec.Outcome == outcomeOK {
			return replaySuccess(sess, rec.Detail, g.s.now())
		}
		refusal, err := decodeRefusal(rec.Outcome, rec.Detail)
		return verdict{refusal: refusal}, err
	}
	v, err := g.decide(tx, req, tools)
	if err != nil {
		return verdict{}, err
	}
	// Refusals that do not belong to the session's agent are not recorded:
	// a missing session has nowhere to keep it, and another agent must not
	// be able to pin a request id of this one.
	if errors.Is(v.refusal, store.ErrNotFound) || errors.Is(v.refusal, store.ErrAgentMismatch) {
		return v, nil
	}
	outcome, detail := encodeRefusal(v.refusal)
	if v.refusal == nil {
		detail = rowcodec.EncodeUseSuccess(v.sess)
	}
	if _, err := tx.exec(govRequestPutSQL, req.SessionID, req.RequestID, tools, outcome, detail, rowcodec.ToMillis(g.s.now()), g.tenant()); err != nil {
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
	err := g.s.write(ctx, func(tx *wtx) error {
		var row govRow
		err := tx.get(&row, govCloseSQL, id, rowcodec.ToMillis(g.s.now()), g.tenant())
		if errors.Is(err, sql.ErrNoRows) {
			var n int
			if err := tx.get(&n, `SELECT count(*) FROM governed_sessions WHERE id = ? AND tenant = ?`, id, g.tenant()); err != nil {
				return err
			}
			if n == 0 {
				return &store.NotFoundError{Resource: "session", ID: id}
			}
			return &store.ClosedError{SessionID: id}
		}
		if err != nil {
			return err
		}
		if out, err = row.session(); err != nil {
			return err
		}
		return g.core.AuditClosed(tx, out.AgentID, out.ID)
	})
	return out, err
}

// Get returns one session with its effective status (see
// store.Session.EffectiveStatus).
func (g *Governance) Get(ctx context.Context, id string) (store.Session, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Session{}, err
	}
	var row govRow
	err := g.s.scan(ctx, govGetSQL, []any{id, g.tenant()}, row.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, &store.NotFoundError{Resource: "session", ID: id}
	}
	if err != nil {
		return store.Session{}, mapErr(err)
	}
	sess, err := row.session()
	if err != nil {
		return store.Session{}, err
	}
	sess.Status = sess.EffectiveStatus(g.s.now())
	return sess, nil
}

// governedListSQL is the query of one List page of tenant's sessions
// (f normalized) and its arguments: limit+1 rows, to tell whether more
// follow. It is a keyset page: the (tenant, id) index from the cursor,
// read until the page is full (migration 29). One agent's sessions come
// by the (tenant, agent_id, status, expires_at_ms) index instead, sorted:
// the agent's rows only, not every row of the tenant from the cursor on
// (SQLite keeps no statistics to choose this itself).
func governedListSQL(tenant string, f store.ListFilter, now time.Time) (string, []any) {
	from := ` FROM governed_sessions`
	if f.AgentID != "" {
		from += ` INDEXED BY governed_sessions_agent`
	}
	query := `SELECT ` + govColumns + from + ` WHERE tenant = ? AND id > ?`
	args := []any{tenant, f.After}
	if f.AgentID != "" {
		query += ` AND agent_id = ?`
		args = append(args, f.AgentID)
	}
	switch f.Status {
	case store.StatusActive:
		query += ` AND status = 'active' AND expires_at_ms > ?`
		args = append(args, rowcodec.ToMillis(now))
	case store.StatusExpired:
		query += ` AND (status = 'expired' OR (status = 'active' AND expires_at_ms <= ?))`
		args = append(args, rowcodec.ToMillis(now))
	case store.StatusClosed:
		query += ` AND status = 'closed'`
	}
	query += ` ORDER BY id LIMIT ?`
	return query, append(args, f.Limit+1)
}

// List returns a page of sessions ordered by id (see store.Governance.List).
func (g *Governance) List(ctx context.Context, f store.ListFilter) (store.Page[store.Session], error) {
	f, err := f.Normalize()
	if err != nil {
		return store.Page[store.Session]{}, err
	}
	now := g.s.now()
	query, args := governedListSQL(g.tenant(), f, now)
	rows := make([]govRow, 0, min(f.Limit+1, 128)) // grows for a large page
	var row govRow
	dest := row.dest() // allocated once: what Scan is given escapes
	err = g.s.queryHot(ctx, query, args, func(r sqlcore.Rows) error {
		if err := r.Scan(dest...); err != nil {
			return err
		}
		rows = append(rows, row)
		return nil
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
		sess, err := rows[i].session()
		if err != nil {
			return store.Page[store.Session]{}, err
		}
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
	if err := g.s.get(ctx, &n, govCountActiveSQL, g.tenant(), agentID, rowcodec.ToMillis(g.s.now())); err != nil {
		return 0, mapErr(err)
	}
	return n, nil
}

// CloseAllForAgent closes every active session of the agent.
func (g *Governance) CloseAllForAgent(ctx context.Context, agentID string) (int64, error) {
	if err := store.ValidateName("agent_id", agentID); err != nil {
		return 0, err
	}
	var n int64
	err := g.s.write(ctx, func(tx *wtx) error {
		var ids []string
		if err := tx.selectRows(&ids, govCloseAgentSQL+` RETURNING id`, agentID, rowcodec.ToMillis(g.s.now()), g.tenant()); err != nil {
			return err
		}
		n = int64(len(ids))
		return g.core.AuditClosed(tx, agentID, ids...)
	})
	return n, err
}

// Cleanup deletes expired and closed sessions.
func (g *Governance) Cleanup(ctx context.Context) (int64, error) {
	var n int64
	err := g.s.write(ctx, func(tx *wtx) error {
		// Lapsed reservations released, sessions holding none removed,
		// each removal audited (see sqlcore.Store.CleanupGoverned).
		var err error
		n, err = g.core.CleanupGoverned(tx)
		return err
	})
	if err == nil && n > 0 {
		g.s.cfg.logger.Info("sqlstore: cleaned up governed sessions", "removed", n)
	}
	return n, err
}
