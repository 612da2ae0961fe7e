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
	auditPruneCountSQL = `SELECT count(*) FROM audit_events WHERE agent_id = ? AND chain = '' AND seq < ?`
	// auditAgentsAfterSQL walks the agents with a chain a page at a time.
	auditAgentsAfterSQL = `SELECT agent_id FROM audit_heads WHERE agent_id > ? ORDER BY agent_id LIMIT ?`
)

// pruneAudit applies PolicyAuditCheckpointed: each agent's own chain is
// cut at its newest checkpoint older than the policy's age, one agent per
// transaction, after the events it removes verify (pruneChain, as
// Audit.Prune does). A chain that does not verify fails the sweep with
// ErrCorrupt and keeps every event. In a dry run it counts what would go.
// Sessions in the report count the chains cut, rows their events.
func (sw *sweeper) pruneAudit(ctx context.Context, d due, ks *store.KindSweep) error {
	before := rowcodec.FromMillis(d.cutoff)
	for after := ""; ; {
		var agents []string
		if err := sw.r.s.readTx(ctx, func(tx Tx) error {
			agents = agents[:0]
			return tx.Select(&agents, auditAgentsAfterSQL, after, sweepPage)
		}); err != nil {
			return err
		}
		if err := sw.pruneAgents(ctx, agents, before, ks); err != nil || len(agents) < sweepPage {
			return err
		}
		after = agents[len(agents)-1]
	}
}

// pruneAgents cuts the own chains of agents, one per transaction. What an
// agent's chain has to prune is counted in a read first, and a write
// transaction is opened only for a chain with something to prune: most
// sweeps find nothing due for most agents, and a write per agent would
// take the single writer once per agent on every sweep for nothing.
func (sw *sweeper) pruneAgents(ctx context.Context, agents []string, before time.Time, ks *store.KindSweep) error {
	for _, agent := range agents {
		var n int64
		err := sw.r.s.readTx(ctx, func(tx Tx) error {
			var err error
			n, err = countPrunable(tx, agent, before)
			return err
		})
		if err == nil && n > 0 && !sw.opts.DryRun {
			// pruneChain finds the cut again inside the write (a
			// checkpoint may have come since the read) and verifies
			// what it removes; its count is the one reported.
			err = sw.r.s.write(ctx, func(tx Tx) error {
				var err error
				n, err = pruneChain(tx, agent, before)
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
func countPrunable(tx Tx, agent string, before time.Time) (int64, error) {
	var cut, n int64
	if err := tx.Get(&cut, auditCheckpointSQL, agent, rowcodec.ToMicros(before)); errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	err := tx.Get(&n, auditPruneCountSQL, agent, cut)
	return n, err
}
