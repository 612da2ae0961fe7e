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

// The audit trail (see store.Audit): one hash chain per agent in
// audit_events, its head in audit_heads. A decision appends its event with
// AppendAudit inside its own transaction. The head's upsert computes the
// new hash in SQL (Dialect.AuditChain) from the head it locks, so that an
// append is two statements and, on PostgreSQL, can join a decision's own
// statement (see AuditedUpdateSQL).

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
		(agent_id, seq, at_ms, kind, outcome, session_id, request_id, detail, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	auditColumns   = `agent_id, seq, at_ms, kind, outcome, session_id, request_id, detail, prev_hash, hash`
	auditHeadsSQL  = `SELECT agent_id, seq, hash FROM audit_heads ORDER BY agent_id`
	auditAllSQL    = `SELECT ` + auditColumns + ` FROM audit_events ORDER BY agent_id, seq`
	auditAgentSQL  = `SELECT ` + auditColumns + ` FROM audit_events WHERE agent_id = ? AND seq <= ? ORDER BY seq`
	auditHeadOfSQL = `SELECT agent_id, seq, hash FROM audit_heads WHERE agent_id = ?`
	// auditCheckpointSQL finds the newest checkpoint of a chain made
	// before a time, walking the chain backwards on its primary key.
	auditCheckpointSQL = `SELECT seq FROM audit_events
		WHERE agent_id = ? AND kind = 'checkpoint' AND at_ms < ? ORDER BY seq DESC LIMIT 1`
	auditFirstSQL     = `SELECT seq FROM audit_events WHERE agent_id = ? ORDER BY seq LIMIT 1`
	auditPruneSQL     = `DELETE FROM audit_events WHERE agent_id = ? AND seq < ?`
	auditAgentsSQL    = `SELECT agent_id FROM audit_heads ORDER BY agent_id`
	auditHasChainSQL  = `SELECT count(*) FROM audit_heads WHERE agent_id = ?`
	auditHasEventsSQL = `SELECT count(*) FROM audit_events WHERE agent_id = ?`
	auditPutHeadSQL   = `INSERT INTO audit_heads (agent_id, seq, prev_hash, hash) VALUES (?, ?, ?, ?)`
)

// auditHeadSQL spells the head's upsert for d: it takes the next sequence
// number of the chain of ?1, computes the new hash from the old head (or
// the zero hash) and the payload ?2, and returns the new head.
func auditHeadSQL(d *Dialect) string {
	zero := "'" + rowcodec.AuditZeroHash + "'"
	return `INSERT INTO audit_heads (agent_id, seq, prev_hash, hash)
		VALUES (?1, 1, ` + zero + `, ` + d.AuditChain(zero, "1", "?1", "?2") + `)
		ON CONFLICT (agent_id) DO UPDATE SET seq = audit_heads.seq + 1, prev_hash = audit_heads.hash,
		hash = ` + d.AuditChain("audit_heads.hash", "audit_heads.seq + 1", "audit_heads.agent_id", "?2") + `
		RETURNING seq, prev_hash, hash`
}

// AppendAudit appends rec to its agent's chain at atMS, inside the
// caller's write transaction.
func (s *Store) AppendAudit(tx Tx, atMS int64, rec AuditRecord) error {
	if s.cfg.AuditOff {
		return nil
	}
	detail, err := AuditDetail(rec.Detail)
	if err != nil {
		return err
	}
	payload := rowcodec.AuditPayload(atMS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, detail)
	var seq int64
	var prev, hash string
	if err := tx.Scan(s.q.auditHead, []any{rec.AgentID, payload}, &seq, &prev, &hash); err != nil {
		return err
	}
	_, err = tx.Exec(auditInsertSQL, rec.AgentID, seq, atMS, string(rec.Kind), rec.Outcome,
		rec.SessionID, rec.RequestID, detail, prev, hash)
	return err
}

// AuditPayload returns the payload parameter of an event, for a backend
// that appends it within its own statement.
func AuditPayload(atMS int64, rec AuditRecord) (payload []byte, detail string, err error) {
	detail, err = AuditDetail(rec.Detail)
	if err != nil {
		return nil, "", err
	}
	return rowcodec.AuditPayload(atMS, string(rec.Kind), rec.Outcome, rec.SessionID, rec.RequestID, detail), detail, nil
}

