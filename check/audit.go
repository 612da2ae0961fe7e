package check

import (
	"context"

	"github.com/agentstore/sessionstore/humanize"
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

// TenantAudits adds the "tenant_audit" result: the audit chains of every
// tenant other than the default (store.Tenanter.Tenants) verified through
// each tenant's handle, which Audit (the store's own facet, the default
// tenant's chains) does not see. A store without tenants adds nothing. It
// reports whether every chain verified.
func (r *Report) TenantAudits(ctx context.Context, tr store.Tenanter) bool {
	tenants, err := tr.Tenants(ctx)
	if err != nil {
		r.Add("tenant_audit", Fail, "cannot list the tenants: %v", err)
		return false
	}
	if len(tenants) == 0 {
		return true
	}
	var chains, events int64
	for _, name := range tenants {
		ts, err := tr.Tenant(name)
		if err != nil {
			r.Add("tenant_audit", Fail, "tenant %s: %v", humanize.Quote(name), err)
			return false
		}
		rep, err := ts.Audit().Verify(ctx)
		switch {
		case err != nil:
			r.Add("tenant_audit", Fail, "cannot verify the audit trail of tenant %s: %v", humanize.Quote(name), err)
			return false
		case !rep.OK():
			p := rep.Problems[0]
			r.Add("tenant_audit", Fail, "tenant %s: %d of %d audit chains do not verify; first: agent %s, event %d %s (%s)",
				humanize.Quote(name), len(rep.Problems), rep.Chains, humanize.Quote(p.AgentID), p.Seq, p.Problem, humanize.Quote(p.Reason))
			return false
		}
		chains, events = chains+rep.Chains, events+rep.Events
	}
	r.Add("tenant_audit", OK, "%d %s: %d %s with %d %s verified", len(tenants), humanize.Plural(int64(len(tenants)), "tenant", "tenants"),
		chains, humanize.Plural(chains, "chain", "chains"), events, humanize.Plural(events, "event", "events"))
	return true
}
