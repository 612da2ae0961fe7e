package pgstore

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// The calls of one session that share a batch (see usebatch.go) are
// decided together, on the session's row as the batch's transaction has
// locked it: the row is read once (useReadGroupsSQL), every call is
// decided in Go in queue order exactly as it would be alone (the checks of
// store.Session.CheckUse, the increments of store.Session.Apply, the
// durable expired mark, each decision's audit event with its sequence
// number, previous hash and hash computed as the chain's SQL computes
// them), and the row and the events are written in one statement
// (useWriteGroupsSQL) for all such sessions of the batch. One conditional
// UPDATE per call would instead make each call after the first a
// statement of its own, a new version of the same row, a statement
// trigger and a hash computed in SQL: measured on a durable server, the
// CPU of the batch's backend per call was what bounded 32 callers on one
// session.

// govHeadRow is a governed_sessions row with the head of its audit chain.
type govHeadRow struct {
	govRow
	AuditSeq  int64  `db:"audit_seq"`
	AuditPrev string `db:"audit_prev"`
	AuditHash string `db:"audit_hash"`
}

// useReadGroupsSQL reads the rows of sessions $2 of tenant $1 with the
// heads of their audit chains, locking them in id order: in a batch the
// lock-first step has locked them already (or found them held, and the
// batch reruns without them), and a side queue's batch waits here for its
// session's row.
const useReadGroupsSQL = `SELECT ` + govColumns + `, audit_seq, audit_prev, audit_hash FROM governed_sessions
	WHERE tenant = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE`

// useWriteGroupsSQL writes what a batch decided on the rows it read with
// useReadGroupsSQL, in one statement: the new counters, status and audit
// head of each session of tenant $1, one row of the arrays $2 to $9 each
// (id, calls made, rate window start in milliseconds, rate window calls,
// status, audit seq, previous hash, hash), and the audit events, one row
// of the arrays $10 to $18 each (agent, session, seq, time in
// microseconds, kind, outcome, detail, previous hash, hash).
const useWriteGroupsSQL = `WITH e AS (
		INSERT INTO audit_events (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant)
		SELECT e.agent, e.sid, e.seq, e.at, e.kind, e.outcome, e.sid, '', e.detail, e.prev, e.hash, $1::text
		FROM unnest($10::text[], $11::text[], $12::bigint[], $13::bigint[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[])
			AS e(agent, sid, seq, at, kind, outcome, detail, prev, hash))
	UPDATE governed_sessions AS g SET calls_made = r.calls, rate_window_start_ms = r.wstart, rate_window_calls = r.wcalls,
		status = r.status, audit_seq = r.seq, audit_prev = r.prev, audit_hash = r.hash
	FROM unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::text[])
		AS r(id, calls, wstart, wcalls, status, seq, prev, hash)
	WHERE g.tenant = $1::text AND g.id = r.id`

// groupWrite gathers the rows and events a batch decided in Go, as the
// arrays of useWriteGroupsSQL.
type groupWrite struct {
	ids, statuses, prevs, hashes []string
	calls, wstarts, wcalls, seqs []int64

	evAgents, evSessions, evKinds, evOutcomes, evDetails, evPrevs, evHashes []string
	evSeqs, evAts                                                           []int64
}

// args returns the arguments of useWriteGroupsSQL.
func (w *groupWrite) args(tenant string) []any {
	return []any{tenant, w.ids, w.calls, w.wstarts, w.wcalls, w.statuses, w.seqs, w.prevs, w.hashes,
		w.evAgents, w.evSessions, w.evSeqs, w.evAts, w.evKinds, w.evOutcomes, w.evDetails, w.evPrevs, w.evHashes}
}

// errAuditHead is a session row whose audit head is not a hash: the
// batch fails, and its calls are decided alone.
var errAuditHead = errors.New("pgstore: a governed session's audit head is not a SHA-256 hash")

// readGroups collects the rows useReadGroupsSQL returned, by id.
func readGroups(rows pgx.Rows, err error) (map[string]*govHeadRow, error) {
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[govHeadRow])
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*govHeadRow, len(got))
	for i := range got {
		byID[got[i].ID] = &got[i]
	}
	return byID, nil
}

