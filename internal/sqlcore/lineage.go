package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Lineage of agent sessions (migration 00012). A row reads the positions
// up to its fork_seq from its lineage parent's view and holds its own
// events after it: every row's own events have seq > fork_seq. A fork is
// a new row naming its parent, so it copies no events; reads walk the
// chain of parents, one index range per row.

const (
	// asGetLineageSQL is asGetSQL with the row's lineage and its feed
	// epoch, which with the pk is the stamp of its log (store.LogStamp).
	asGetLineageSQL = `SELECT pk, version, event_count, created_at_ms, updated_at_ms,
		COALESCE(lineage_parent, 0), fork_seq, data_key, epoch
		FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id = ? AND retired = 0 AND tenant = ?`

	// lnParentSQL reads one ancestor's lineage.
	lnParentSQL = `SELECT COALESCE(lineage_parent, 0), fork_seq, data_key FROM agent_sessions WHERE pk = ?`

	// lnNodeSQL reads a row for a fork, a rewind or the tree.
	lnNodeSQL = `SELECT pk, COALESCE(lineage_parent, 0), fork_seq, retired, COALESCE(superseded_of, 0),
		app, user_id, session_id, version, event_count, created_at_ms, initial_state, data_key
		FROM agent_sessions WHERE pk = ?`

	// lnInsertSQL writes a fork, or the holder of a rewind's superseded
	// events (superseded_from: the rewind point, migration 28), with its
	// updated_min (see asInsertSQL).
	lnInsertSQL = `INSERT INTO agent_sessions
		(app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms,
		 lineage_parent, fork_seq, retired, superseded_of, initial_state, tenant, superseded_from, updated_min)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING pk`

	// lnNextKeySQL skips to a row's next session-scope key in its state
	// log; lnKeyAtSQL reads a key's last value up to a position. Both
	// search the log's primary key.
	lnNextKeySQL = `SELECT min(key) FROM agent_state_log WHERE session_pk = ? AND key > ?`
	lnKeyAtSQL   = `SELECT seq, value FROM agent_state_log WHERE session_pk = ? AND key = ? AND seq <= ?
		ORDER BY seq DESC LIMIT 1`
	// lnMoveLogSQL moves a row's logged values after a position to
	// another row; its heads (its current state, StateHead) stay.
	lnMoveLogSQL = `UPDATE agent_state_log SET session_pk = ? WHERE session_pk = ? AND seq > ? AND seq < ` + StateHead

	lnSummarySQL = `SELECT ` + evColumns + ` FROM agent_events WHERE session_pk = ? AND compact_to > 0 AND seq <= ?
		ORDER BY seq DESC LIMIT 1`
	lnCompactionsSQL = `SELECT seq, compact_from, compact_to FROM agent_events WHERE session_pk = ? AND compact_to > 0`

	lnMoveEventsSQL = `UPDATE agent_events SET session_pk = ? WHERE session_pk = ? AND seq > ?`
	lnRepointSQL    = `UPDATE agent_sessions SET lineage_parent = ? WHERE lineage_parent = ? AND fork_seq > ? AND pk <> ?`
	lnRewoundSQL    = `UPDATE agent_sessions SET event_count = ?, version = version + 1, updated_at_ms = ?,
		epoch = ?, fork_seq = ?, lineage_parent = ?, initial_state = ? WHERE pk = ?`
	// lnClearStateSQL deletes a row's current state: its heads in the
	// state log (StateHead), not its logged values.
	lnClearStateSQL = `DELETE FROM agent_state_log WHERE session_pk = ? AND seq = ` + StateHead

	lnChildrenSQL = `SELECT pk FROM agent_sessions WHERE lineage_parent = ? ORDER BY pk`
	lnHasChildSQL = `SELECT count(*) FROM agent_sessions WHERE lineage_parent = ?`
	lnHoldersSQL  = `SELECT pk FROM agent_sessions WHERE superseded_of = ? ORDER BY pk`
	// lnRunsSQL lists a session's superseded runs: each holder and the
	// position its run starts after.
	lnRunsSQL   = `SELECT pk, superseded_from FROM agent_sessions WHERE superseded_of = ? ORDER BY pk`
	lnRetireSQL = `UPDATE agent_sessions SET retired = 1 WHERE pk = ?`
	lnDropSQL   = `DELETE FROM agent_sessions WHERE pk = ?`
)

