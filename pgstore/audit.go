package pgstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// auditChainSQL is the dialect's AuditChain: an audit event's hash
// (rowcodec.AuditHash) in SQL, so that an append takes the next sequence
// number and hash in one upsert of the chain's head, and a governed Use
// appends in its own statement.
func auditChainSQL(prev, seq, agent, payload string) string {
	return `encode(sha256(decode(` + prev + `, 'hex') || int8send(CAST(` + seq + ` AS bigint)) || convert_to(` +
		agent + `, 'UTF8') || decode('0a', 'hex') || CAST(` + payload + ` AS bytea)), 'hex')`
}

// Audit returns the audit trail (see store.Audit).
func (s *Store) Audit() store.Audit { return s.core.Audit() }

// Spend returns the spend facet (see store.Spend).
func (s *Store) Spend() store.Spend { return s.core.Spend() }

// govUseAuditedSQL is govUseSQL that also advances the audit head kept in
// the session's row and appends the allowed use's event to the session's
// chain, in the same statement (see sqlcore.AuditedUpdateSQL): the hot
// path stays one round trip and writes no row of the agent's, so that the
// sessions of one agent decide in parallel. Parameters 1 to 6 are
// govUseSQL's; 7 is the event's payload, 8 its detail
// (sqlcore.AuditPayload) and 9 its time in microseconds. The event is the
// session's tenant's (6).
var govUseAuditedSQL = sqlcore.AuditedUpdateSQL(
	strings.Replace(
		strings.Replace(govUseSQL, "\n\t\tWHERE id = $3::text", ",\n\t\t"+sqlcore.AuditHeadSet(dialect, "$7::bytea")+"\n\t\tWHERE id = $3::text", 1),
		"RETURNING "+govColumns, "RETURNING "+govColumns+", "+sqlcore.AuditHeadColumns, 1),
	govColumns, store.AuditUse, "$9::bigint", "$3::text", "$8::text", "$6::text")

// govUseManySQL is govUseAuditedSQL for many calls of one tool each, of
// different sessions, in one statement: each call is a row of the arrays
// $2 (session ids), $3 (agents, empty for any), $4 (the tool), $5 (audit
// payloads) and $7 (audit details); $1 is the time in milliseconds, $6 the
// tenant, $8 the time in microseconds.
// It returns the rows of the calls it allows (with the session's id) and
// appends their audit events; a call it refuses returns no row. The
// sessions must be distinct (an UPDATE changes a row once), and their rows
// locked by the transaction beforehand, in id order (useLockManySQL): the
// join's order is then no lock order. govUseManyFirstSQL locks them itself.
var govUseManySQL = sqlcore.AuditedUpdateSQL(
	strings.NewReplacer(
		"$2::bigint", "1::bigint",
		"$3::text", "r.sid",
		"$4::text", "r.agent",
		"$5::text[]", "ARRAY[r.tool]",
		"\n\t\tWHERE id = ", ",\n\t\t"+sqlcore.AuditHeadSet(dialect, "r.payload")+
			"\n\t\tFROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $7::text[]) AS r(sid, agent, tool, payload, detail)"+
			"\n\t\tWHERE id = ",
		"RETURNING "+govColumns, "RETURNING "+govColumns+", "+sqlcore.AuditHeadColumns+", r.detail AS use_detail",
	).Replace(govUseSQL),
	govColumns, store.AuditUse, "$8::bigint", "u.id", "u.use_detail", "$6::text")

// useStatement returns the conditional UPDATE of a governed Use without a
// request id, and its arguments: govUseAuditedSQL, which appends the
// audit event of the allowed use in the same statement, or govUseSQL on a
// store that audits nothing (benchmarks only). Every path that runs the
// hot UPDATE takes its statement from here, so that no allowed call goes
// unaudited.
func (g *Governance) useStatement(now time.Time, req store.UseRequest, tools []string) (string, []any, error) {
	nowMS, nowUS := rowcodec.ToMillis(now), rowcodec.ToMicros(now)
	args := []any{nowMS, int64(len(tools)), req.SessionID, req.AgentID, tools, g.tenant()}
	if g.s.cfg.auditOff {
		return govUseSQL, args, nil
	}
	payload, detail, err := sqlcore.AuditPayload(nowUS, sqlcore.UseAudit("", req.SessionID, "", tools))
	if err != nil {
		return "", nil, err
	}
	return govUseAuditedSQL, append(args, payload, detail, nowUS), nil
}

// govUseManyFirstSQL is govUseManySQL for a batch that has not locked its
// rows beforehand (decideBatch's first try, with no lock-first step): it
// locks each row as it updates it, in the join's order, and bounds every
// lock wait of the transaction to 1 ms before its first row (lw: SET
// LOCAL lock_timeout, run by the gate that the join's rows pass through,
// a one-time filter the plan evaluates before its first row). A row held
// by another transaction then fails the statement after that wait with
// lock_not_available (55P03), rather than making the batch's other
// calls wait for it: the batch rolls back and reruns with the lock-first
// step, which finds the rows held. Two such statements of two processes
// that lock shared rows in opposite orders give up the same way, long
// before a deadlock would be detected (deadlock_timeout, 1 s by default).
// TestUseManyFirstLockWaitBounded checks the bound.
var govUseManyFirstSQL = replaceOnce(
	replaceOnce(govUseManySQL, "WITH u AS (", "WITH lw AS MATERIALIZED (SELECT set_config('lock_timeout', '1ms', true) AS v),\n\tu AS ("),
	"\n\t\tWHERE id = r.sid AND tenant = $6::text", "\n\t\tWHERE id = r.sid AND tenant = $6::text AND (SELECT v FROM lw) IS NOT NULL")

// replaceOnce replaces the one occurrence of old in s with new; it panics
// (when the package's statements are built) if old occurs other than once.
func replaceOnce(s, old, new string) string {
	if n := strings.Count(s, old); n != 1 {
		panic(fmt.Sprintf("pgstore: %d occurrences of %q in a statement, want 1", n, old))
	}
	return strings.Replace(s, old, new, 1)
}
