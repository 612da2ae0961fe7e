package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

const (
	// auditPruneCountSQL counts the events auditPruneSQL would remove.
	auditPruneCountSQL = `SELECT count(*) FROM audit_events WHERE agent_id = ? AND chain = '' AND seq < ? AND tenant = ?`
	// auditAgentsAfterSQL walks the agents' chains, (tenant, agent) pairs
	// in key order, a page at a time: every tenant's (?4 = 1, the sweep of
	// the store itself) or tenant ?5's alone (the sweep of a tenant's
	// handle).
	auditAgentsAfterSQL = `SELECT tenant, agent_id FROM audit_heads
		WHERE (tenant > ?1 OR (tenant = ?1 AND agent_id > ?2)) AND (?4 = 1 OR tenant = ?5)
		ORDER BY tenant, agent_id LIMIT ?3`
)

// pruneAudit applies PolicyAuditCheckpointed: each agent's own chain is
// cut at its newest checkpoint older than the policy's age, one agent per
// transaction, after the events it removes verify (pruneChain, as
// Audit.Prune does). A chain that does not verify fails the sweep with
// ErrCorrupt and keeps every event. In a dry run it counts what would go.
// Sessions in the report count the chains cut, rows their events.
func (sw *sweeper) pruneAudit(ctx context.Context, d due, ks *store.KindSweep) error {
	before := rowcodec.FromMillis(d.cutoff)
	s := sw.r.s
	every := 0
	if s.tenant == "" {
		every = 1
	}
	var after tenantAgent
	for {
		var agents []tenantAgent
		if err := s.readTx(ctx, func(tx Tx) error {
			agents = agents[:0]
			return tx.Query(auditAgentsAfterSQL, []any{after.Tenant, after.Agent, sweepPage, every, s.tenant}, func(r Rows) error {
				var ta tenantAgent
				if err := r.Scan(&ta.Tenant, &ta.Agent); err != nil {
					return err
				}
				agents = append(agents, ta)
				return nil
			})
		}); err != nil {
			return err
		}
		if err := sw.pruneAgents(ctx, agents, before, ks); err != nil || len(agents) < sweepPage {
			return err
		}
		after = agents[len(agents)-1]
	}
}

// tenantAgent names an agent's own audit chain: the agent within its
// tenant.
type tenantAgent struct {
	Tenant string
	Agent  string
}

// pruneAgents cuts the own chains of agents, one per transaction. What an
// agent's chain has to prune is counted in a read first, and a write
// transaction is opened only for a chain with something to prune: most
// sweeps find nothing due for most agents, and a write per agent would
// take the single writer once per agent on every sweep for nothing.
func (sw *sweeper) pruneAgents(ctx context.Context, agents []tenantAgent, before time.Time, ks *store.KindSweep) error {
	for _, ta := range agents {
		var n int64
		err := sw.r.s.readTx(ctx, func(tx Tx) error {
			var err error
			n, err = countPrunable(tx, ta.Tenant, ta.Agent, before)
			return err
		})
		if err == nil && n > 0 && !sw.opts.DryRun {
			// pruneChain finds the cut again inside the write (a
			// checkpoint may have come since the read) and verifies
			// what it removes; its count is the one reported.
			err = sw.r.s.write(ctx, func(tx Tx) error {
				var err error
				n, err = pruneChain(tx, ta.Tenant, ta.Agent, before)
				return err
			})
			sw.rep.Batches++
		}
		if err != nil {
			return err
		}
		if n > 0 {
			ks.Sessions++
			ks.Rows += n
			sw.progress(*ks)
		}
		if err := sw.pause(ctx); err != nil {
			return err
		}
	}
	return nil
}

// countPrunable counts the events pruneChain would remove from agent's own
// chain (without verifying them: a dry run reads only).
func countPrunable(tx Tx, tenant, agent string, before time.Time) (int64, error) {
	var cut, n int64
	if err := tx.Get(&cut, auditCheckpointSQL, agent, rowcodec.ToMicros(before), tenant); errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	err := tx.Get(&n, auditPruneCountSQL, agent, cut, tenant)
	return n, err
}