// retired values of agent_sessions.
const (
	rowLive       = 0
	rowDeleted    = 1
	rowSuperseded = 2
)

// maxLineageDepth bounds a walk up the lineage: deeper chains are a
// damaged database, not a history.
const maxLineageDepth = 100_000

// segment is the part of one row's events in a session's view: its own
// events up to hi (hi < 0: all of them), sealed with the row's data key
// (key; ” = plaintext).
type segment struct {
	pk, hi int64
	key    string
}

// lineage returns the segments of row's view, newest first: its own
// events, then each ancestor's up to the fork point below it.
func (a *AgentSessions) lineage(r Tx, row asRow) ([]segment, error) {
	// walkLineage (conv_lineage.go) is the one walker, shared with
	// conversations.
	// The walk reads each ancestor's row once; its data key comes with it.
	var ancestorKeys map[int64]string
	segs, err := walkLineage(row.PK, row.Parent, row.ForkSeq, func(pk int64) (int64, int64, error) {
		var next, fork int64
		var key string
		err := scanHot(r, lnParentSQL, []any{pk}, &next, &fork, &key)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, 0, fmt.Errorf("sqlcore: agent session lineage names a missing row %d", pk)
		}
		if key != "" {
			if ancestorKeys == nil {
				ancestorKeys = make(map[int64]string)
			}
			ancestorKeys[pk] = key
		}
		return next, fork, err
	})
	if err != nil {
		return nil, err
	}
	out := make([]segment, len(segs))
	for i, sg := range segs {
		out[i] = segment{pk: sg.id, hi: sg.hi, key: ancestorKeys[sg.id]}
	}
	out[0].key = row.DataKey
	return out, nil
}

// readRecent reads the view's events newest first, at most recent of
// them (0: all), at or after after when it is not zero, and returns them
// oldest first; size bounds the slice to allocate. dataOnly: the events
// may carry their Data alone (see store.GetAgentSessionRequest.EventDataOnly);
// a sealed segment is read whole, its seq and id being the data's
// associated data.
func (a *AgentSessions) readRecent(r Tx, segs []segment, size int64, recent int, after time.Time, dataOnly bool) ([]store.AgentEvent, error) {
	if recent > 0 {
		size = min(size, int64(recent))
	}
	evs := make([]store.AgentEvent, 0, max(size, 0))
	var afterUS, afterNS int64
	if !after.IsZero() {
		afterUS, afterNS = splitNanos(after)
	}
	for _, sg := range segs {
		q, only := &a.s.q.events, dataOnly && sg.key == ""
		if only {
			q = &a.s.q.eventData
		}
		left := 0
		if recent > 0 {
			left = recent - len(evs)
			if left <= 0 {
				break
			}
		}
		limit := a.s.limit(left)
		var query string
		var args []any
		switch {
		case sg.hi < 0 && after.IsZero():
			query, args = q.recent, []any{sg.pk, limit}
		case sg.hi < 0:
			query, args = q.recentAfter, []any{sg.pk, afterUS, afterUS, afterNS, limit}
		case after.IsZero():
			query, args = q.recentUpTo, []any{sg.pk, sg.hi, limit}
		default:
			query, args = q.recentAfterUpTo, []any{sg.pk, sg.hi, afterUS, afterUS, afterNS, limit}
		}
		var err error
		if evs, err = a.s.appendEvents(r, evs, sg.key, only, query, args); err != nil {
			return nil, err
		}
	}
	slices.Reverse(evs)
	return evs, nil
}

// readAscending appends to evs the view's events after position after,
// oldest first, at most limit of them, only invocation's when it is not
// empty; dataOnly as readRecent's.
func (a *AgentSessions) readAscending(r Tx, segs []segment, after int64, limit int, invocation string, dataOnly bool, evs []store.AgentEvent) ([]store.AgentEvent, error) {
	for i := len(segs) - 1; i >= 0 && len(evs) < limit; i-- {
		sg := segs[i]
		q, only := &a.s.q.events, dataOnly && sg.key == ""
		if only {
			q = &a.s.q.eventData
		}
		if sg.hi >= 0 && sg.hi <= after {
			continue
		}
		left := int64(limit - len(evs))
		var query string
		var args []any
		switch {
		case sg.hi < 0 && invocation == "":
			query, args = q.page, []any{sg.pk, after, left}
		case sg.hi < 0:
			query, args = q.pageInvocation, []any{sg.pk, invocation, after, left}
		case invocation == "":
			query, args = q.pageUpTo, []any{sg.pk, after, sg.hi, left}
		default:
			query, args = q.pageInvocationUpTo, []any{sg.pk, invocation, after, sg.hi, left}
		}
		var err error
		if evs, err = a.s.appendEvents(r, evs, sg.key, only, query, args); err != nil {
			return nil, err
		}
	}
	return evs, nil
}

