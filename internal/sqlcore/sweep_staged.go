package sqlcore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentstore/sessionstore/store"
)

// Removing a large conversation in several transactions (migration 29).
//
// A sweep's batch is bounded in rows, not in sessions: a conversation
// with more rows than a batch (SweepOptions.BatchRows) is not removed in
// one transaction, which would hold the writer for as long as its rows
// take. The first transaction hides it: its tenant becomes
// removingTenant, which no tenant is named, so no call of any tenant (or
// of the default one) finds it any more, and sweep_removals records it
// with its tenant. The next transactions delete its rows, at most a batch
// each, leaving those that forks read. The last one gives it its tenant
// back and deletes it as Delete does (what forks read goes to a retired
// history), in one transaction with the deletion of its sweep_removals
// row. A sweep first finishes the removals it finds in sweep_removals, so
// a sweep interrupted mid-way (killed, its context cancelled) is finished
// by the next one.

// removingTenant is the tenant of a conversation being removed: a name
// store.ValidateTenant refuses (a leading '_').
const removingTenant = "_removing"

const (
	// convMarkRemovalSQL hides a conversation that is still due and not
	// held (conversations_idle's removeSQL, ?4 the hiding tenant).
	convMarkRemovalSQL = `UPDATE conversations AS c SET tenant = ?4
		WHERE id = ?1 AND updated_at_ms <= ?2 AND last_access_ms <= ?3 AND tenant <> ?4` + notHeldConv
	removalInsertSQL = `INSERT INTO sweep_removals (id, tenant, started_at_ms) VALUES (?, ?, ?)`
	removalTenantSQL = `SELECT tenant FROM sweep_removals WHERE id = ?`
	removalDeleteSQL = `DELETE FROM sweep_removals WHERE id = ?`
	removalNextSQL   = `SELECT id FROM sweep_removals WHERE id > ? ORDER BY id LIMIT ?`
	convUnhideSQL    = `UPDATE conversations SET tenant = ? WHERE id = ?`

	// removalReadFloorSQL is the first position of a conversation's
	// messages that no fork (nor retired history) reads.
	removalReadFloorSQL = `SELECT coalesce(max(n), 0) FROM (
		SELECT max(fork_next) AS n FROM conversations WHERE lineage_parent = ?1
		UNION ALL SELECT max(fork_next) AS n FROM conversation_retired WHERE lineage_parent = ?1) AS r`
)

// removalBatches delete at most ?3 (?2 for the others) rows of a hidden
// conversation ?1, newest first; the messages from position ?2 up only.
var removalBatches = []string{
	`DELETE FROM conversation_messages WHERE session_id = ?1 AND seq IN (SELECT seq FROM conversation_messages
		WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq DESC LIMIT ?3)`,
	`DELETE FROM conversation_trace_events WHERE session_id = ?1 AND seq IN (SELECT seq FROM conversation_trace_events
		WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2)`,
	`DELETE FROM conversation_run_events WHERE session_id = ?1 AND (run_id, seq) IN (SELECT run_id, seq FROM conversation_run_events
		WHERE session_id = ?1 ORDER BY run_id, seq LIMIT ?2)`,
	`DELETE FROM conversation_runs WHERE session_id = ?1 AND run_id IN (SELECT run_id FROM conversation_runs
		WHERE session_id = ?1 ORDER BY run_id LIMIT ?2)`,
	`DELETE FROM conversation_artifacts WHERE session_id = ?1 AND uri IN (SELECT uri FROM conversation_artifacts
		WHERE session_id = ?1 ORDER BY uri LIMIT ?2)`,
	`DELETE FROM conversation_cost_records WHERE session_id = ?1 AND seq IN (SELECT seq FROM conversation_cost_records
		WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2)`,
	`DELETE FROM conversation_reports WHERE session_id = ?1 AND seq IN (SELECT seq FROM conversation_reports
		WHERE session_id = ?1 ORDER BY seq DESC LIMIT ?2)`,
}

// staged reports whether u, a unit of sk, is removed over several
// transactions: a conversation with more rows than a batch, in a real
// sweep.
func (sw *sweeper) staged(sk *sweepKind, u unit) bool {
	return sk.kind == conversationsIdle.kind && !sw.opts.DryRun && u.weight > sw.maxRows
}

// markRemoval hides conversation u in tx if it is still due and not
// held, and records it in sweep_removals; it returns the rows the
// removal will take and whether it hid it.
func (sw *sweeper) markRemoval(tx Tx, d due, u unit) (int64, bool, error) {
	c, err := sw.convsOf(tx, u.id)
	if err == nil {
		err = c.lockConv(tx, u.id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var rows int64
	if err := tx.Get(&rows, conversationsIdle.rowsSQL, u.id); err != nil {
		return 0, false, err
	}
	res, err := tx.Exec(convMarkRemovalSQL, u.id, d.cutoff, d.readsCap, removingTenant)
	if err != nil {
		return 0, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, false, err
	}
	if _, err := tx.Exec(removalInsertSQL, u.id, c.s.tenant, sw.nowMS); err != nil {
		return 0, false, err
	}
	return rows, true, nil
}

// finishRemoval deletes the rows of the hidden conversation id, at most a
// batch per transaction, then the conversation itself (see the top of the
// file).
func (sw *sweeper) finishRemoval(ctx context.Context, id string) error {
	var removed int64
	for i, q := range removalBatches {
		for {
			var n int64
			err := sw.r.s.write(ctx, func(tx Tx) error {
				n = 0
				var tenant string
				if err := tx.Get(&tenant, removalTenantSQL, id); errors.Is(err, sql.ErrNoRows) {
					return nil // finished by another sweeper
				} else if err != nil {
					return err
				}
				args := []any{id, sw.maxRows}
				if i == 0 {
					var floor int64
					if err := tx.Get(&floor, removalReadFloorSQL, id); err != nil {
						return err
					}
					args = []any{id, floor, sw.maxRows}
				}
				res, err := tx.Exec(q, args...)
				if err != nil {
					return err
				}
				n, err = res.RowsAffected()
				return err
			})
			sw.rep.Batches++
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			removed += n
			if sw.tick != nil {
				sw.tick(removed)
			}
			if err := sw.pause(ctx); err != nil {
				return err
			}
		}
	}
	err := sw.r.s.write(ctx, func(tx Tx) error {
		var tenant string
		if err := tx.Get(&tenant, removalTenantSQL, id); errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(convUnhideSQL, tenant, id); err != nil {
			return err
		}
		c := &Conversations{s: sw.r.s}
		if tenant != sw.r.s.tenant {
			c = &Conversations{s: sw.r.s.WithTenant(tenant)}
		}
		if _, err := c.deleteTx(tx, id); err != nil {
			return err
		}
		_, err := tx.Exec(removalDeleteSQL, id)
		return err
	})
	sw.rep.Batches++
	return err
}

// finishPending finishes the removals an earlier sweep left unfinished.
func (sw *sweeper) finishPending(ctx context.Context) error {
	cursor := ""
	for {
		var ids []string
		if err := sw.r.s.db.Select(ctx, &ids, removalNextSQL, cursor, sweepPage); err != nil {
			return err
		}
		for _, id := range ids {
			if err := sw.finishRemoval(ctx, id); err != nil {
				return err
			}
			cursor = id
		}
		if len(ids) < sweepPage {
			return nil
		}
	}
}
