package sqlcore

import (
	"math"

	"github.com/agentstore/sessionstore/store"
)

// unit is one thing a sweep removes whole, in one transaction with the
// other units of its batch: a session (with everything it owns), a
// reservation, a conversation's excess messages, or the state of an app
// or of an (app, user) pair. Its fields are also the cursor of the walk
// that found it.
type unit struct {
	at     int64  // the time the walk is ordered by
	id     string // session id; app of orphan state
	key2   string // request id of a reservation; user of orphan user state
	pk     int64  // agent session key
	weight int64  // rows it is expected to take (batch sizing)
}

// startCursor is before every unit.
var startCursor = unit{at: math.MinInt64}

// due is a policy turned into statement arguments.
type due struct {
	cutoff   int64 // a record last touched at or before cutoff is due
	readsCap int64 // last_access_ms must be at or before it (MaxInt64: reads do not count)
	keepLast int64
}

// source walks the due units of a policy, oldest first, holds excluded.
type source struct {
	// name identifies the walk in the plan test.
	name string
	// nextSQL returns the next units after the cursor; its parameters
	// are given by args.
	nextSQL string
	args    func(d due, c unit, limit int) []any
	scan    func(r Rows) (unit, error)
}

// sweepKind is what a sweep does for one policy kind.
type sweepKind struct {
	kind    store.PolicyKind
	sources []source
	// removeSQL removes one unit if it is still due and not held; its
	// result's RowsAffected (or RETURNING row) says whether it did.
	removeSQL  string
	removeArgs func(d due, u unit) []any
	// rowsSQL counts the rows removing u removes (asked before the
	// removal, in the same transaction).
	rowsSQL  string
	rowsArgs func(u unit) []any
	// heldSQL counts the units due under the policy that a hold keeps.
	heldSQL  string
	heldArgs func(d due) []any
}

// notHeld are the hold conditions of each facet's sessions: a hold
// protects a session of its own tenant only (migration 23).
const (
	notHeldGoverned = ` AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
		WHERE h.tenant = g.tenant AND h.facet = 'governance' AND h.app = '' AND h.user_id = '' AND h.id = g.id)`
	notHeldRuntime = ` AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
		WHERE h.tenant = r.tenant AND h.facet = 'runtime' AND h.app = '' AND h.user_id = '' AND h.id = r.id)`
	notHeldConv = ` AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
		WHERE h.tenant = c.tenant AND h.facet = 'conversations' AND h.app = '' AND h.user_id = '' AND h.id = c.id)`
	notHeldAgent = ` AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
		WHERE h.tenant = a.tenant AND h.facet = 'agent_sessions' AND h.app = a.app AND h.user_id = a.user_id AND h.id = a.session_id)`
	// noLiveReservation keeps a governed session whose reservation still
	// counts against a spend limit.
	noLiveReservation = ` AND NOT EXISTS (SELECT 1 FROM spend_reservations AS sr
		WHERE sr.session_id = g.id AND sr.status = 'reserved')`
)

func scanAtID(r Rows) (unit, error) {
	var u unit
	err := r.Scan(&u.id, &u.at)
	u.weight = 1
	return u, err
}

func atIDArgs(d due, c unit, limit int) []any { return []any{d.cutoff, c.at, c.id, int64(limit)} }

// sweepKinds are the policies of the facets, in store.PolicyKinds order
// (the size budget is not among them: it reuses the idle walks).
var sweepKinds = []*sweepKind{governedEnded, reservationsClosed, runtimeIdle, conversationsIdle,
	messagesKeepLast, agentSessionsIdle, orphanState, auditCheckpointed}