// latestSummary reads the view's latest compaction record; found is
// false when there is none.
func (a *AgentSessions) latestSummary(r Tx, segs []segment) (ev store.AgentEvent, found bool, err error) {
	var sc eventScan
	dest := sc.dest(&ev)
	for _, sg := range segs {
		hi := sg.hi
		if hi < 0 {
			hi = 1<<62 - 1
		}
		err := scanHot(r, lnSummarySQL, []any{sg.pk, hi}, dest...)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return ev, false, err
		}
		sc.finish(&ev)
		dk, err := a.s.dataKey(context.Background(), sg.key)
		if err != nil {
			return ev, false, err
		}
		one := []store.AgentEvent{ev}
		if err := openEvents(dk, one); err != nil {
			return ev, false, err
		}
		return one[0], true, nil
	}
	return ev, false, nil
}

// readFromSummary reads the latest compaction record followed by the
// events after the range it covers (without the record itself), recent
// and after applying to those; the whole view without a record.
func (a *AgentSessions) readFromSummary(r Tx, segs []segment, recent int, after time.Time, dataOnly bool) ([]store.AgentEvent, error) {
	summary, found, err := a.latestSummary(r, segs)
	if err != nil {
		return nil, err
	}
	if !found {
		return a.readRecent(r, segs, 0, recent, after, dataOnly)
	}
	// The tail is read whole: it is filtered by seq and time below.
	tail, err := a.readAscending(r, segs, summary.Compaction.To, 1<<30, "", false, nil)
	if err != nil {
		return nil, err
	}
	tail = slices.DeleteFunc(tail, func(ev store.AgentEvent) bool {
		return ev.Seq == summary.Seq || !after.IsZero() && ev.Timestamp.Before(after)
	})
	if recent > 0 && len(tail) > recent {
		tail = tail[len(tail)-recent:]
	}
	return append([]store.AgentEvent{summary}, tail...), nil
}

// encodeSessionState is the stored form of a session scope (a JSON
// object; values are valid JSON, checked by Validate).
func encodeSessionState(m map[string]json.RawMessage) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil { // validated JSON values always marshal
		return "{}"
	}
	return string(b)
}

func decodeSessionState(s string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if s == "" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("sqlcore: stored session state: %w", err)
	}
	if len(m) == 0 {
		m = nil
	}
	return m, nil
}

// lnNode is an agent_sessions row as lineage code reads it.
type lnNode struct {
	PK, Parent, ForkSeq, Retired, SupersededOf int64
	Key                                        store.SessionKey
	Version, EventCount, CreatedAtMS           int64
	InitialState                               string
	DataKey                                    string // '' = plaintext (crypt.go)
}

func readNode(r Tx, pk int64) (lnNode, error) {
	var n lnNode
	err := r.Scan(lnNodeSQL, []any{pk}, &n.PK, &n.Parent, &n.ForkSeq, &n.Retired, &n.SupersededOf,
		&n.Key.App, &n.Key.User, &n.Key.Session, &n.Version, &n.EventCount, &n.CreatedAtMS, &n.InitialState, &n.DataKey)
	return n, err
}

// lnLockSQL takes the row lock of a live session (a write that changes
// nothing): on PostgreSQL, a fork or a rewind then waits for an append in
// flight to commit, and an append waits for them, so that neither reads
// a history the other is changing. SQLite has one writer anyway.
const lnLockSQL = `UPDATE agent_sessions SET version = version
	WHERE app = ? AND user_id = ? AND session_id = ? AND retired = 0 AND tenant = ?
	RETURNING pk, COALESCE(lineage_parent, 0), fork_seq, retired, COALESCE(superseded_of, 0),
		app, user_id, session_id, version, event_count, created_at_ms, initial_state, data_key`

