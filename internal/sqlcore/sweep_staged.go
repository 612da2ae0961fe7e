package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/agentstore/sessionstore/store"
)

// Removing a large conversation in several transactions (migration 28).
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
	removalInsertSQL = `INSERT INTO sweep_removals (kind, id, tenant, started_at_ms) VALUES (?, ?, ?, ?)`
	removalTenantSQL = `SELECT tenant FROM sweep_removals WHERE kind = ? AND id = ?`
	removalDeleteSQL = `DELETE FROM sweep_removals WHERE kind = ? AND id = ?`
	removalNextSQL   = `SELECT kind, id FROM sweep_removals WHERE (kind, id) > (?, ?) ORDER BY kind, id LIMIT ?`
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
	return (sk.kind == conversationsIdle.kind || sk.kind == agentSessionsIdle.kind) && !sw.opts.DryRun && u.weight > sw.maxRows
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
	if _, err := tx.Exec(removalInsertSQL, removalConversation, u.id, c.s.tenant, sw.nowMS); err != nil {
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
		err := sw.deleteInBatches(ctx, removalConversation, id, q, &removed, func(tx Tx) ([]any, error) {
			if i > 0 {
				return []any{id, sw.maxRows}, nil
			}
			var floor int64
			if err := tx.Get(&floor, removalReadFloorSQL, id); err != nil {
				return nil, err
			}
			return []any{id, floor, sw.maxRows}, nil
		})
		if err != nil {
			return err
		}
	}
	err := sw.r.s.write(ctx, func(tx Tx) error {
		var tenant string
		if err := tx.Get(&tenant, removalTenantSQL, removalConversation, id); errors.Is(err, sql.ErrNoRows) {
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
		_, err := tx.Exec(removalDeleteSQL, removalConversation, id)
		return err
	})
	sw.rep.Batches++
	return err
}

// finishPending finishes the removals an earlier sweep left unfinished.
func (sw *sweeper) finishPending(ctx context.Context) error {
	var kind, id string
	for {
		var rows []struct {
			Kind string `db:"kind"`
			ID   string `db:"id"`
		}
		if err := sw.r.s.db.Select(ctx, &rows, removalNextSQL, kind, id, sweepPage); err != nil {
			return err
		}
		for _, r := range rows {
			var err error
			switch r.Kind {
			case removalConversation:
				err = sw.finishRemoval(ctx, r.ID)
			case removalAgentSession:
				var pk int64
				if pk, err = strconv.ParseInt(r.ID, 10, 64); err == nil {
					err = sw.finishAgentRemoval(ctx, pk)
				}
			}
			if err != nil {
				return err
			}
			kind, id = r.Kind, r.ID
		}
		if len(rows) < sweepPage {
			return nil
		}
	}
}

// The kinds of sweep_removals rows.
const (
	removalConversation = "conversation"
	removalAgentSession = "agent_session"
)

const (
	// agentMarkRemovalSQL retires an agent session still due and not
	// held (agent_sessions_idle's removeSQL).
	agentMarkRemovalSQL = `UPDATE agent_sessions AS a SET retired = 1
		WHERE pk = ?1 AND retired = 0 AND updated_at_ms <= ?2 AND last_access_ms <= ?3` + notHeldAgent
	// agentReadFloorSQL is the last position of a row's events that a
	// fork (or a superseded run) reads.
	agentReadFloorSQL = `SELECT coalesce(max(fork_seq), 0) FROM agent_sessions WHERE lineage_parent = ?`
	// agentRemovalBatchSQL deletes at most ?3 events of row ?1 after
	// position ?2, newest first; agentLogBatchSQL the state log's.
	agentRemovalBatchSQL = `DELETE FROM agent_events WHERE session_pk = ?1 AND seq IN (SELECT seq FROM agent_events
		WHERE session_pk = ?1 AND seq > ?2 ORDER BY seq DESC LIMIT ?3)`
	agentLogBatchSQL = `DELETE FROM agent_state_log WHERE session_pk = ?1 AND (key, seq) IN (SELECT key, seq FROM agent_state_log
		WHERE session_pk = ?1 AND seq > ?2 ORDER BY key, seq LIMIT ?3)`
)

// markAgentRemoval retires agent session u in tx if it is still due and
// not held (invisible from now on, as after DeleteSession), and records it
// in sweep_removals.
func (sw *sweeper) markAgentRemoval(tx Tx, d due, u unit) (int64, bool, error) {
	var rows int64
	if err := tx.Get(&rows, agentSessionsIdle.rowsSQL, u.pk); err != nil {
		return 0, false, err
	}
	res, err := tx.Exec(agentMarkRemovalSQL, u.pk, d.cutoff, d.readsCap)
	if err != nil {
		return 0, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return 0, false, err
	}
	if _, err := tx.Exec(lnClearStateSQL, u.pk); err != nil {
		return 0, false, err
	}
	if _, err := tx.Exec(removalInsertSQL, removalAgentSession, strconv.FormatInt(u.pk, 10), "", sw.nowMS); err != nil {
		return 0, false, err
	}
	return rows, true, nil
}

// finishAgentRemoval deletes the events (and state log) of the retired
// agent session row pk that no fork reads, at most a batch per
// transaction, then drops it as DeleteSession does.
func (sw *sweeper) finishAgentRemoval(ctx context.Context, pk int64) error {
	id := strconv.FormatInt(pk, 10)
	var removed int64
	for _, q := range []string{agentRemovalBatchSQL, agentLogBatchSQL} {
		counted := &removed // progress counts events, not state-log rows
		if q != agentRemovalBatchSQL {
			counted = nil
		}
		err := sw.deleteInBatches(ctx, removalAgentSession, id, q, counted, func(tx Tx) ([]any, error) {
			var floor int64
			if err := tx.Get(&floor, agentReadFloorSQL, pk); err != nil {
				return nil, err
			}
			return []any{pk, floor, sw.maxRows}, nil
		})
		if err != nil {
			return err
		}
	}
	err := sw.r.s.write(ctx, func(tx Tx) error {
		var tenant string
		if err := tx.Get(&tenant, removalTenantSQL, removalAgentSession, id); errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if err := dropRetired(tx, pk); err != nil {
			return err
		}
		_, err := tx.Exec(removalDeleteSQL, removalAgentSession, id)
		return err
	})
	sw.rep.Batches++
	return err
}

// deleteInBatches runs the delete q, one batch of at most sw.maxRows rows
// a transaction with a pause between two, until a batch deletes nothing
// or the removal (kind, id) is gone (another sweeper finished it). args
// gives q's arguments inside the batch's transaction. When removed is
// not nil, each batch adds its rows to it and reports the total to the
// sweep's progress.
func (sw *sweeper) deleteInBatches(ctx context.Context, kind, id, q string, removed *int64, args func(Tx) ([]any, error)) error {
	for {
		var n int64
		err := sw.r.s.write(ctx, func(tx Tx) error {
			n = 0
			var tenant string
			if err := tx.Get(&tenant, removalTenantSQL, kind, id); errors.Is(err, sql.ErrNoRows) {
				return nil // finished by another sweeper
			} else if err != nil {
				return err
			}
			a, err := args(tx)
			if err != nil {
				return err
			}
			res, err := tx.Exec(q, a...)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		sw.rep.Batches++
		if err != nil || n == 0 {
			return err
		}
		if removed != nil {
			*removed += n
			if sw.tick != nil {
				sw.tick(*removed)
			}
		}
		if err := sw.pause(ctx); err != nil {
			return err
		}
	}
}
