package pgstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// The calls of one session that share a batch (see usebatch.go) are
// decided together, on the session's row as the batch's transaction has
// locked it: the rows of such sessions are read once (useReadGroupsSQL,
// in the batch's first round trip), every call is decided in Go in queue
// order exactly as it would be alone (the checks of
// store.Session.CheckUse, the increments of store.Session.Apply, the
// durable expired mark, each decision's audit event with its sequence
// number, previous hash and hash computed as the chain's SQL computes
// them, rowcodec.AuditHash), and each row is written once with all its
// events in one statement (useWriteGroupSQL), those of all such sessions
// in one round trip. One conditional UPDATE per call would instead make
// each call after the first a statement of its own, with a new version of
// the same row, a statement trigger and a hash computed in SQL: measured
// on a durable server, the CPU the batch's backend spent per call, one
// call after the other on one row, was what bounded 32 callers on one
// session. The row's lock is held from the batch's lock-first step to its
// COMMIT, so nothing changes the row between its read and its write; the
// clock is read once per batch, as the batch's statements read it.

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

// useWriteGroupSQL writes what a batch decided on one session's row read
// with useReadGroupsSQL, in one statement: the row's new counters, status
// and audit head ($3 to $9: calls made, rate window start in
// milliseconds, rate window calls, status, audit seq, previous hash,
// hash) of session $2 of tenant $1, and the audit events of its
// decisions, one row of the arrays $11 to $17 each (seq, time in
// microseconds, kind, outcome, detail, previous hash, hash), of agent
// $10. (One such statement for each session measured cheaper than one
// statement joining the arrays of several sessions' rows to their rows.)
// It runs in the COMMIT's pipeline (commitWrites), so it fails in the
// server, with a division by zero (errNoGroupRow), when it finds no row
// to update: the server then skips the COMMIT. (The batch holds the row's
// lock from its read, so that is never expected.)
const useWriteGroupSQL = `WITH e AS (
		INSERT INTO audit_events (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant)
		SELECT $10::text, $2::text, e.seq, e.at, e.kind, e.outcome, $2::text, '', e.detail, e.prev, e.hash, $1::text
		FROM unnest($11::bigint[], $12::bigint[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[])
			AS e(seq, at, kind, outcome, detail, prev, hash)),
	u AS (
		UPDATE governed_sessions SET calls_made = $3::bigint, rate_window_start_ms = $4::bigint, rate_window_calls = $5::bigint,
			status = $6::text, audit_seq = $7::bigint, audit_prev = $8::text, audit_hash = $9::text
		WHERE id = $2::text AND tenant = $1::text RETURNING 1)
	SELECT 1 / count(*)::int FROM u`

// errNoGroupRow is a batch's write that found no row of its session (see
// useWriteGroupSQL): the batch fails, and its calls are decided alone.
var errNoGroupRow = errors.New("pgstore: use batch found no locked session row to write")

// groupWrite is what a batch decided on one session's row, as the
// arguments of useWriteGroupSQL.
type groupWrite struct {
	sess                            store.Session
	seq                             int64
	prev, hash                      string
	seqs, ats                       []int64
	kinds, outcomes, details, prevs []string
	hashes                          []string
}