// decideGroup decides calls, the calls of one session in queue order, on
// its row as read under the batch's lock (nil: no such session), at now,
// and adds what they write to w. Each call gets what it would get alone
// on that row after its predecessors (decideLocked, or the conditional
// UPDATE that agrees with it): a missing session is refused without an
// event; a refusal is audited, and the first that finds an active session
// past its expiry marks it expired and audits that first; an allowed call
// is counted and audited. Events are at now (in microseconds), as the
// batch's statements put them; the expired mark's at now in
// milliseconds, as MarkExpired puts it.
func (g *Governance) decideGroup(now time.Time, row *govHeadRow, calls []*useCall, w *groupWrite) error {
	if row == nil {
		for _, c := range calls {
			c.v = verdict{refusal: &store.NotFoundError{Resource: "session", ID: c.req.SessionID}}
		}
		return nil
	}
	sess := row.session()
	seq, prev, hash := row.AuditSeq, row.AuditPrev, row.AuditHash
	nowUS, nowMS := rowcodec.ToMicros(now), rowcodec.ToMillis(now)
	audit := func(atUS int64, rec sqlcore.AuditRecord) error {
		if g.s.cfg.auditOff {
			return nil
		}
		payload, detail, err := sqlcore.AuditPayload(atUS, rec)
		if err != nil {
			return err
		}
		next, ok := rowcodec.AuditHash(hash, seq+1, sess.AgentID, payload)
		if !ok {
			return fmt.Errorf("%w: session %s", errAuditHead, sess.ID)
		}
		w.evAgents = append(w.evAgents, sess.AgentID)
		w.evSessions = append(w.evSessions, sess.ID)
		w.evSeqs = append(w.evSeqs, seq+1)
		w.evAts = append(w.evAts, atUS)
		w.evKinds = append(w.evKinds, string(rec.Kind))
		w.evOutcomes = append(w.evOutcomes, rec.Outcome)
		w.evDetails = append(w.evDetails, detail)
		w.evPrevs = append(w.evPrevs, hash)
		w.evHashes = append(w.evHashes, next)
		seq, prev, hash = seq+1, hash, next
		return nil
	}
	for _, c := range calls {
		refusal := sess.CheckUse(c.req.AgentID, c.tools, now)
		if refusal != nil {
			if errors.Is(refusal, store.ErrExpired) && sess.Status == store.StatusActive {
				sess.Status = store.StatusExpired
				if err := audit(nowMS*1000, sqlcore.AuditRecord{AgentID: sess.AgentID, Kind: store.AuditExpire,
					Outcome: store.OutcomeAllowed, SessionID: sess.ID}); err != nil {
					return err
				}
			}
			if err := audit(nowUS, sqlcore.AuditRecord{AgentID: sess.AgentID, Kind: store.AuditUse,
				Outcome: store.AuditOutcome(refusal), SessionID: sess.ID, Detail: refusal}); err != nil {
				return err
			}
			c.v = verdict{refusal: refusal}
			continue
		}
		if n := int64(len(c.tools)); n > 0 {
			sess.Apply(n, now)
			// As stored, and as the conditional UPDATE returns it.
			sess.RateWindowStart = rowcodec.FromMillis(rowcodec.ToMillis(sess.RateWindowStart))
		}
		if err := audit(nowUS, sqlcore.UseAudit(sess.AgentID, sess.ID, "", c.tools)); err != nil {
			return err
		}
		out := sess
		out.DelegationChain = slices.Clone(sess.DelegationChain)
		out.AuthorizedTools = slices.Clone(sess.AuthorizedTools)
		out.AuthorizedCredentials = slices.Clone(sess.AuthorizedCredentials)
		c.v = verdict{sess: out}
	}
	w.ids = append(w.ids, sess.ID)
	w.calls = append(w.calls, sess.CallsMade)
	w.wstarts = append(w.wstarts, rowcodec.ToMillis(sess.RateWindowStart))
	w.wcalls = append(w.wcalls, sess.RateWindowCalls)
	w.statuses = append(w.statuses, string(sess.Status))
	w.seqs = append(w.seqs, seq)
	w.prevs = append(w.prevs, prev)
	w.hashes = append(w.hashes, hash)
	return nil
}
