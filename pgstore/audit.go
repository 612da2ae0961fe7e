package pgstore

import (
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

// govUseAuditedSQL is govUseSQL with the audit event of the allowed use
// appended by the same statement (see sqlcore.AuditedUpdateSQL): the hot
// path stays one round trip. Parameters 1 to 5 are govUseSQL's; 6 is the
// event's payload and 7 its detail (sqlcore.AuditPayload).
var govUseAuditedSQL = sqlcore.AuditedUpdateSQL(dialect, govUseSQL, store.AuditUse, "$1::bigint", "$3::text", "$6::bytea", "$7::text")

// useStatement returns the conditional UPDATE of a governed Use without a
// request id, and its arguments: govUseAuditedSQL, which appends the
// audit event of the allowed use in the same statement, or govUseSQL on a
// store that audits nothing (benchmarks only). Every path that runs the
// hot UPDATE takes its statement from here, so that no allowed call goes
// unaudited.
func (g *Governance) useStatement(nowMS int64, req store.UseRequest, tools []string) (string, []any, error) {
	args := []any{nowMS, int64(len(tools)), req.SessionID, req.AgentID, tools}
	if g.s.cfg.auditOff {
		return govUseSQL, args, nil
	}
	payload, detail, err := sqlcore.AuditPayload(nowMS, sqlcore.UseAudit("", req.SessionID, "", tools))
	if err != nil {
		return "", nil, err
	}
	return govUseAuditedSQL, append(args, payload, detail), nil
}