// AuditedUpdateSQL wraps an UPDATE ... RETURNING statement of a governed
// session (one whose RETURNING list has agent_id) so that the same
// statement appends an audit event for the row it updated, for databases
// whose WITH may hold data-modifying statements (PostgreSQL). The event is
// kind, outcome "ok", session sessionParam, at atParam, with the payload
// and detail parameters (see AuditPayload); request id empty. The wrapped
// statement returns what the update returns; when it updates nothing, it
// appends nothing.
func AuditedUpdateSQL(d *Dialect, update string, kind store.AuditKind, atParam, sessionParam, payloadParam, detailParam string) string {
	zero := "'" + rowcodec.AuditZeroHash + "'"
	return `WITH u AS (` + update + `),
	h AS (INSERT INTO audit_heads (agent_id, seq, prev_hash, hash)
		SELECT u.agent_id, 1, ` + zero + `, ` + d.AuditChain(zero, "1", "u.agent_id", payloadParam) + ` FROM u
		ON CONFLICT (agent_id) DO UPDATE SET seq = audit_heads.seq + 1, prev_hash = audit_heads.hash,
		hash = ` + d.AuditChain("audit_heads.hash", "audit_heads.seq + 1", "audit_heads.agent_id", payloadParam) + `
		RETURNING agent_id, seq, prev_hash, hash),
	e AS (INSERT INTO audit_events (` + auditColumns + `)
		SELECT h.agent_id, h.seq, ` + atParam + `, '` + string(kind) + `', 'ok', ` + sessionParam + `, '', ` + detailParam + `, h.prev_hash, h.hash FROM h)
	SELECT * FROM u`
}

// auditRow is an audit_events row.
type auditRow struct {
	AgentID   string `db:"agent_id"`
	Seq       int64  `db:"seq"`
	AtMS      int64  `db:"at_ms"`
	Kind      string `db:"kind"`
	Outcome   string `db:"outcome"`
	SessionID string `db:"session_id"`
	RequestID string `db:"request_id"`
	Detail    string `db:"detail"`
	PrevHash  string `db:"prev_hash"`
	Hash      string `db:"hash"`
}

func (r *auditRow) dest() []any {
	return []any{&r.AgentID, &r.Seq, &r.AtMS, &r.Kind, &r.Outcome, &r.SessionID, &r.RequestID, &r.Detail, &r.PrevHash, &r.Hash}
}

func (r *auditRow) event() store.AuditEvent {
	detail := json.RawMessage(r.Detail)
	if !json.Valid(detail) {
		// Verify reports a changed event; listing still shows it, as a
		// JSON string.
		b, _ := json.Marshal(r.Detail)
		detail = b
	}
	return store.AuditEvent{AgentID: r.AgentID, Seq: r.Seq, At: rowcodec.FromMillis(r.AtMS), Kind: store.AuditKind(r.Kind),
		Outcome: r.Outcome, SessionID: r.SessionID, RequestID: r.RequestID, Detail: detail, PrevHash: r.PrevHash, Hash: r.Hash}
}

func auditRowOf(e *store.AuditEvent) auditRow {
	return auditRow{AgentID: e.AgentID, Seq: e.Seq, AtMS: rowcodec.ToMillis(e.At), Kind: string(e.Kind), Outcome: e.Outcome,
		SessionID: e.SessionID, RequestID: e.RequestID, Detail: string(e.Detail), PrevHash: e.PrevHash, Hash: e.Hash}
}

// AuditFacet is the audit-trail facet (see store.Audit).
type AuditFacet struct{ s *Store }

// Audit returns the audit-trail facet.
func (s *Store) Audit() store.Audit { return &AuditFacet{s: s} }

