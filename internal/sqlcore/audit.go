package sqlcore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// The audit trail (see store.Audit): one hash chain per governed session
// for the decisions on it, its head (audit_seq, audit_prev, audit_hash) in
// the session's own row, and one chain per agent for the agent's own
// decisions (creates, removals with the removed session's final head,
// limits, lapses, checkpoints), its head in audit_heads. Events of both live in
// audit_events, keyed by (agent_id, chain, seq) where chain is the session
// id of a session chain and '' for the agent's chain. A decision appends
// its event with AppendAudit inside its own transaction; the head's
// update computes the new hash in SQL (Dialect.AuditChain) from the head it
// locks, so that an append is two statements and a governed Use can fold
// the head into its own UPDATE of the session row (see AuditHeadSet).

// AuditRecord is an event for AppendAudit; the chain fields (sequence
// number and hashes) are the store's.
type AuditRecord struct {
	AgentID   string
	Kind      store.AuditKind
	Outcome   string
	SessionID string
	RequestID string
	// Detail is marshalled to compact JSON ({} when nil).
	Detail any
}

// AuditDetail returns the stored JSON text of a detail value.
func AuditDetail(v any) (string, error) {
	switch d := v.(type) {
	case nil:
		return "{}", nil
	case string:
		return d, nil
	case json.RawMessage:
		return string(d), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlcore: audit detail: %w", err)
	}
	if _, ok := v.(error); ok {
		// A refusal's typed error has Go field names; the detail's keys
		// are snake_case like every other detail's.
		if b, err = snakeKeys(b); err != nil {
			return "", fmt.Errorf("sqlcore: audit detail: %w", err)
		}
	}
	return string(b), nil
}

// snakeKeys rewrites the keys of a JSON object to snake_case (SessionID:
// session_id), keeping their order and values; other JSON is returned as
// it is. Events stored before keep the bytes they were hashed with.
func snakeKeys(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return b, nil
	}
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		key, err := json.Marshal(snakeCase(tok.(string)))
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, key...), ':'), val...)
	}
	return append(out, '}'), nil
}

