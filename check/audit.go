package check

import (
	"context"

	"github.com/agentstore/sessionstore/internal/humanize"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Audit adds the "audit" result: every audit chain of the store verified
// through a.Verify, with the digest over their heads. It reports whether
// every chain verified.
func (r *Report) Audit(ctx context.Context, a store.Audit) bool {
	rep, err := a.Verify(ctx)
	switch {
	case err != nil:
		r.Add("audit", Fail, "cannot verify the audit trail: %v", err)
		return false
	case !rep.OK():
		p := rep.Problems[0]
		r.Add("audit", Fail, "%d of %d audit chains do not verify; first: agent %s, event %d %s (%s)",
			len(rep.Problems), rep.Chains, humanize.Quote(p.AgentID), p.Seq, p.Problem, humanize.Quote(p.Reason))
		return false
	}
	r.Add("audit", OK, "%d %s with %d %s verified, digest %s", rep.Chains, humanize.Plural(rep.Chains, "chain", "chains"),
		rep.Events, humanize.Plural(rep.Events, "event", "events"), rep.Digest)
	return true
}

// AuditChain checks one agent's audit chain as a restore would write it,
// without a store: every event links to the one before, hashes as
// recorded, and the last one is head. It is what an import's dry run
// checks; an error matches store.ErrInvalidInput.
func AuditChain(head store.AuditHead, events []store.AuditEvent) error {
	return sqlcore.CheckAuditChain(head, events)
}