var governedEnded = &sweepKind{
	kind: store.PolicyGovernedEnded,
	sources: []source{{
		name: "governed expired",
		nextSQL: `SELECT id, expires_at_ms FROM governed_sessions AS g
			WHERE expires_at_ms <= ?1 AND (expires_at_ms, id) > (?2, ?3)` + notHeldGoverned + noLiveReservation + `
			ORDER BY expires_at_ms, id LIMIT ?4`,
		args: atIDArgs, scan: scanAtID,
	}, {
		name: "governed closed",
		nextSQL: `SELECT id, ended_at_ms FROM governed_sessions AS g
			WHERE status = 'closed' AND ended_at_ms BETWEEN 1 AND ?1 AND (ended_at_ms, id) > (?2, ?3)` + notHeldGoverned + noLiveReservation + `
			ORDER BY ended_at_ms, id LIMIT ?4`,
		args: atIDArgs, scan: scanAtID,
	}},
	removeSQL: `DELETE FROM governed_sessions AS g
		WHERE id = ?1 AND (expires_at_ms <= ?2 OR (status = 'closed' AND ended_at_ms BETWEEN 1 AND ?2))` + notHeldGoverned + noLiveReservation + `
		RETURNING agent_id, status, audit_seq, audit_hash, tenant`,
	removeArgs: func(d due, u unit) []any { return []any{u.id, d.cutoff} },
	rowsSQL: `SELECT 1 + (SELECT count(*) FROM governed_use_requests WHERE session_id = ?1)
		+ (SELECT count(*) FROM spend_limits WHERE session_id = ?1)
		+ (SELECT count(*) FROM spend_reservations WHERE session_id = ?1)`,
	rowsArgs: func(u unit) []any { return []any{u.id} },
	heldSQL: `SELECT count(*) FROM retention_holds AS h JOIN governed_sessions AS g ON g.id = h.id AND g.tenant = h.tenant
		WHERE h.facet = 'governance' AND h.app = '' AND h.user_id = ''
		AND (g.expires_at_ms <= ?1 OR (g.status = 'closed' AND g.ended_at_ms BETWEEN 1 AND ?1))`,
	heldArgs: func(d due) []any { return []any{d.cutoff} },
}

var reservationsClosed = &sweepKind{
	kind: store.PolicyReservationsClosed,
	sources: []source{{
		name: "reservations closed",
		nextSQL: `SELECT session_id, request_id, closed_at_ms FROM spend_reservations AS sr
			WHERE closed_at_ms BETWEEN 1 AND ?1 AND (closed_at_ms, session_id, request_id) > (?2, ?3, ?4)
			AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
				WHERE h.tenant = sr.tenant AND h.facet = 'governance' AND h.app = '' AND h.user_id = '' AND h.id = sr.session_id)
			ORDER BY closed_at_ms, session_id, request_id LIMIT ?5`,
		args: func(d due, c unit, limit int) []any { return []any{d.cutoff, c.at, c.id, c.key2, int64(limit)} },
		scan: func(r Rows) (unit, error) {
			var u unit
			err := r.Scan(&u.id, &u.key2, &u.at)
			u.weight = 1
			return u, err
		},
	}},
	removeSQL: `DELETE FROM spend_reservations AS sr
		WHERE session_id = ?1 AND request_id = ?2 AND closed_at_ms BETWEEN 1 AND ?3 AND status <> 'reserved'
		AND NOT EXISTS (SELECT 1 FROM retention_holds AS h
			WHERE h.tenant = sr.tenant AND h.facet = 'governance' AND h.app = '' AND h.user_id = '' AND h.id = sr.session_id)`,
	removeArgs: func(d due, u unit) []any { return []any{u.id, u.key2, d.cutoff} },
	heldSQL: `SELECT count(*) FROM retention_holds AS h JOIN spend_reservations AS sr ON sr.session_id = h.id AND sr.tenant = h.tenant
		WHERE h.facet = 'governance' AND h.app = '' AND h.user_id = '' AND sr.closed_at_ms BETWEEN 1 AND ?1`,
	heldArgs: func(d due) []any { return []any{d.cutoff} },
}

var runtimeIdle = &sweepKind{
	kind: store.PolicyRuntimeIdle,
	sources: []source{{
		name: "runtime idle",
		nextSQL: `SELECT id, last_active_ms FROM runtime_sessions AS r
			WHERE last_active_ms <= ?1 AND (last_active_ms, id) > (?2, ?3) AND turn_running = FALSE` + notHeldRuntime + `
			ORDER BY last_active_ms, id LIMIT ?4`,
		args: atIDArgs, scan: scanAtID,
	}},
	removeSQL: `DELETE FROM runtime_sessions AS r
		WHERE id = ?1 AND last_active_ms <= ?2 AND turn_running = FALSE` + notHeldRuntime,
	removeArgs: func(d due, u unit) []any { return []any{u.id, d.cutoff} },
	// The session, its uploads, and the upload bytes no other session
	// refers to (the uploads' trigger removes those).
	rowsSQL: `SELECT 1 + (SELECT count(*) FROM uploads WHERE session_id = ?1)
		+ (SELECT count(*) FROM upload_blobs AS b
			WHERE (b.tenant, b.sha256) IN (SELECT tenant, sha256 FROM uploads WHERE session_id = ?1)
			AND NOT EXISTS (SELECT 1 FROM uploads AS o WHERE o.tenant = b.tenant AND o.sha256 = b.sha256 AND o.session_id <> ?1))`,
	rowsArgs: func(u unit) []any { return []any{u.id} },
	heldSQL: `SELECT count(*) FROM retention_holds AS h JOIN runtime_sessions AS r ON r.id = h.id AND r.tenant = h.tenant
		WHERE h.facet = 'runtime' AND h.app = '' AND h.user_id = '' AND r.last_active_ms <= ?1 AND r.turn_running = FALSE`,
	heldArgs: func(d due) []any { return []any{d.cutoff} },
}