// snakeCase turns a Go field name into snake_case: an underscore before
// each word, a run of capitals being one word (SessionID: session_id,
// HTTPCode: http_code); a name in snake_case already is unchanged.
func snakeCase(name string) string {
	r := []rune(name)
	var b strings.Builder
	for i, c := range r {
		upper := unicode.IsUpper(c)
		if upper && i > 0 {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

const (
	auditInsertSQL = `INSERT INTO audit_events
		(agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	auditColumns = `agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash`
	// auditAgentHeadsSQL, auditSessionHeadsSQL and auditFinalHeadsSQL are
	// the three sources of chain heads: the agents' chains, the chains of
	// the sessions still there, and the final heads of removed sessions,
	// recorded in their agent's chain (read in Go from the details).
	// Every statement names the tenant (the last parameter): an agent's
	// chain is the chain of (tenant, agent), and a tenant's store reads
	// and writes only its own chains.
	auditAgentHeadsSQL   = `SELECT agent_id, seq, hash FROM audit_heads WHERE tenant = ? ORDER BY agent_id`
	auditSessionHeadsSQL = `SELECT agent_id, id, audit_seq, audit_hash FROM governed_sessions WHERE audit_seq > 0 AND tenant = ?`
	auditFinalHeadsSQL   = `SELECT agent_id, session_id, detail FROM audit_events
		WHERE chain = '' AND kind = 'cleanup' AND detail LIKE '%"final_seq"%' AND tenant = ?`
	auditAllSQL    = `SELECT ` + auditColumns + ` FROM audit_events WHERE tenant = ? ORDER BY agent_id, chain, seq`
	auditAgentSQL  = `SELECT ` + auditColumns + ` FROM audit_events WHERE agent_id = ? AND chain = '' AND seq <= ? AND tenant = ? ORDER BY seq`
	auditHeadOfSQL = `SELECT agent_id, seq, hash FROM audit_heads WHERE agent_id = ? AND tenant = ?`
	// auditCheckpointSQL finds the newest checkpoint of an agent's chain
	// made before a time, walking the chain backwards on its primary key.
	auditCheckpointSQL = `SELECT seq FROM audit_events
		WHERE agent_id = ? AND chain = '' AND kind = 'checkpoint' AND at_us < ? AND tenant = ? ORDER BY seq DESC LIMIT 1`
	auditFirstSQL     = `SELECT seq FROM audit_events WHERE agent_id = ? AND chain = '' AND tenant = ? ORDER BY seq LIMIT 1`
	auditPruneSQL     = `DELETE FROM audit_events WHERE agent_id = ? AND chain = '' AND seq < ? AND tenant = ?`
	auditAgentsSQL    = `SELECT agent_id FROM audit_heads WHERE tenant = ? ORDER BY agent_id`
	auditHasChainSQL  = `SELECT count(*) FROM audit_heads WHERE agent_id = ? AND tenant = ?`
	auditHasEventsSQL = `SELECT count(*) FROM audit_events WHERE agent_id = ? AND chain = ? AND tenant = ?`
	auditPutHeadSQL   = `INSERT INTO audit_heads (agent_id, seq, prev_hash, hash, tenant) VALUES (?, ?, ?, ?, ?)`
	// auditPutSessionHeadSQL sets a restored session chain's head in its
	// session's row (when the session is there).
	auditPutSessionHeadSQL = `UPDATE governed_sessions SET audit_seq = ?, audit_prev = ?, audit_hash = ?
		WHERE id = ? AND agent_id = ? AND tenant = ?`
	// auditLastOfSQL is the last event of a chain: a session created with
	// the id of a removed one continues that session's chain.
	auditLastOfSQL = `SELECT seq, prev_hash, hash FROM audit_events
		WHERE agent_id = ? AND chain = ? AND tenant = ? ORDER BY seq DESC LIMIT 1`
	auditRemovalsOfSQL = `SELECT count(*) FROM audit_events
		WHERE agent_id = ? AND chain = '' AND kind = 'cleanup' AND session_id = ? AND tenant = ?`
	auditContinueSQL = `UPDATE governed_sessions SET audit_seq = ?, audit_prev = ?, audit_hash = ? WHERE id = ? AND tenant = ?`
)

// SessionChained reports whether an event of kind about a governed session
// is part of that session's chain; the other kinds (create, cleanup,
// limits, checkpoint, lapse) are the agent's own decisions, in the agent's
// chain. A lapse is the agent's: the sweep of an agent's lapsed
// reservations runs inside a decision on any one of its sessions, and
// appending to the other sessions' chains would lock their rows after the
// agent's limits, the reverse of the order every decision on a session
// takes them in.
func SessionChained(kind store.AuditKind) bool {
	switch kind {
	case store.AuditUse, store.AuditReserve, store.AuditSettle, store.AuditRelease, store.AuditClose,
		store.AuditExpire:
		return true
	}
	return false
}

// auditHeadSQL spells the agent head's upsert for d: it takes the next
// sequence number of the chain of agent ?1 of tenant ?3, computes the new
// hash from the old head (or the zero hash) and the payload ?2, and
// returns the new head.
func auditHeadSQL(d *Dialect) string {
	zero := "'" + rowcodec.AuditZeroHash + "'"
	return `INSERT INTO audit_heads (agent_id, seq, prev_hash, hash, tenant)
		VALUES (?1, 1, ` + zero + `, ` + d.AuditChain(zero, "1", "?1", "?2") + `, ?3)
		ON CONFLICT (tenant, agent_id) DO UPDATE SET seq = audit_heads.seq + 1, prev_hash = audit_heads.hash,
		hash = ` + d.AuditChain("audit_heads.hash", "audit_heads.seq + 1", "audit_heads.agent_id", "?2") + `
		RETURNING seq, prev_hash, hash`
}

// AuditHeadSet is the SET list that advances the audit head kept in a
// governed session's row by one event whose payload is the SQL expression
// payload: in an UPDATE every right-hand side reads the row as it was, so
// the previous hash is the old head's. A statement that also RETURNs
// AuditHeadColumns has the event's chain fields.
func AuditHeadSet(d *Dialect, payload string) string {
	return `audit_seq = audit_seq + 1, audit_prev = audit_hash, audit_hash = ` +
		d.AuditChain("audit_hash", "audit_seq + 1", "agent_id", payload)
}

// AuditHeadColumns are the columns of a session chain's head: after an
// update with AuditHeadSet, the event's seq, previous hash and hash.
const AuditHeadColumns = `audit_seq, audit_prev, audit_hash`

// auditSessionHeadSQL advances the head of session ?1's chain by an event
// with payload ?2 and returns it (no row: no such session of tenant ?3).
func auditSessionHeadSQL(d *Dialect) string {
	return `UPDATE governed_sessions SET ` + AuditHeadSet(d, "?2") + ` WHERE id = ?1 AND tenant = ?3 RETURNING agent_id, ` + AuditHeadColumns
}

// AppendAudit appends rec at atUS (UTC unix microseconds) inside the
// caller's write transaction: to the chain of rec's session when its kind
// is SessionChained and the session is there, else to its agent's chain.
func (s *Store) AppendAudit(tx Tx, atUS int64, rec AuditRecord) error {
	if s.cfg.AuditOff {
		return nil
	}
	detail, err := AuditDetail(rec.Detail)
	if err != nil {
		return err
	}
	payload := rowcodec.AuditPayload(atUS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, detail)
	var seq int64
	var agent, prev, hash string
	if rec.SessionID != "" && SessionChained(rec.Kind) {
		err := tx.Scan(s.q.auditSessionHead, []any{rec.SessionID, payload, s.tenant}, &agent, &seq, &prev, &hash)
		if err == nil {
			return InsertAuditEvent(tx, AuditChained{Tenant: s.tenant, AgentID: agent, Chain: rec.SessionID, Seq: seq, AtUS: atUS,
				PrevHash: prev, Hash: hash}, rec, detail)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// The session is not there: the decision goes to its agent's chain.
	}
	if err := tx.Scan(s.q.auditHead, []any{rec.AgentID, payload, s.tenant}, &seq, &prev, &hash); err != nil {
		return err
	}
	return InsertAuditEvent(tx, AuditChained{Tenant: s.tenant, AgentID: rec.AgentID, Seq: seq, AtUS: atUS, PrevHash: prev, Hash: hash}, rec, detail)
}

// AuditChained is where an event sits in its chain, as the head's update
// returned it.
type AuditChained struct {
	// Tenant is the tenant whose chain it is ("" for the default).
	Tenant  string
	AgentID string
	// Chain is the session id of a session chain, "" for the agent's.
	Chain    string
	Seq      int64
	AtUS     int64
	PrevHash string
	Hash     string
}

// InsertAuditEvent inserts the event of rec (its detail already encoded)
// at its place c, for a backend whose own statement advanced the head.
func InsertAuditEvent(tx Tx, c AuditChained, rec AuditRecord, detail string) error {
	_, err := tx.Exec(auditInsertSQL, c.AgentID, c.Chain, c.Seq, c.AtUS, string(rec.Kind), rec.Outcome,
		rec.SessionID, rec.RequestID, detail, c.PrevHash, c.Hash, c.Tenant)
	return err
}

// ContinueSessionChain gives a session just created the head of an
// earlier session's chain with the same agent and id, if one was left (a
// removed session whose events are kept), so that its events continue
// that chain instead of colliding with it. The chain is tenant's, as the
// session is.
func ContinueSessionChain(tx Tx, tenant, agentID, sessionID string) error {
	var seq int64
	var prev, hash string
	err := tx.Scan(auditLastOfSQL, []any{agentID, sessionID, tenant}, &seq, &prev, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = tx.Exec(auditContinueSQL, seq, prev, hash, sessionID, tenant)
	return err
}

// AuditPayload returns the payload parameter of an event, for a backend
// that appends it within its own statement.
func AuditPayload(atUS int64, rec AuditRecord) (payload []byte, detail string, err error) {
	detail, err = AuditDetail(rec.Detail)
	if err != nil {
		return nil, "", err
	}
	return rowcodec.AuditPayload(atUS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, detail), detail, nil
}

// AuditedUpdateSQL wraps an UPDATE ... RETURNING statement of a governed
// session whose SET list includes AuditHeadSet(d, payloadParam) and whose
// RETURNING list is returning (which has agent_id) followed by
// AuditHeadColumns, so that the
// same statement appends an audit event to the session's chain, for
// databases whose WITH may hold data-modifying statements (PostgreSQL).
// The event is kind, outcome "ok", session sessionParam, at atParam (UTC
// unix microseconds), with the detail parameter (see AuditPayload);
// request id empty, of tenant tenantParam (the session's). The wrapped
// statement returns the columns returning; when it updates nothing, it
// appends nothing.
func AuditedUpdateSQL(update, returning string, kind store.AuditKind, atParam, sessionParam, detailParam, tenantParam string) string {
	return `WITH u AS (` + update + `),
	e AS (INSERT INTO audit_events (` + auditColumns + `, tenant)
		SELECT u.agent_id, ` + sessionParam + `, u.audit_seq, ` + atParam + `, '` + string(kind) + `', 'ok', ` + sessionParam + `, '', ` +
		detailParam + `, u.audit_prev, u.audit_hash, ` + tenantParam + ` FROM u)
	SELECT ` + returning + ` FROM u`
}

// auditRow is an audit_events row.
type auditRow struct {
	AgentID   string `db:"agent_id"`
	Chain     string `db:"chain"`
	Seq       int64  `db:"seq"`
	AtUS      int64  `db:"at_us"`
	Kind      string `db:"kind"`
	Outcome   string `db:"outcome"`
	SessionID string `db:"session_id"`
	RequestID string `db:"request_id"`
	Detail    string `db:"detail"`
	PrevHash  string `db:"prev_hash"`
	Hash      string `db:"hash"`
}

func (r *auditRow) dest() []any {
	return []any{&r.AgentID, &r.Chain, &r.Seq, &r.AtUS, &r.Kind, &r.Outcome, &r.SessionID, &r.RequestID, &r.Detail, &r.PrevHash, &r.Hash}
}

func (r *auditRow) event() store.AuditEvent {
	detail := json.RawMessage(r.Detail)
	if !json.Valid(detail) {
		// Verify reports a changed event; listing still shows it, as a
		// JSON string.
		b, _ := json.Marshal(r.Detail)
		detail = b
	}
	return store.AuditEvent{AgentID: r.AgentID, Chain: r.Chain, Seq: r.Seq, At: rowcodec.FromMicros(r.AtUS), Kind: store.AuditKind(r.Kind),
		Outcome: r.Outcome, SessionID: r.SessionID, RequestID: r.RequestID, Detail: detail, PrevHash: r.PrevHash, Hash: r.Hash}
}

func auditRowOf(e *store.AuditEvent) auditRow {
	return auditRow{AgentID: e.AgentID, Chain: e.Chain, Seq: e.Seq, AtUS: rowcodec.ToMicros(e.At), Kind: string(e.Kind), Outcome: e.Outcome,
		SessionID: e.SessionID, RequestID: e.RequestID, Detail: string(e.Detail), PrevHash: e.PrevHash, Hash: e.Hash}
}

// hashOK reports whether the row's hash matches its fields. Events
// written before migration 13 hashed their time in milliseconds (they are
// all in agent chains, at whole milliseconds): such an event matches with
// its time in milliseconds.
func (r *auditRow) hashOK() bool {
	payload := rowcodec.AuditPayload(r.AtUS, r.Kind, r.Outcome, r.SessionID, r.RequestID, r.Detail)
	if h, ok := rowcodec.AuditHash(r.PrevHash, r.Seq, r.AgentID, payload); ok && h == r.Hash {
		return true
	}
	if r.Chain != "" || r.AtUS%1000 != 0 {
		return false
	}
	payload = rowcodec.AuditPayload(r.AtUS/1000, r.Kind, r.Outcome, r.SessionID, r.RequestID, r.Detail)
	h, ok := rowcodec.AuditHash(r.PrevHash, r.Seq, r.AgentID, payload)
	return ok && h == r.Hash
}

// AuditFacet is the audit-trail facet (see store.Audit).
type AuditFacet struct{ s *Store }

// Audit returns the audit-trail facet.
func (s *Store) Audit() store.Audit { return &AuditFacet{s: s} }

// List returns a page of events in (agent, chain, sequence) order.
func (a *AuditFacet) List(ctx context.Context, f store.AuditFilter) (store.Page[store.AuditEvent], error) {
	f, err := f.Normalize()
	if err != nil {
		return store.Page[store.AuditEvent]{}, err
	}
	conds := []string{`tenant = ?`}
	args := []any{a.s.tenant}
	if f.After != "" {
		agent, chain, seq, ok := parseAuditCursor(f.After)
		if !ok {
			return store.Page[store.AuditEvent]{}, store.Invalid("after", "not a cursor of this listing")
		}
		conds = append(conds, `(agent_id > ? OR (agent_id = ? AND (chain > ? OR (chain = ? AND seq > ?))))`)
		args = append(args, agent, agent, chain, chain, seq)
	}
	add := func(cond string, v any) {
		conds = append(conds, cond)
		args = append(args, v)
	}
	if f.AgentID != "" {
		add(`agent_id = ?`, f.AgentID)
	}
	if f.SessionID != "" {
		add(`session_id = ?`, f.SessionID)
	}
	if f.Kind != "" {
		add(`kind = ?`, string(f.Kind))
	}
	if f.Outcome != "" {
		add(`outcome = ?`, f.Outcome)
	}
	if !f.Since.IsZero() {
		add(`at_us >= ?`, rowcodec.ToMicros(f.Since))
	}
	if !f.Until.IsZero() {
		add(`at_us < ?`, rowcodec.ToMicros(f.Until))
	}
	query := `SELECT ` + auditColumns + ` FROM audit_events WHERE ` + strings.Join(conds, ` AND `)
	query += ` ORDER BY agent_id, chain, seq LIMIT ?`
	args = append(args, int64(f.Limit+1))
	page := store.Page[store.AuditEvent]{Items: []store.AuditEvent{}}
	err = a.s.db.Query(ctx, query, args, func(r Rows) error {
		var row auditRow
		if err := r.Scan(row.dest()...); err != nil {
			return err
		}
		page.Items = append(page.Items, row.event())
		return nil
	})
	if err != nil {
		return store.Page[store.AuditEvent]{}, err
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		last := page.Items[f.Limit-1]
		page.Next = auditCursor(last.AgentID, last.Chain, last.Seq)
	}
	return page, nil
}

// auditCursor spells a listing's position: seq ":" len(agent) ":" agent
// chain (ids hold no control characters, but may hold ":").
func auditCursor(agent, chain string, seq int64) string {
	return strconv.FormatInt(seq, 10) + ":" + strconv.Itoa(len(agent)) + ":" + agent + chain
}

func parseAuditCursor(c string) (agent, chain string, seq int64, ok bool) {
	n, rest, found := strings.Cut(c, ":")
	if !found {
		return "", "", 0, false
	}
	l, rest, found := strings.Cut(rest, ":")
	if !found {
		return "", "", 0, false
	}
	seq, err1 := strconv.ParseInt(n, 10, 64)
	al, err2 := strconv.Atoi(l)
	if err1 != nil || err2 != nil || seq < 0 || al <= 0 || al > len(rest) {
		return "", "", 0, false
	}
	return rest[:al], rest[al:], seq, true
}

// queryFunc runs a query and calls fn for each row (a pool's or a
// transaction's Query).
type queryFunc func(query string, args []any, fn func(Rows) error) error

// finalHead is the detail of a removal event in an agent's chain that
// records the removed session's final head.
type finalHead struct {
	FinalSeq  int64  `json:"final_seq"`
	FinalHash string `json:"final_hash"`
}

// auditHeads reads every chain's head, in (agent, chain) order: the
// agents' chains, the chains of the sessions there, and the final heads
// of removed sessions (from their agents' chains) whose sessions are not
// there any more. final marks the last kind. Only tenant's chains are
// read.
func auditHeads(query queryFunc, tenant string) (heads []store.AuditHead, final map[[2]string]bool, err error) {
	args := []any{tenant}
	heads = []store.AuditHead{}
	final = map[[2]string]bool{}
	if err := query(auditAgentHeadsSQL, args, func(r Rows) error {
		var h store.AuditHead
		if err := r.Scan(&h.AgentID, &h.Seq, &h.Hash); err != nil {
			return err
		}
		heads = append(heads, h)
		return nil
	}); err != nil {
		return nil, nil, err
	}
	live := map[[2]string]bool{}
	if err := query(auditSessionHeadsSQL, args, func(r Rows) error {
		var h store.AuditHead
		if err := r.Scan(&h.AgentID, &h.Chain, &h.Seq, &h.Hash); err != nil {
			return err
		}
		live[[2]string{h.AgentID, h.Chain}] = true
		heads = append(heads, h)
		return nil
	}); err != nil {
		return nil, nil, err
	}
	last := map[[2]string]int{}
	if err := query(auditFinalHeadsSQL, args, func(r Rows) error {
		var agent, session, detail string
		if err := r.Scan(&agent, &session, &detail); err != nil {
			return err
		}
		var fh finalHead
		key := [2]string{agent, session}
		if json.Unmarshal([]byte(detail), &fh) != nil || fh.FinalSeq <= 0 || session == "" || live[key] {
			return nil
		}
		// A session id removed twice (created again after a removal):
		// the later removal's head, the longer chain, is its head.
		if i, ok := last[key]; ok {
			if fh.FinalSeq > heads[i].Seq {
				heads[i].Seq, heads[i].Hash = fh.FinalSeq, fh.FinalHash
			}
			return nil
		}
		last[key] = len(heads)
		final[key] = true
		heads = append(heads, store.AuditHead{AgentID: agent, Chain: session, Seq: fh.FinalSeq, Hash: fh.FinalHash})
		return nil
	}); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(heads, func(x, y store.AuditHead) int { return compareChain(x.AgentID, x.Chain, y.AgentID, y.Chain) })
	return heads, final, nil
}

// compareChain orders chains by agent, then chain ("" first), bytewise as
// the databases do.
func compareChain(agentX, chainX, agentY, chainY string) int {
	if c := strings.Compare(agentX, agentY); c != 0 {
		return c
	}
	return strings.Compare(chainX, chainY)
}

// Heads returns every chain's head in (agent, chain) order.
func (a *AuditFacet) Heads(ctx context.Context) ([]store.AuditHead, error) {
	heads, _, err := auditHeads(func(query string, args []any, fn func(Rows) error) error {
		return a.s.db.Query(ctx, query, args, fn)
	}, a.s.tenant)
	return heads, err
}

// chainCheck verifies one chain event by event, against its head (nil:
// none).
type chainCheck struct {
	agent   string
	chain   string
	head    *store.AuditHead
	final   bool // the head is a removed session's final head
	started bool
	next    int64 // the sequence number expected next
	prev    string
	first   int64
	last    int64
	lastH   string
	problem *store.AuditProblem
}

func (c *chainCheck) fail(seq int64, problem, reason string) {
	if c.problem == nil {
		c.problem = &store.AuditProblem{AgentID: c.agent, Chain: c.chain, Seq: seq, Problem: problem, Reason: reason}
	}
}

// add checks the next event of the chain (events come in sequence order).
func (c *chainCheck) add(r *auditRow) {
	if c.problem != nil {
		return
	}
	if c.head == nil {
		c.fail(r.Seq, store.AuditInserted, "the chain has no head")
		return
	}
	if r.Seq > c.head.Seq {
		c.fail(r.Seq, store.AuditInserted, fmt.Sprintf("the event is past the chain's head (%d)", c.head.Seq))
		return
	}
	if !c.started {
		c.started, c.first = true, r.Seq
		switch {
		case r.Seq == 1:
			if r.PrevHash != rowcodec.AuditZeroHash {
				c.fail(1, store.AuditChanged, "the first event does not start from the zero hash")
				return
			}
		case r.Kind == string(store.AuditCheckpoint):
			// A chain cut by retention starts at a checkpoint.
		default:
			c.fail(1, store.AuditRemoved, fmt.Sprintf("the chain starts at %d, which is not a checkpoint", r.Seq))
			return
		}
		c.next, c.prev = r.Seq, r.PrevHash
	}
	if r.Seq != c.next {
		c.fail(c.next, store.AuditRemoved, fmt.Sprintf("events %d to %d are missing", c.next, r.Seq-1))
		return
	}
	if r.PrevHash != c.prev {
		c.fail(r.Seq, store.AuditChanged, "it does not link to the event before it")
		return
	}
	if !r.hashOK() {
		c.fail(r.Seq, store.AuditChanged, "its hash does not match its fields")
		return
	}
	if c.chain != "" && r.SessionID != c.chain {
		c.fail(r.Seq, store.AuditChanged, "it is about another session than its chain's")
		return
	}
	c.next, c.prev, c.last, c.lastH = r.Seq+1, r.Hash, r.Seq, r.Hash
}

// end checks the end of the chain against its head.
func (c *chainCheck) end() {
	head := c.head
	if c.problem != nil || head == nil {
		return
	}
	switch {
	case !c.started && c.final:
		// A removed session's events, all pruned by retention: its agent's
		// chain keeps its final head.
	case !c.started:
		c.fail(1, store.AuditRemoved, "the chain's events are missing")
	case head.Seq > c.last:
		c.fail(c.last+1, store.AuditRemoved, fmt.Sprintf("events %d to %d at the end are missing", c.last+1, head.Seq))
	case head.Seq < c.last:
		c.fail(head.Seq+1, store.AuditInserted, "events past the chain's head")
	case head.Hash != c.lastH:
		c.fail(head.Seq, store.AuditHeadChanged, "the head's hash is not the last event's")
	}
}

// Verify checks every chain from one snapshot (see store.Audit.Verify).
func (a *AuditFacet) Verify(ctx context.Context) (store.AuditReport, error) {
	var rep store.AuditReport
	err := a.s.readTx(ctx, func(tx Tx) error {
		rep = store.AuditReport{Problems: []store.AuditProblem{}}
		heads, final, err := auditHeads(tx.Query, a.s.tenant)
		if err != nil {
			return err
		}
		hi := 0
		var cur *chainCheck
		done := func(c *chainCheck) {
			c.end()
			if c.problem != nil {
				rep.Problems = append(rep.Problems, *c.problem)
			}
			rep.Chains++
		}
		check := func(h *store.AuditHead) *chainCheck {
			return &chainCheck{agent: h.AgentID, chain: h.Chain, head: h, final: final[[2]string{h.AgentID, h.Chain}]}
		}
		// start closes the chains of the heads sorting before (agent,
		// chain) (they have no events) and starts that chain with its
		// head, if any.
		start := func(agent, chain string) *chainCheck {
			for hi < len(heads) && compareChain(heads[hi].AgentID, heads[hi].Chain, agent, chain) < 0 {
				done(check(&heads[hi]))
				hi++
			}
			if hi < len(heads) && heads[hi].AgentID == agent && heads[hi].Chain == chain {
				hi++
				return check(&heads[hi-1])
			}
			return &chainCheck{agent: agent, chain: chain}
		}
		err = tx.Query(auditAllSQL, []any{a.s.tenant}, func(r Rows) error {
			var row auditRow
			if err := r.Scan(row.dest()...); err != nil {
				return err
			}
			if cur == nil || cur.agent != row.AgentID || cur.chain != row.Chain {
				if cur != nil {
					done(cur)
				}
				cur = start(row.AgentID, row.Chain)
			}
			rep.Events++
			cur.add(&row)
			return nil
		})
		if err != nil {
			return err
		}
		if cur != nil {
			done(cur)
		}
		for ; hi < len(heads); hi++ {
			done(check(&heads[hi]))
		}
		rep.Digest = auditDigest(heads)
		return nil
	})
	if err != nil {
		return store.AuditReport{}, err
	}
	return rep, nil
}

// auditDigest is the digest over the chain heads, in their order.
func auditDigest(heads []store.AuditHead) string {
	return rowcodec.AuditDigest(func(yield func(string, string, int64, string) bool) {
		for _, h := range heads {
			if !yield(h.AgentID, h.Chain, h.Seq, h.Hash) {
				return
			}
		}
	})
}

// Checkpoint appends a checkpoint to one chain or to every chain, in one
// transaction (see store.Audit.Checkpoint).
func (a *AuditFacet) Checkpoint(ctx context.Context, agentID string) (int64, error) {
	if agentID != "" {
		if err := store.ValidateID("agent_id", agentID); err != nil {
			return 0, err
		}
	}
	var n int64
	err := a.s.write(ctx, func(tx Tx) error {
		n = 0
		agents, err := chainsOf(tx, a.s.tenant, agentID)
		if err != nil {
			return err
		}
		nowUS := rowcodec.ToMicros(a.s.now())
		for _, agent := range agents {
			if err := a.s.AppendAudit(tx, nowUS, AuditRecord{AgentID: agent, Kind: store.AuditCheckpoint, Outcome: store.OutcomeAllowed}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// chainsOf returns the agents of every chain of tenant, or agent's alone
// if it has one, in agent order.
func chainsOf(tx Tx, tenant, agent string) ([]string, error) {
	if agent != "" {
		var n int64
		if err := tx.Get(&n, auditHasChainSQL, agent, tenant); err != nil || n == 0 {
			return nil, err
		}
		return []string{agent}, nil
	}
	var agents []string
	err := tx.Select(&agents, auditAgentsSQL, tenant)
	return agents, err
}

// Prune cuts chains at their newest checkpoint before req.Before, in one
// transaction (see store.Audit.Prune).
func (a *AuditFacet) Prune(ctx context.Context, req store.AuditPruneRequest) (int64, error) {
	if req.Before.IsZero() {
		return 0, store.Invalid("before", "must be set")
	}
	if req.AgentID != "" {
		if err := store.ValidateID("agent_id", req.AgentID); err != nil {
			return 0, err
		}
	}
	var removed int64
	err := a.s.write(ctx, func(tx Tx) error {
		removed = 0
		agents, err := chainsOf(tx, a.s.tenant, req.AgentID)
		if err != nil {
			return err
		}
		for _, agent := range agents {
			n, err := pruneChain(tx, a.s.tenant, agent, req.Before)
			if err != nil {
				return err
			}
			removed += n
		}
		return nil
	})
	if err == nil && removed > 0 {
		a.s.log.Info("sqlcore: pruned audit chains at their checkpoints", "removed", removed)
	}
	return removed, err
}

// pruneChain cuts one chain at its newest checkpoint before before, after
// checking that the events it removes verify (a chain of tenant).
func pruneChain(tx Tx, tenant, agent string, before time.Time) (int64, error) {
	var cut, first int64
	if err := tx.Get(&cut, auditCheckpointSQL, agent, rowcodec.ToMicros(before), tenant); errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if err := tx.Get(&first, auditFirstSQL, agent, tenant); err != nil {
		return 0, err
	}
	if cut <= first {
		return 0, nil
	}
	head := &store.AuditHead{}
	if err := tx.Scan(auditHeadOfSQL, []any{agent, tenant}, &head.AgentID, &head.Seq, &head.Hash); err != nil {
		return 0, err
	}
	c := &chainCheck{agent: agent, head: head}
	if err := tx.Query(auditAgentSQL, []any{agent, cut, tenant}, func(r Rows) error {
		var row auditRow
		if err := r.Scan(row.dest()...); err != nil {
			return err
		}
		c.add(&row)
		return nil
	}); err != nil {
		return 0, err
	}
	if c.problem != nil {
		return 0, fmt.Errorf("%w: audit chain of agent %q does not verify at event %d (%s): not pruned",
			store.ErrCorrupt, agent, c.problem.Seq, c.problem.Reason)
	}
	res, err := tx.Exec(auditPruneSQL, agent, cut, tenant)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Restore inserts chains exactly as given (see store.Audit.Restore).
func (a *AuditFacet) Restore(ctx context.Context, req store.AuditRestoreRequest) (int64, error) {
	chains, err := restoreChains(req)
	if err != nil {
		return 0, err
	}
	var n int64
	err = a.s.write(ctx, func(tx Tx) error {
		n = 0
		for _, c := range chains {
			ok, err := putChain(tx, a.s.tenant, c)
			if err != nil {
				return err
			}
			if !ok {
				if req.SkipExisting {
					continue
				}
				return &store.ConflictError{Resource: "audit chain", ID: c.head.AgentID, Reason: "the agent has a chain"}
			}
			n += int64(len(c.events))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// putChain inserts a checked chain in tx, or reports false (writing
// nothing) when the chain exists (has a head or events). A session
// chain's head goes into its session's row when the session is there;
// a removed session's head is the final head its agent's chain records.
// The chain is written as tenant's.
func putChain(tx Tx, tenant string, c restoreChain) (bool, error) {
	var heads, events int64
	if c.head.Chain == "" {
		if err := tx.Get(&heads, auditHasChainSQL, c.head.AgentID, tenant); err != nil {
			return false, err
		}
	}
	if err := tx.Get(&events, auditHasEventsSQL, c.head.AgentID, c.head.Chain, tenant); err != nil {
		return false, err
	}
	if heads+events > 0 {
		return false, nil
	}
	for _, e := range c.events {
		if _, err := tx.Exec(auditInsertSQL, e.AgentID, e.Chain, e.Seq, e.AtUS, e.Kind, e.Outcome,
			e.SessionID, e.RequestID, e.Detail, e.PrevHash, e.Hash, tenant); err != nil {
			return false, err
		}
	}
	prev := rowcodec.AuditZeroHash
	if len(c.events) > 0 {
		prev = c.events[len(c.events)-1].PrevHash
	}
	if c.head.Chain != "" {
		res, err := tx.Exec(auditPutSessionHeadSQL, c.head.Seq, prev, c.head.Hash, c.head.Chain, c.head.AgentID, tenant)
		if err != nil {
			return false, err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err == nil, err
		}
		// No session to hold the head: its agent's chain must record its
		// removal (restored before it: agent chains come first).
		var removals int64
		if err := tx.Get(&removals, auditRemovalsOfSQL, c.head.AgentID, c.head.Chain, tenant); err != nil {
			return false, err
		}
		if removals == 0 {
			return false, store.Invalid("heads", "a session chain whose session is not there and whose removal its agent's chain does not record: restore the governed sessions first")
		}
		return true, nil
	}
	if _, err := tx.Exec(auditPutHeadSQL, c.head.AgentID, c.head.Seq, prev, c.head.Hash, tenant); err != nil {
		return false, err
	}
	return true, nil
}

// CheckAuditChain checks the chain of one agent as PutAuditChain does
// before writing it (sessionctl import --dry-run).
func CheckAuditChain(head store.AuditHead, events []store.AuditEvent) error {
	_, err := restoreChains(store.AuditRestoreRequest{Heads: []store.AuditHead{head}, Events: events})
	return err
}

// PutAuditChain writes one agent's audit chain (see
// store.RecordWriter.PutAuditChain).
func (w *recordWriter) PutAuditChain(head store.AuditHead, events []store.AuditEvent) (bool, error) {
	chains, err := restoreChains(store.AuditRestoreRequest{Heads: []store.AuditHead{head}, Events: events})
	if err != nil {
		return false, err
	}
	return putChain(w.tx, w.s.tenant, chains[0])
}

type restoreChain struct {
	head   store.AuditHead
	events []auditRow
}

// restoreChains groups and checks the chains of a restore request: every
// chain must verify and end at its head, every head have a chain.
func restoreChains(req store.AuditRestoreRequest) ([]restoreChain, error) {
	byChain := map[[2]string]*restoreChain{}
	var order [][2]string
	for _, h := range req.Heads {
		if err := store.ValidateID("heads.agent_id", h.AgentID); err != nil {
			return nil, err
		}
		if h.Chain != "" {
			if err := store.ValidateID("heads.chain", h.Chain); err != nil {
				return nil, err
			}
		}
		key := [2]string{h.AgentID, h.Chain}
		if _, dup := byChain[key]; dup {
			return nil, store.Invalid("heads", "two heads of one chain")
		}
		byChain[key] = &restoreChain{head: h}
		order = append(order, key)
	}
	for i := range req.Events {
		e := &req.Events[i]
		c, ok := byChain[[2]string{e.AgentID, e.Chain}]
		if !ok {
			return nil, store.Invalid("events", "an event of a chain without a head")
		}
		if !e.Kind.Valid() || !json.Valid(e.Detail) {
			return nil, store.Invalid("events", "an event of an unknown kind or with a detail that is not JSON")
		}
		c.events = append(c.events, auditRowOf(e))
	}
	// Agent chains before session chains: a removed session's chain is
	// checked against the removal its agent's chain records.
	slices.SortFunc(order, func(x, y [2]string) int { return compareChain(x[0], x[1], y[0], y[1]) })
	out := make([]restoreChain, 0, len(order))
	for _, key := range order {
		c := byChain[key]
		slices.SortFunc(c.events, func(x, y auditRow) int { return int(min(max(x.Seq-y.Seq, -1), 1)) })
		check := &chainCheck{agent: key[0], chain: key[1], head: &c.head, final: key[1] != ""}
		for i := range c.events {
			check.add(&c.events[i])
		}
		check.end()
		if check.problem != nil {
			return nil, store.Invalid("events", fmt.Sprintf("the chain of an agent does not verify at event %d (%s)", check.problem.Seq, check.problem.Problem))
		}
		out = append(out, *c)
	}
	return out, nil
}