// List returns a page of events in (agent, sequence) order.
func (a *AuditFacet) List(ctx context.Context, f store.AuditFilter) (store.Page[store.AuditEvent], error) {
	f, err := f.Normalize()
	if err != nil {
		return store.Page[store.AuditEvent]{}, err
	}
	var conds []string
	var args []any
	if f.After != "" {
		agent, seq, ok := parseAuditCursor(f.After)
		if !ok {
			return store.Page[store.AuditEvent]{}, store.Invalid("after", "not a cursor of this listing")
		}
		conds = append(conds, `(agent_id > ? OR (agent_id = ? AND seq > ?))`)
		args = append(args, agent, agent, seq)
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
		add(`at_ms >= ?`, rowcodec.ToMillis(f.Since))
	}
	if !f.Until.IsZero() {
		add(`at_ms < ?`, rowcodec.ToMillis(f.Until))
	}
	query := `SELECT ` + auditColumns + ` FROM audit_events`
	if len(conds) > 0 {
		query += ` WHERE ` + strings.Join(conds, ` AND `)
	}
	query += ` ORDER BY agent_id, seq LIMIT ?`
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
		page.Next = strconv.FormatInt(last.Seq, 10) + ":" + last.AgentID
	}
	return page, nil
}

func parseAuditCursor(c string) (agent string, seq int64, ok bool) {
	n, agent, found := strings.Cut(c, ":")
	if !found || agent == "" {
		return "", 0, false
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return agent, seq, err == nil && seq >= 0
}

// Heads returns every chain's head in agent order.
func (a *AuditFacet) Heads(ctx context.Context) ([]store.AuditHead, error) {
	heads := []store.AuditHead{}
	err := a.s.db.Query(ctx, auditHeadsSQL, nil, func(r Rows) error {
		var h store.AuditHead
		if err := r.Scan(&h.AgentID, &h.Seq, &h.Hash); err != nil {
			return err
		}
		heads = append(heads, h)
		return nil
	})
	return heads, err
}

// chainCheck verifies one chain event by event, against its head (nil:
// none).
type chainCheck struct {
	agent   string
	head    *store.AuditHead
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
		c.problem = &store.AuditProblem{AgentID: c.agent, Seq: seq, Problem: problem, Reason: reason}
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
	payload := rowcodec.AuditPayload(r.AtMS, r.Kind, r.Outcome, r.SessionID, r.RequestID, r.Detail)
	if h, ok := rowcodec.AuditHash(r.PrevHash, r.Seq, r.AgentID, payload); !ok || h != r.Hash {
		c.fail(r.Seq, store.AuditChanged, "its hash does not match its fields")
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
		var heads []store.AuditHead
		if err := tx.Query(auditHeadsSQL, nil, func(r Rows) error {
			var h store.AuditHead
			if err := r.Scan(&h.AgentID, &h.Seq, &h.Hash); err != nil {
				return err
			}
			heads = append(heads, h)
			return nil
		}); err != nil {
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
		// start closes the chains of the heads sorting before agent (they
		// have no events) and starts agent's chain with its head, if any.
		start := func(agent string) *chainCheck {
			for hi < len(heads) && heads[hi].AgentID < agent {
				done(&chainCheck{agent: heads[hi].AgentID, head: &heads[hi]})
				hi++
			}
			c := &chainCheck{agent: agent}
			if hi < len(heads) && heads[hi].AgentID == agent {
				c.head = &heads[hi]
				hi++
			}
			return c
		}
		err := tx.Query(auditAllSQL, nil, func(r Rows) error {
			var row auditRow
			if err := r.Scan(row.dest()...); err != nil {
				return err
			}
			if cur == nil || cur.agent != row.AgentID {
				if cur != nil {
					done(cur)
				}
				cur = start(row.AgentID)
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
			done(&chainCheck{agent: heads[hi].AgentID, head: &heads[hi]})
		}
		rep.Digest = rowcodec.AuditDigest(func(yield func(string, int64, string) bool) {
			for _, h := range heads {
				if !yield(h.AgentID, h.Seq, h.Hash) {
					return
				}
			}
		})
		return nil
	})
	if err != nil {
		return store.AuditReport{}, err
	}
	return rep, nil
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
		agents, err := chainsOf(tx, agentID)
		if err != nil {
			return err
		}
		nowMS := rowcodec.ToMillis(a.s.now())
		for _, agent := range agents {
			if err := a.s.AppendAudit(tx, nowMS, AuditRecord{AgentID: agent, Kind: store.AuditCheckpoint, Outcome: store.OutcomeAllowed}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// chainsOf returns the agents of every chain, or agent's alone if it has
// one, in agent order.
func chainsOf(tx Tx, agent string) ([]string, error) {
	if agent != "" {
		var n int64
		if err := tx.Get(&n, auditHasChainSQL, agent); err != nil || n == 0 {
			return nil, err
		}
		return []string{agent}, nil
	}
	var agents []string
	err := tx.Select(&agents, auditAgentsSQL)
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
		agents, err := chainsOf(tx, req.AgentID)
		if err != nil {
			return err
		}
		for _, agent := range agents {
			n, err := pruneChain(tx, agent, req.Before)
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
// checking that the events it removes verify.
func pruneChain(tx Tx, agent string, before time.Time) (int64, error) {
	var cut, first int64
	if err := tx.Get(&cut, auditCheckpointSQL, agent, rowcodec.ToMillis(before)); errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if err := tx.Get(&first, auditFirstSQL, agent); err != nil {
		return 0, err
	}
	if cut <= first {
		return 0, nil
	}
	head := &store.AuditHead{}
	if err := tx.Scan(auditHeadOfSQL, []any{agent}, &head.AgentID, &head.Seq, &head.Hash); err != nil {
		return 0, err
	}
	c := &chainCheck{agent: agent, head: head}
	if err := tx.Query(auditAgentSQL, []any{agent, cut}, func(r Rows) error {
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
	res, err := tx.Exec(auditPruneSQL, agent, cut)
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
			ok, err := putChain(tx, c)
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
// nothing) when its agent has a chain or events.
func putChain(tx Tx, c restoreChain) (bool, error) {
	var heads, events int64
	if err := tx.Get(&heads, auditHasChainSQL, c.head.AgentID); err != nil {
		return false, err
	}
	if err := tx.Get(&events, auditHasEventsSQL, c.head.AgentID); err != nil {
		return false, err
	}
	if heads+events > 0 {
		return false, nil
	}
	for _, e := range c.events {
		if _, err := tx.Exec(auditInsertSQL, e.AgentID, e.Seq, e.AtMS, e.Kind, e.Outcome,
			e.SessionID, e.RequestID, e.Detail, e.PrevHash, e.Hash); err != nil {
			return false, err
		}
	}
	if _, err := tx.Exec(auditPutHeadSQL, c.head.AgentID, c.head.Seq, c.events[len(c.events)-1].PrevHash, c.head.Hash); err != nil {
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
	return putChain(w.tx, chains[0])
}

type restoreChain struct {
	head   store.AuditHead
	events []auditRow
}

// restoreChains groups and checks the chains of a restore request: every
// chain must verify and end at its head, every head have a chain.
func restoreChains(req store.AuditRestoreRequest) ([]restoreChain, error) {
	byAgent := map[string]*restoreChain{}
	var order []string
	for _, h := range req.Heads {
		if err := store.ValidateID("heads.agent_id", h.AgentID); err != nil {
			return nil, err
		}
		if _, dup := byAgent[h.AgentID]; dup {
			return nil, store.Invalid("heads", "two heads of one agent")
		}
		byAgent[h.AgentID] = &restoreChain{head: h}
		order = append(order, h.AgentID)
	}
	for i := range req.Events {
		e := &req.Events[i]
		c, ok := byAgent[e.AgentID]
		if !ok {
			return nil, store.Invalid("events", "an event of an agent without a head")
		}
		if !e.Kind.Valid() || !json.Valid(e.Detail) {
			return nil, store.Invalid("events", "an event of an unknown kind or with a detail that is not JSON")
		}
		c.events = append(c.events, auditRowOf(e))
	}
	out := make([]restoreChain, 0, len(order))
	for _, agent := range order {
		c := byAgent[agent]
		slices.SortFunc(c.events, func(x, y auditRow) int { return int(min(max(x.Seq-y.Seq, -1), 1)) })
		check := &chainCheck{agent: agent, head: &c.head}
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