var conversationsIdle = &sweepKind{
	kind: store.PolicyConversationsIdle,
	sources: []source{{
		name: "conversations idle",
		nextSQL: `SELECT id, updated_at_ms, message_count FROM conversations AS c
			WHERE updated_at_ms <= ?1 AND (updated_at_ms, id) > (?2, ?3) AND last_access_ms <= ?5 AND tenant <> '_removing'` + notHeldConv + `
			ORDER BY updated_at_ms, id LIMIT ?4`,
		args: func(d due, c unit, limit int) []any {
			return []any{d.cutoff, c.at, c.id, int64(limit), d.readsCap}
		},
		scan: func(r Rows) (unit, error) {
			var u unit
			err := r.Scan(&u.id, &u.at, &u.weight)
			u.weight++
			return u, err
		},
	}},
	// removeSQL tells whether the conversation is still due (it changes
	// nothing); apply then deletes it as Delete does, keeping what its
	// forks read (lineage, migration 15).
	removeSQL: `UPDATE conversations AS c SET fork_next = fork_next
		WHERE id = ?1 AND updated_at_ms <= ?2 AND last_access_ms <= ?3 AND tenant <> '_removing'` + notHeldConv,
	removeArgs: func(d due, u unit) []any { return []any{u.id, d.cutoff, d.readsCap} },
	rowsSQL: `SELECT 1 + (SELECT count(*) FROM conversation_messages WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_cost_records WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_artifacts WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_trace_events WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_runs WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_run_events WHERE session_id = ?1)
		+ (SELECT count(*) FROM conversation_reports WHERE session_id = ?1)`,
	rowsArgs: func(u unit) []any { return []any{u.id} },
	heldSQL: `SELECT count(*) FROM retention_holds AS h JOIN conversations AS c ON c.id = h.id AND c.tenant = h.tenant
		WHERE h.facet = 'conversations' AND h.app = '' AND h.user_id = '' AND c.updated_at_ms <= ?1 AND c.last_access_ms <= ?2`,
	heldArgs: func(d due) []any { return []any{d.cutoff, d.readsCap} },
}

// messagesKeepLast walks every conversation by id, a page at a time
// (conversations within the limit are skipped in Go, so that one
// statement never reads more than a page), and trims those beyond it.
var messagesKeepLast = &sweepKind{
	kind: store.PolicyMessagesKeepLast,
	sources: []source{{
		name: "conversations by id",
		nextSQL: `SELECT id, message_count, updated_at_ms, last_access_ms FROM conversations
			WHERE id > ?1 AND tenant <> '_removing' ORDER BY id LIMIT ?2`,
		args: func(d due, c unit, limit int) []any { return []any{c.id, int64(limit)} },
		// at and pk carry the update and last-access times, for a dry
		// run to leave out what conversations_idle removes first.
		scan: func(r Rows) (unit, error) {
			var u unit
			err := r.Scan(&u.id, &u.weight, &u.at, &u.pk)
			return u, err
		},
	}},
	heldSQL: `SELECT count(*) FROM retention_holds AS h JOIN conversations AS c ON c.id = h.id AND c.tenant = h.tenant
		WHERE h.facet = 'conversations' AND h.app = '' AND h.user_id = '' AND c.message_count > ?1`,
	heldArgs: func(d due) []any { return []any{d.keepLast} },
}

const (
	// convHeldSQL tells whether a conversation is held.
	convHeldSQL = `SELECT count(*) FROM retention_holds AS h JOIN conversations AS c ON c.id = h.id AND c.tenant = h.tenant
		WHERE h.facet = 'conversations' AND h.app = '' AND h.user_id = '' AND h.id = ?`
	// trimCountSQL counts the messages a trim to the last ?2 would remove.
	trimCountSQL = `SELECT count(*) FROM conversation_messages WHERE session_id = ?1
		AND seq < (SELECT coalesce(max(seq) + 1, 0) FROM conversation_messages WHERE session_id = ?1) - ?2`
)

// idleMinute is the unit of agent_sessions.updated_min (migration 30):
// updated_at_ms / idleMinute, truncated as SQL's integer division is.
const idleMinute = 60_000