// liveNode reads the live row of key in tenant (in a write transaction:
// locked).
func liveNode(r Tx, tenant string, key store.SessionKey) (lnNode, error) {
	return readLive(r, tenant, key, `SELECT pk FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id = ? AND retired = 0 AND tenant = ?`)
}

// lockLive locks the live row of key in tenant and reads it, in one
// statement.
func lockLive(tx Tx, tenant string, key store.SessionKey) (lnNode, error) {
	var n lnNode
	err := tx.Scan(lnLockSQL, []any{key.App, key.User, key.Session, tenant}, &n.PK, &n.Parent, &n.ForkSeq, &n.Retired, &n.SupersededOf,
		&n.Key.App, &n.Key.User, &n.Key.Session, &n.Version, &n.EventCount, &n.CreatedAtMS, &n.InitialState, &n.DataKey)
	if errors.Is(err, sql.ErrNoRows) {
		return lnNode{}, sessionNotFound(key)
	}
	return n, err
}

func readLive(r Tx, tenant string, key store.SessionKey, query string) (lnNode, error) {
	var pk int64
	err := r.Scan(query, []any{key.App, key.User, key.Session, tenant}, &pk)
	if errors.Is(err, sql.ErrNoRows) {
		return lnNode{}, sessionNotFound(key)
	}
	if err != nil {
		return lnNode{}, err
	}
	return readNode(r, pk)
}

// owner returns the row of n's lineage that holds position at: n itself
// when at is past its fork point (or it has no parent), else the first
// ancestor for which that holds.
func owner(r Tx, n lnNode, at int64) (lnNode, error) {
	for depth := 0; at < n.ForkSeq && n.Parent != 0; depth++ {
		if depth > maxLineageDepth {
			return lnNode{}, fmt.Errorf("sqlcore: agent session lineage deeper than %d", maxLineageDepth)
		}
		p, err := readNode(r, n.Parent)
		if err != nil {
			return lnNode{}, err
		}
		n = p
	}
	return n, nil
}

// stateAt returns the session scope of n's view at position at: the
// initial state of the row holding at, folded with that row's deltas up
// to at. The fold reads, for each key the row's events ever set, its last
// value up to at: two index lookups per key, whatever the length of the
// history.
func (s *Store) stateAt(r Tx, n lnNode, at int64) (map[string]json.RawMessage, error) {
	o, err := owner(r, n, at)
	if err != nil {
		return nil, err
	}
	dk, err := s.dataKey(context.Background(), o.DataKey) // crypt.go: the owner's data key
	if err != nil {
		return nil, err
	}
	st, err := openInitial(dk, o.InitialState)
	if err != nil {
		return nil, err
	}
	if at <= o.ForkSeq {
		return st, nil
	}
	delta := map[string]json.RawMessage{}
	after := ""
	for { // each step moves to a greater key: it ends
		var k sql.NullString
		if err := r.Scan(lnNextKeySQL, []any{o.PK, after}, &k); err != nil {
			return nil, err
		}
		if !k.Valid {
			break
		}
		after = k.String
		var v []byte
		var seq int64
		err := r.Scan(lnKeyAtSQL, []any{o.PK, k.String, at}, &seq, &v)
		if errors.Is(err, sql.ErrNoRows) {
			continue // first set after at
		}
		if err != nil {
			return nil, err
		}
		if v, err = opened(dk, v, adLog, k.String, seqAD(seq)); err != nil {
			return nil, err
		}
		delta[k.String] = v
	}
	return store.FoldState(st, delta), nil
}

// forkedFrom names row's lineage parent when it is a live session.
func forkedFrom(r Tx, row asRow) (*store.ForkPoint, error) {
	var retired int64
	var session string
	err := scanHot(r, `SELECT retired, session_id FROM agent_sessions WHERE pk = ?`, []any{row.Parent}, &retired, &session)
	if errors.Is(err, sql.ErrNoRows) || err == nil && retired != rowLive {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &store.ForkPoint{Session: session, At: row.ForkSeq}, nil
}

// newEpoch is a fresh change-feed epoch (see migration 00007).
func newEpoch() int64 {
	for {
		if e := rand.Int64(); e != 0 {
			return e
		}
	}
}