// args returns the arguments of useWriteGroupSQL.
func (w *groupWrite) args(tenant string) []any {
	s := &w.sess
	return []any{tenant, s.ID, s.CallsMade, rowcodec.ToMillis(s.RateWindowStart), s.RateWindowCalls, string(s.Status),
		w.seq, w.prev, w.hash, s.AgentID, w.seqs, w.ats, w.kinds, w.outcomes, w.details, w.prevs, w.hashes}
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
// and returns what they write (nil: nothing). Each call gets what it
// would get alone on that row after its predecessors (decideLocked, or
// the conditional UPDATE that agrees with it): a missing session is
// refused without an event; a refusal is audited, and the first that
// finds an active session past its expiry marks it expired and audits
// that first; an allowed call is counted and audited. Events are at now
// (in microseconds), as the batch's statements put them; the expired
// mark's at now in milliseconds, as MarkExpired puts it.
func (g *Governance) decideGroup(now time.Time, row *govHeadRow, calls []*useCall) (*groupWrite, error) {
	if row == nil {
		for _, c := range calls {
			c.v = verdict{refusal: &store.NotFoundError{Resource: "session", ID: c.req.SessionID}}
		}
		return nil, nil
	}
	w := &groupWrite{sess: row.session(), seq: row.AuditSeq, prev: row.AuditPrev, hash: row.AuditHash}
	sess := &w.sess
	if !g.s.cfg.auditOff {
		// The events' columns, sized once: each call appends at most one
		// event, and the first that finds the session expired one more.
		n := len(calls) + 1
		ints, strs := make([]int64, 2*n), make([]string, 5*n)
		w.seqs, w.ats = ints[:0:n], ints[n:n:2*n]
		w.kinds, w.outcomes, w.details, w.prevs, w.hashes = strs[:0:n], strs[n:n:2*n], strs[2*n:2*n:3*n], strs[3*n:3*n:4*n], strs[4*n:4*n:5*n]
	}
	nowUS, nowMS := rowcodec.ToMicros(now), rowcodec.ToMillis(now)
	var uses useAudits
	// audit appends the event of rec, or, when rec is nil, of the allowed
	// use of tools.
	audit := func(atUS int64, rec *sqlcore.AuditRecord, tools []string) error {
		if g.s.cfg.auditOff {
			return nil
		}
		var payload []byte
		var detail string
		var err error
		if rec != nil {
			payload, detail, err = sqlcore.AuditPayload(atUS, *rec)
		} else {
			var use sqlcore.AuditRecord
			use, payload, detail, err = uses.payload(atUS, sess.AgentID, sess.ID, tools)
			rec = &use
		}
		if err != nil {
			return err
		}
		next, ok := rowcodec.AuditHash(w.hash, w.seq+1, sess.AgentID, payload)
		if !ok {
			return fmt.Errorf("%w: session %s", errAuditHead, sess.ID)
		}
		w.seqs = append(w.seqs, w.seq+1)
		w.ats = append(w.ats, atUS)
		w.kinds = append(w.kinds, string(rec.Kind))
		w.outcomes = append(w.outcomes, rec.Outcome)
		w.details = append(w.details, detail)
		w.prevs = append(w.prevs, w.hash)
		w.hashes = append(w.hashes, next)
		w.seq, w.prev, w.hash = w.seq+1, w.hash, next
		return nil
	}
	for _, c := range calls {
		refusal := sess.CheckUse(c.req.AgentID, c.tools, now)
		if refusal != nil {
			if errors.Is(refusal, store.ErrExpired) && sess.Status == store.StatusActive {
				sess.Status = store.StatusExpired
				if err := audit(nowMS*1000, &sqlcore.AuditRecord{AgentID: sess.AgentID, Kind: store.AuditExpire,
					Outcome: store.OutcomeAllowed, SessionID: sess.ID}, nil); err != nil {
					return nil, err
				}
			}
			if err := audit(nowUS, &sqlcore.AuditRecord{AgentID: sess.AgentID, Kind: store.AuditUse,
				Outcome: store.AuditOutcome(refusal), SessionID: sess.ID, Detail: refusal}, nil); err != nil {
				return nil, err
			}
			c.v = verdict{refusal: refusal}
			continue
		}
		if n := int64(len(c.tools)); n > 0 {
			sess.Apply(n, now)
			// As stored, and as the conditional UPDATE returns it.
			sess.RateWindowStart = rowcodec.FromMillis(rowcodec.ToMillis(sess.RateWindowStart))
		}
		if err := audit(nowUS, nil, c.tools); err != nil {
			return nil, err
		}
		out := *sess
		out.DelegationChain, out.AuthorizedTools, out.AuthorizedCredentials = clone3(sess.DelegationChain, sess.AuthorizedTools, sess.AuthorizedCredentials)
		c.v = verdict{sess: out}
	}
	return w, nil
}

// clone3 returns copies of a, b and c, as slices.Clone would (nil for
// nil), in one allocation: each is a part of one slice, its capacity cut
// at its length, so that an append to one copies rather than overwrites
// the next. Each caller of a batch gets a session of its own whose slices
// it may change.
func clone3(a, b, c []string) ([]string, []string, []string) {
	all := make([]string, len(a)+len(b)+len(c))
	part := func(s []string, at int) ([]string, int) {
		if s == nil {
			return nil, at
		}
		end := at + copy(all[at:], s)
		return all[at:end:end], end
	}
	a2, at := part(a, 0)
	b2, at := part(b, at)
	c2, _ := part(c, at)
	return a2, b2, c2
}