var agentSessionsIdle = &sweepKind{
	kind: store.PolicyAgentSessionsIdle,
	sources: []source{{
		name: "agent sessions idle",
		// It walks agent_sessions_idle, (updated_min, pk), where
		// updated_min is updated_at_ms in whole minutes (migration 30: an
		// append within its session's minute writes no index entry), and
		// checks updated_at_ms itself: due is exact, the order within a
		// minute is by row. A unit's at is its updated_at_ms, so its
		// minute is at / idleMinute.
		nextSQL: `SELECT pk, updated_at_ms, event_count FROM agent_sessions AS a
			WHERE updated_min <= ?6 AND (updated_min, pk) > (?2, ?3) AND updated_at_ms <= ?1 AND last_access_ms <= ?5 AND retired = 0` + notHeldAgent + `
			ORDER BY updated_min, pk LIMIT ?4`,
		args: func(d due, c unit, limit int) []any {
			return []any{d.cutoff, c.at / idleMinute, c.pk, int64(limit), d.readsCap, d.cutoff / idleMinute}
		},
		scan: func(r Rows) (unit, error) {
			var u unit
			err := r.Scan(&u.pk, &u.at, &u.weight)
			u.weight++
			return u, err
		},
	}},
	// removeSQL retires the session (the same first step as
	// DeleteSession); apply then drops it with what nothing else reads,
	// keeping what its forks still read (lineage, migration 12).
	removeSQL: `UPDATE agent_sessions AS a SET retired = 1
		WHERE pk = ?1 AND retired = 0 AND updated_at_ms <= ?2 AND last_access_ms <= ?3` + notHeldAgent,
	removeArgs: func(d due, u unit) []any { return []any{u.pk, d.cutoff, d.readsCap} },
	rowsSQL: `SELECT 1 + (SELECT count(*) FROM agent_events WHERE session_pk = ?1)
		+ (SELECT count(*) FROM agent_state_log WHERE session_pk = ?1 AND seq = ` + StateHead + `)`,
	rowsArgs: func(u unit) []any { return []any{u.pk} },
	heldSQL: `SELECT count(*) FROM retention_holds AS h
		JOIN agent_sessions AS a ON a.tenant = h.tenant AND a.app = h.app AND a.user_id = h.user_id AND a.session_id = h.id
		WHERE h.facet = 'agent_sessions' AND a.retired = 0 AND a.updated_at_ms <= ?1 AND a.last_access_ms <= ?2`,
	heldArgs: func(d due) []any { return []any{d.cutoff, d.readsCap} },
}

// orphanState walks the apps of app state and the (app, user) pairs of
// user state a page at a time and removes the state of those no agent
// session refers to (it has no holds: state of a held session is not an
// orphan).
var orphanState = &sweepKind{
	kind: store.PolicyOrphanState,
	sources: []source{{
		name:    "app state by app",
		nextSQL: `SELECT DISTINCT app FROM agent_app_state WHERE app > ?1 ORDER BY app LIMIT ?2`,
		args:    func(d due, c unit, limit int) []any { return []any{c.id, int64(limit)} },
		scan: func(r Rows) (unit, error) {
			var u unit
			err := r.Scan(&u.id)
			return u, err
		},
	}, {
		name: "user state by app and user",
		nextSQL: `SELECT app, user_id FROM agent_user_state WHERE (app, user_id) > (?1, ?2)
			GROUP BY app, user_id ORDER BY app, user_id LIMIT ?3`,
		args: func(d due, c unit, limit int) []any { return []any{c.id, c.key2, int64(limit)} },
		scan: func(r Rows) (unit, error) {
			u := unit{at: 1} // at marks user state
			err := r.Scan(&u.id, &u.key2)
			return u, err
		},
	}},
}

const (
	// State is an orphan within its tenant: another tenant's sessions
	// under the same names do not keep it (migration 17).
	orphanAppCountSQL = `SELECT count(*) FROM agent_app_state WHERE app = ?1
		AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE tenant = agent_app_state.tenant AND app = ?1 AND retired = 0)`
	orphanAppDeleteSQL = `DELETE FROM agent_app_state WHERE app = ?1
		AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE tenant = agent_app_state.tenant AND app = ?1 AND retired = 0)`
	orphanUserCountSQL = `SELECT count(*) FROM agent_user_state WHERE app = ?1 AND user_id = ?2
		AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE tenant = agent_user_state.tenant AND app = ?1 AND user_id = ?2 AND retired = 0)`
	orphanUserDeleteSQL = `DELETE FROM agent_user_state WHERE app = ?1 AND user_id = ?2
		AND NOT EXISTS (SELECT 1 FROM agent_sessions WHERE tenant = agent_user_state.tenant AND app = ?1 AND user_id = ?2 AND retired = 0)`
)

// auditCheckpointed has no walk of its own: Sweep cuts the agents' own
// chains one agent per transaction (sweeper.pruneAudit).
var auditCheckpointed = &sweepKind{kind: store.PolicyAuditCheckpointed}
