package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

var _ store.AgentSessions = (*AgentSessions)(nil)

// AgentSessions is the agent-session facet of a Store (see
// store.AgentSessions): sessions keyed by (app, user, session id), an
// append-only event log per session and state in app, user and session
// scopes. Obtain it with Store.AgentSessions.
type AgentSessions struct{ s *Store }

// AgentSessions returns the agent-session facet.
func (s *Store) AgentSessions() store.AgentSessions { return &AgentSessions{s: s} }

const (
	// asInsertSQL names updated_min (see minuteOf), so that migration
	// 30's insert trigger has nothing to correct: without it the row went
	// in with updated_min 0 and the trigger's UPDATE moved its index entry,
	// one statement and, in a database of more than a page of sessions,
	// one page (the first of agent_sessions_idle) more per create.
	asInsertSQL = `INSERT INTO agent_sessions
		(app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms, initial_state, tenant, updated_min)
		VALUES (?, ?, ?, 1, 0, ?, ?, ?, ?, ?) RETURNING pk`

	// Only live rows (retired = 0) own a key; the others hold history
	// forks or superseded runs read (lineage.go).
	asGetSQL = `SELECT pk, version, event_count, created_at_ms, updated_at_ms, data_key
		FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id = ? AND retired = 0 AND tenant = ?`

	// asBumpSQL is the hot path of a conditional append: it moves the
	// session to its next version only if the caller named the current one
	// (or none). Parameters: 1 now, 2 app, 3 user, 4 session, 5 expected
	// version (0 = any), 6 events added (0 or 1), 7 the tenant.
	asBumpSQL = `UPDATE agent_sessions
		SET version = version + 1, event_count = event_count + CAST(?6 AS BIGINT), updated_at_ms = ?1
		WHERE app = ?2 AND user_id = ?3 AND session_id = ?4 AND retired = 0 AND tenant = ?7 AND (CAST(?5 AS BIGINT) = 0 OR version = CAST(?5 AS BIGINT))
		RETURNING pk, version, event_count, data_key, epoch`

	asListAppSQL = `SELECT pk, user_id, session_id, version, event_count, created_at_ms, updated_at_ms, data_key
		FROM agent_sessions WHERE app = ? AND (user_id, session_id) > (?, ?) AND retired = 0 AND tenant = ?
		ORDER BY user_id, session_id LIMIT ?`

	asListUserSQL = `SELECT pk, user_id, session_id, version, event_count, created_at_ms, updated_at_ms, data_key
		FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id > ? AND retired = 0 AND tenant = ?
		ORDER BY session_id LIMIT ?`

	evInsertSQL = `INSERT INTO agent_events (session_pk, seq, event_id, invocation_id, ts_us, ts_ns, data, compact_from, compact_to, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// stLogSQL records the value an event's delta gave a session-scope key
	// at the event's position (lineage.go's stateAt reads it).
	stLogSQL = `INSERT INTO agent_state_log (session_pk, key, seq, value, tenant) VALUES (?, ?, ?, ?, ?)`

	// evColumns are an event's columns, data as stored (the facet's reads
	// spell theirs through the dialect: eventStatements).
	evColumns = `seq, event_id, invocation_id, ts_us, ts_ns, compact_from, compact_to, data`

	stAppPutSQL = `INSERT INTO agent_app_state (app, key, value, tenant) VALUES (?, ?, ?, ?)
		ON CONFLICT (tenant, app, key) DO UPDATE SET value = excluded.value`
	stUserPutSQL = `INSERT INTO agent_user_state (app, user_id, key, value, tenant) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (tenant, app, user_id, key) DO UPDATE SET value = excluded.value`
	// stSessionPutSQL writes a session-scope key's current value: its head
	// in the state log (StateHead).
	stSessionPutSQL = `INSERT INTO agent_state_log (session_pk, key, seq, value, tenant) VALUES (?, ?, ` + StateHead + `, ?, ?)
		ON CONFLICT (session_pk, key, seq) DO UPDATE SET value = excluded.value`
)

// stScopesGetSQL reads the three scopes of one session in one
// statement, each row tagged with its scope (scopeApp, scopeUser,
// scopeSession). Parameters: 1 app, 2 user, 3 the session's pk (no
// user and no session match "" and 0), 4 the tenant. The session scope is
// the session's heads in its state log (headsOfSQL).
var stScopesGetSQL = `SELECT 0, key, value FROM agent_app_state WHERE app = ?1 AND tenant = ?4
	UNION ALL SELECT 1, key, value FROM agent_user_state WHERE app = ?1 AND user_id = ?2 AND tenant = ?4
	UNION ALL SELECT 2, key, value FROM (` + headsOfSQL("SELECT CAST(?3 AS BIGINT) AS pk") + `) AS h`

// StateHead is the position of a session-scope key's current value in
// agent_state_log (migration 40): the largest 64-bit integer, which no
// event's position reaches, so that the head sorts right after the key's
// newest logged value (an append writes both on one leaf page) and every
// read of the state at a position (seq <= it) passes it by.
const StateHead = "9223372036854775807"

// headsOfSQL reads the current session state of the sessions whose pks
// the query pks returns (one column, named pk): rows of (pk, key, value). It skips
// from key to key on the log's primary key, two lookups per key whatever
// the length of the log, instead of reading every logged value. The
// recursion starts at each session's first key and moves to the next
// greater one until there is none; a key logged but never given a head
// (a superseded run's row has none) has no row. Each head is read by a
// subquery of its key, a lookup of the primary key: as a join, SQLite's
// planner scanned the whole log, and PostgreSQL's hashed every head of
// the table (a sequential scan), with statistics or without; the
// MATERIALIZED step evaluates each subquery once.
func headsOfSQL(pks string) string {
	return `WITH RECURSIVE k(pk, key) AS (
			SELECT p.pk, (SELECT min(l.key) FROM agent_state_log AS l WHERE l.session_pk = p.pk) FROM (` + pks + `) AS p
			UNION ALL
			SELECT k.pk, (SELECT min(l.key) FROM agent_state_log AS l WHERE l.session_pk = k.pk AND l.key > k.key)
			FROM k WHERE k.key IS NOT NULL),
		hv AS MATERIALIZED (
			SELECT k.pk AS pk, k.key AS key, (SELECT h.value FROM agent_state_log AS h
				WHERE h.session_pk = k.pk AND h.key = k.key AND h.seq = ` + StateHead + `) AS value
			FROM k WHERE k.key IS NOT NULL)
		SELECT pk, key, value FROM hv WHERE value IS NOT NULL`
}

// userPageScopesSQL reads the state of a page of one user's sessions in
// one statement, as pageScopesSQL does but without lists: the page is
// every session of the user from its first session id to its last (the
// same snapshot listed them), so its session scopes are a range of the
// (app, user, session) index joined to their state. Parameters: 1 app, 2
// user, 3 the page's first session id, 4 its last, 5 the tenant.
var userPageScopesSQL = `SELECT 0, '', 0, key, value FROM agent_app_state WHERE app = ?1 AND tenant = ?5
		UNION ALL SELECT 1, user_id, 0, key, value FROM agent_user_state WHERE app = ?1 AND user_id = ?2 AND tenant = ?5
		UNION ALL SELECT 2, '', pk, key, value FROM (` + headsOfSQL(`SELECT s.pk FROM agent_sessions s
			WHERE s.app = ?1 AND s.user_id = ?2 AND s.session_id >= ?3 AND s.session_id <= ?4 AND s.retired = 0 AND s.tenant = ?5`) + `) AS h`

// The scope tags of stScopesGetSQL, pageScopesSQL and userPageScopesSQL.
const (
	scopeApp int64 = iota
	scopeUser
	scopeSession
)

// pageScopesSQL reads the state of a page of sessions in one statement:
// the app scope, the user scopes of the page's users and the session
// scopes of its sessions, each row tagged with its scope and, for a user
// or a session scope, the user id or the session's pk. Parameters: app,
// tenant, app, tenant, the users and the pks as d.ListArg binds them.
func pageScopesSQL(d *Dialect) string {
	return `SELECT 0, '', 0, key, value FROM agent_app_state WHERE app = ? AND tenant = ?
		UNION ALL SELECT 1, user_id, 0, key, value FROM agent_user_state WHERE app = ? AND tenant = ? AND ` + d.InList("user_id") + `
		UNION ALL SELECT 2, '', pk, key, value FROM (` + headsOfSQL(d.IntListRows("pk")) + `) AS h`
}

// eventStatements read the event log. Its data column is selected through
// Dialect.BytesColumn, so that a backend that can hands each event's
// document over without copying it once more.
type eventStatements struct {
	byID string
	// Recent events, newest first (the caller reverses); the dialect's
	// NoLimit is no limit. A time window walks the session's log backwards
	// on the (session, seq) index and keeps the events inside it: no other
	// index is maintained on every append for it.
	recent      string
	recentAfter string
	// A page in log order, of the whole log or of one invocation (on the
	// (session, seq) index too).
	page           string
	pageInvocation string
	// The same, bounded above by a position: the part of an ancestor's
	// log a fork reads (lineage.go).
	recentUpTo         string
	recentAfterUpTo    string
	pageUpTo           string
	pageInvocationUpTo string
}

// newEventStatements spells the event reads; dataOnly selects the data
// column alone (store.GetAgentSessionRequest.EventDataOnly), which on
// SQLite costs a third of the eight columns' driver calls and
// allocations per row.
func newEventStatements(d *Dialect, dataOnly bool) eventStatements {
	data := "data"
	if d.BytesColumn != nil {
		data = d.BytesColumn(data)
	}
	cols := `seq, event_id, invocation_id, ts_us, ts_ns, compact_from, compact_to, ` + data
	if dataOnly {
		cols = data
	}
	sel := `SELECT ` + cols + ` FROM agent_events WHERE session_pk = ? `
	// after: at or after a time to the nanosecond (microseconds, the same
	// microseconds twice, nanoseconds within it).
	const after = `AND (ts_us > ? OR (ts_us = ? AND ts_ns >= ?)) `
	return eventStatements{
		byID:               sel + `AND event_id = ?`,
		recent:             sel + `ORDER BY seq DESC LIMIT ?`,
		recentAfter:        sel + after + `ORDER BY seq DESC LIMIT ?`,
		page:               sel + `AND seq > ? ORDER BY seq LIMIT ?`,
		pageInvocation:     sel + `AND invocation_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		recentUpTo:         sel + `AND seq <= ? ORDER BY seq DESC LIMIT ?`,
		recentAfterUpTo:    sel + `AND seq <= ? ` + after + `ORDER BY seq DESC LIMIT ?`,
		pageUpTo:           sel + `AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
		pageInvocationUpTo: sel + `AND invocation_id = ? AND seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
	}
}

// asRow is an agent_sessions row.
type asRow struct {
	PK int64
	// Parent and ForkSeq are the row's lineage (asGetLineageSQL only).
	Parent      int64
	ForkSeq     int64
	User        string
	Session     string
	Version     int64
	EventCount  int64
	CreatedAtMS int64
	UpdatedAtMS int64
	// DataKey names the row's data key ('' = plaintext; crypt.go).
	DataKey string
	// Epoch is the row's feed epoch (asGetLineageSQL and asBumpSQL
	// only): with PK, the stamp of its log (logStamp).
	Epoch int64
}

// logStamp is the stamp of the row's event log. The epoch is renewed
// whenever positions of a live row's log come to name other events (a
// rewind: lnRewoundSQL), and a row that takes over a key is a new row
// with a fresh epoch (migration 7's insert trigger on SQLite, the
// column's default on PostgreSQL); a row's events are otherwise only
// inserted after its last (evInsertSQL) and moved off it by a rewind.
func (r *asRow) logStamp() store.LogStamp { return store.NewLogStamp(r.PK, r.Epoch) }

func (r *asRow) session(key store.SessionKey) store.AgentSession {
	return store.AgentSession{
		Key:        key,
		Version:    r.Version,
		EventCount: r.EventCount,
		CreatedAt:  rowcodec.FromMillis(r.CreatedAtMS),
		UpdatedAt:  rowcodec.FromMillis(r.UpdatedAtMS),
	}
}

// putState writes a delta into the scopes of key in tenant (pk is the session's
// row, used when delta has session keys). Each scope's keys are written in
// sorted order, so that concurrent deltas to shared app and user state
// take their row locks in one order and cannot deadlock.
func putState(tx Tx, tenant string, key store.SessionKey, pk int64, delta store.ScopedState) error {
	for _, k := range sortedKeys(delta.App) {
		if _, err := tx.Exec(stAppPutSQL, key.App, k, string(delta.App[k]), tenant); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(delta.User) {
		if _, err := tx.Exec(stUserPutSQL, key.App, key.User, k, string(delta.User[k]), tenant); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(delta.Session) {
		if _, err := tx.Exec(stSessionPutSQL, pk, k, string(delta.Session[k]), tenant); err != nil {
			return err
		}
	}
	return nil
}

// sortedKeys returns m's keys in order: nil, without allocating, for an
// empty map (most scopes of most deltas), else one slice. (The iterator
// form, slices.Sorted(maps.Keys(m)), allocated its closures and grew its
// slice: a dozen allocations per append of a two-key delta.)
func sortedKeys(m map[string]json.RawMessage) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func sessionNotFound(key store.SessionKey) error {
	return &store.NotFoundError{Resource: "session", ID: key.Session}
}

// CreateSession creates a session (see store.AgentSessions.CreateSession).
func (a *AgentSessions) CreateSession(ctx context.Context, req store.CreateAgentSessionRequest) (store.AgentSession, error) {
	if err := req.Validate(); err != nil {
		return store.AgentSession{}, err
	}
	key := req.Key
	if key.Session == "" {
		key.Session = uuid.NewString()
	}
	dk, err := a.s.newDataKey(ctx) // crypt.go: nil unless the store encrypts
	if err != nil {
		return store.AgentSession{}, err
	}
	var out store.AgentSession
	err = a.s.write(ctx, func(tx Tx) error {
		nowMS := rowcodec.ToMillis(a.s.now())
		var pk int64
		err := tx.Scan(asInsertSQL, []any{key.App, key.User, key.Session, nowMS, nowMS, sealInitial(dk, req.State.Session), a.s.tenant, minuteOf(nowMS)}, &pk)
		if a.s.isUnique(err) {
			return &store.ConflictError{Resource: "session", ID: key.Session, Reason: "session exists"}
		}
		if err != nil {
			return err
		}
		if err := setKeyOfPK(tx, pk, dk); err != nil {
			return err
		}
		if err := putState(tx, a.s.tenant, key, pk, sealDelta(dk, req.State)); err != nil {
			return err
		}
		shared, err := readState(tx, a.s.tenant, key, 0) // the app and user scopes
		if err != nil {
			return err
		}
		row := asRow{PK: pk, Version: 1, CreatedAtMS: nowMS, UpdatedAtMS: nowMS}
		out = row.session(key)
		out.State = store.ScopedState{App: shared.App, User: shared.User, Session: req.State.Clone().Session}
		return nil
	})
	if err != nil {
		a.s.discardKey(ctx, dk)
		return store.AgentSession{}, err
	}
	return out, nil
}

// GetSession returns a session with its state and, if asked, a window of
// its events, from one snapshot (see store.AgentSessions.GetSession). A
// fork's events are read along its lineage (lineage.go).
func (a *AgentSessions) GetSession(ctx context.Context, req store.GetAgentSessionRequest) (store.AgentSession, error) {
	if err := req.Validate(); err != nil {
		return store.AgentSession{}, err
	}
	key := req.Key
	var out store.AgentSession
	err := a.s.readTxHot(ctx, func(r Tx) error {
		var row asRow
		err := scanHot(r, asGetLineageSQL, []any{key.App, key.User, key.Session, a.s.tenant},
			&row.PK, &row.Version, &row.EventCount, &row.CreatedAtMS, &row.UpdatedAtMS, &row.Parent, &row.ForkSeq, &row.DataKey, &row.Epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return sessionNotFound(key)
		}
		if err != nil {
			return err
		}
		out = row.session(key)
		out.DataKeyID = row.DataKey
		out.Log = row.logStamp()
		if out.State, err = a.s.readStateOpen(r, key, row.PK, row.DataKey); err != nil {
			return err
		}
		if row.Parent != 0 {
			if out.ForkedFrom, err = forkedFrom(r, row); err != nil {
				return err
			}
		}
		if !req.IncludeEvents {
			return nil
		}
		if c := req.Continue; c != nil && c.Log == out.Log && c.Count <= row.EventCount {
			// The log has only grown since the caller's read: its events
			// after the caller's are all that is read.
			out.Continued = true
			out.Events, err = a.readTail(r, row, c.Count, req.EventDataOnly)
			return err
		}
		segs, err := a.lineage(r, row)
		if err != nil {
			return err
		}
		if req.FromLatestSummary {
			out.Events, err = a.readFromSummary(r, segs, req.Recent, req.After, req.EventDataOnly)
			return err
		}
		out.Events, err = a.readRecent(r, segs, row.EventCount, req.Recent, req.After, req.EventDataOnly)
		return err
	})
	if err != nil {
		return store.AgentSession{}, err
	}
	if req.EventDataOnly {
		// The data-only statements left the rest zero already, except
		// for sealed segments and a summary record, read whole.
		for i := range out.Events {
			out.Events[i] = store.AgentEvent{Data: out.Events[i].Data}
		}
	}
	if out.Events == nil && req.IncludeEvents {
		out.Events = []store.AgentEvent{}
	}
	a.s.recordRead(ctx, store.SessionRef{Facet: store.HoldAgentSessions, App: key.App, UserID: key.User, ID: key.Session}) // retention_reads.go
	return out, nil
}

// readTail reads the events of row's view after position after, oldest
// first (GetAgentSessionRequest.Continue). Nothing is read when there
// are none; the lineage is walked only when the tail reaches below the
// row's own events.
func (a *AgentSessions) readTail(r Tx, row asRow, after int64, dataOnly bool) ([]store.AgentEvent, error) {
	n := row.EventCount - after
	if n <= 0 {
		return nil, nil
	}
	segs := []segment{{pk: row.PK, hi: -1, key: row.DataKey}}
	if after < row.ForkSeq {
		var err error
		if segs, err = a.lineage(r, row); err != nil {
			return nil, err
		}
	}
	return a.readAscending(r, segs, after, int(n), "", dataOnly, make([]store.AgentEvent, 0, n))
}

// minuteOf is agent_sessions.updated_min of a row updated at ms: whole
// minutes, as migration 30's triggers compute it (SQLite's and
// PostgreSQL's integer division truncates toward zero, as Go's does).
func minuteOf(ms int64) int64 { return ms / 60000 }

// splitNanos splits t into the stored microseconds and the nanoseconds
// within the microsecond (0..999).
func splitNanos(t time.Time) (us, ns int64) {
	return rowcodec.ToMicros(t), int64(t.Nanosecond() % 1000)
}

// joinNanos is the inverse of splitNanos, in UTC.
func joinNanos(us, ns int64) time.Time {
	return rowcodec.FromMicros(us).Add(time.Duration(ns))
}

// readState reads the three scopes of a session of tenant in one statement (no
// user: no user scope; pk 0: no session scope).
func readState(r Tx, tenant string, key store.SessionKey, pk int64) (store.ScopedState, error) {
	var st store.ScopedState
	var scope int64
	var k string
	var v []byte
	dest := []any{&scope, &k, &v} // allocated once (see appendEvents)
	err := queryHot(r, stScopesGetSQL, []any{key.App, key.User, pk, tenant}, func(rows Rows) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		m := &st.App
		switch scope {
		case scopeUser:
			m = &st.User
		case scopeSession:
			m = &st.Session
		}
		if *m == nil {
			*m = make(map[string]json.RawMessage)
		}
		(*m)[k] = v
		return nil
	})
	return st, err
}

// appendEvents appends the events query selects to evs, opened with
// the data key keyID of the row they belong to (read with that row).
// dataOnly: query is one of eventData's, which select the data alone.
func (s *Store) appendEvents(r Tx, evs []store.AgentEvent, keyID string, dataOnly bool, query string, args []any) ([]store.AgentEvent, error) {
	dk, err := s.dataKey(context.Background(), keyID)
	if err != nil {
		return evs, err
	}
	start := len(evs)
	// One set of scan targets for every row: what Scan is given escapes
	// to the heap.
	var ev store.AgentEvent
	var sc eventScan
	dest := sc.dest(&ev)
	if dataOnly {
		dest = []any{&sc.data}
	}
	err = queryHot(r, query, args, func(rows Rows) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if dataOnly {
			evs = append(evs, store.AgentEvent{Data: sc.data})
			return nil
		}
		sc.finish(&ev)
		evs = append(evs, ev)
		return nil
	})
	if err != nil {
		return evs, err
	}
	return evs, openEvents(dk, evs[start:])
}

// eventScan holds the columns of an event (evColumns) that need
// converting after the scan.
type eventScan struct {
	ts, ns, from, to int64
	data             []byte
}

// dest returns the scan targets of evColumns, into ev and sc.
func (sc *eventScan) dest(ev *store.AgentEvent) []any {
	return []any{&ev.Seq, &ev.ID, &ev.InvocationID, &sc.ts, &sc.ns, &sc.from, &sc.to, &sc.data}
}

// finish converts the scanned columns into ev.
func (sc *eventScan) finish(ev *store.AgentEvent) {
	ev.Timestamp = joinNanos(sc.ts, sc.ns)
	ev.Data = sc.data
	ev.Compaction = nil
	if sc.to > 0 {
		ev.Compaction = &store.CompactionRange{From: sc.from, To: sc.to}
	}
}

// ListSessions returns a page of sessions with their state, ordered by
// user and session id (see store.AgentSessions.ListSessions).
func (a *AgentSessions) ListSessions(ctx context.Context, req store.ListAgentSessionsRequest) (store.Page[store.AgentSession], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[store.AgentSession]{}, err
	}
	var cur store.SessionCursor
	if req.Cursor != "" {
		cur, _ = store.DecodeSessionCursor(req.Cursor) // validated by Normalize
	}
	var page store.Page[store.AgentSession]
	err = a.s.readTxHot(ctx, func(r Tx) error {
		query, args := asListAppSQL, []any{req.App, cur.User, cur.Session, a.s.tenant, req.Limit + 1}
		if req.User != "" {
			after := ""
			if cur.User == req.User {
				after = cur.Session
			} else if cur.User > req.User {
				return nil // the cursor is past this user's sessions
			}
			query, args = asListUserSQL, []any{req.App, req.User, after, a.s.tenant, req.Limit + 1}
		}
		rows := make([]asRow, 0, min(req.Limit+1, 128)) // grows for a large page
		var row asRow
		dest := []any{&row.PK, &row.User, &row.Session, &row.Version, &row.EventCount,
			&row.CreatedAtMS, &row.UpdatedAtMS, &row.DataKey} // allocated once (see appendEvents)
		err := queryHot(r, query, args, func(rs Rows) error {
			if err := rs.Scan(dest...); err != nil {
				return err
			}
			rows = append(rows, row)
			return nil
		})
		if err != nil {
			return err
		}
		if len(rows) > req.Limit {
			rows = rows[:req.Limit]
			last := rows[len(rows)-1]
			page.Next = store.SessionCursor{User: last.User, Session: last.Session}.Encode()
		}
		page.Items = make([]store.AgentSession, 0, len(rows))
		if len(rows) == 0 {
			return nil
		}
		return a.fillListState(r, req.App, rows, &page)
	})
	if err != nil {
		return store.Page[store.AgentSession]{}, err
	}
	return page, nil
}

// fillListState builds the page's sessions with their three scopes, read
// in one statement: the app scope once, the user scopes of the page's
// users and the session scopes of its sessions.
func (a *AgentSessions) fillListState(r Tx, app string, rows []asRow, page *store.Page[store.AgentSession]) error {
	first, last := rows[0], rows[len(rows)-1]
	query, args := userPageScopesSQL, []any{app, first.User, first.Session, last.Session, a.s.tenant}
	if first.User != last.User { // rows are ordered by user: several users
		var users []string
		pks := make([]int64, 0, len(rows))
		for _, row := range rows {
			if len(users) == 0 || users[len(users)-1] != row.User {
				users = append(users, row.User)
			}
			pks = append(pks, row.PK)
		}
		usersArg, err := a.s.d.ListArg(users)
		if err != nil {
			return err
		}
		pksArg, err := a.s.d.ListArg(pks)
		if err != nil {
			return err
		}
		query, args = a.s.q.pageScopes, []any{app, a.s.tenant, app, a.s.tenant, usersArg, pksArg}
	}
	var appState map[string]json.RawMessage
	userState := map[string]map[string]json.RawMessage{}
	sessState := make(map[int64]map[string]json.RawMessage, len(rows))
	var scope, pk int64
	var u, k string
	var v []byte
	dest := []any{&scope, &u, &pk, &k, &v} // allocated once (see appendEvents)
	err := queryHot(r, query, args, func(rs Rows) error {
		if err := rs.Scan(dest...); err != nil {
			return err
		}
		var m map[string]json.RawMessage
		switch scope {
		case scopeApp:
			if appState == nil {
				appState = map[string]json.RawMessage{}
			}
			m = appState
		case scopeUser:
			if m = userState[u]; m == nil {
				m = map[string]json.RawMessage{}
				userState[u] = m
			}
		default:
			if m = sessState[pk]; m == nil {
				m = map[string]json.RawMessage{}
				sessState[pk] = m
			}
		}
		m[k] = v
		return nil
	})
	if err != nil {
		return err
	}
	for _, row := range rows {
		if m := sessState[row.PK]; len(m) > 0 {
			dk, err := a.s.dataKey(context.Background(), row.DataKey)
			if err != nil {
				return err
			}
			if err := openSessionState(dk, m); err != nil {
				return err
			}
		}
	}
	for i := range rows {
		row := &rows[i]
		sess := row.session(store.SessionKey{App: app, User: row.User, Session: row.Session})
		// Clone the shared scopes: every session gets maps of its own.
		sess.State = store.ScopedState{App: appState, User: userState[row.User]}.Clone()
		sess.State.Session = sessState[row.PK]
		page.Items = append(page.Items, sess)
	}
	return nil
}

// errDuplicateEvent aborts an append whose event id is taken; AppendEvent
// then tells a replay from a conflict.
var errDuplicateEvent = errors.New("sqlcore: duplicate event id")

// AppendEvent appends an event and applies its state delta in one
// transaction (see store.AgentSessions.AppendEvent).
func (a *AgentSessions) AppendEvent(ctx context.Context, req store.AppendEventRequest) (store.AppendEventResult, error) {
	if err := req.Validate(); err != nil {
		return store.AppendEventResult{}, err
	}
	return a.appendEvent(ctx, req, nil)
}

// appendEvent appends req's event; rng, when not nil, makes it a
// compaction record covering rng, which must lie within the history the
// record follows (checked in the same transaction).
func (a *AgentSessions) appendEvent(ctx context.Context, req store.AppendEventRequest, rng *store.CompactionRange) (store.AppendEventResult, error) {
	key, ev := req.Key, req.Event
	if ev.ID == "" {
		ev.ID = uuid.NewString()
	}
	ev.Compaction = rng
	var from, to int64
	if rng != nil {
		from, to = rng.From, rng.To
	}
	var res store.AppendEventResult
	err := a.s.write(ctx, func(tx Tx) error {
		now := a.s.now()
		ts := ev.Timestamp
		if ts.IsZero() {
			ts = a.s.cfg.Clock().Truncate(time.Microsecond) // the store's own times keep microseconds
		}
		tsUS, tsNS := splitNanos(ts)
		var pk, version, count, epoch int64
		var keyID string
		err := tx.Scan(asBumpSQL, []any{rowcodec.ToMillis(now), key.App, key.User, key.Session, req.ExpectedVersion, 1, a.s.tenant},
			&pk, &version, &count, &keyID, &epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return a.refuseAppend(tx, key, ev, req.ExpectedVersion, &res)
		}
		if err != nil {
			return err
		}
		if to >= count { // the record is at count: it covers what precedes it
			return store.Invalid("range", "must lie within the session's history")
		}
		dk, err := a.s.dataKey(ctx, keyID)
		if err != nil {
			return err
		}
		var seqText string // the position, in a sealed value's associated data
		if dk != nil {
			seqText = seqAD(count)
		}
		_, err = tx.Exec(evInsertSQL, pk, count, ev.ID, ev.InvocationID, tsUS, tsNS, sealed(dk, ev.Data, adEvent, seqText, ev.ID), from, to, a.s.tenant)
		if a.s.isUnique(err) {
			return errDuplicateEvent
		}
		if err == nil {
			err = a.s.indexSealedEvent(tx, dk, pk, count, tsUS, ev.Data) // search_sealed.go
		}
		if err != nil {
			return err
		}
		if err := putState(tx, a.s.tenant, key, pk, sealDelta(dk, req.Delta)); err != nil {
			return err
		}
		for _, k := range sortedKeys(req.Delta.Session) {
			if _, err := tx.Exec(stLogSQL, pk, k, count, sealed(dk, req.Delta.Session[k], adLog, k, seqText), a.s.tenant); err != nil {
				return err
			}
		}
		stored := ev
		stored.Seq = count
		stored.Timestamp = joinNanos(tsUS, tsNS)
		res = store.AppendEventResult{Event: stored, Version: version, UpdatedAt: now, Log: store.NewLogStamp(pk, epoch)}
		return nil
	})
	if errors.Is(err, errDuplicateEvent) {
		return a.replay(ctx, key, ev)
	}
	if err != nil {
		return store.AppendEventResult{}, err
	}
	return res, nil
}

// refuseAppend runs when the conditional bump matched nothing: the session
// is missing, or the event is already stored (a replay, reported as a
// success that writes nothing), or the caller's version is stale.
func (a *AgentSessions) refuseAppend(tx Tx, key store.SessionKey, ev store.AgentEvent, expected int64, res *store.AppendEventResult) error {
	var row asRow
	err := tx.Scan(asGetSQL, []any{key.App, key.User, key.Session, a.s.tenant},
		&row.PK, &row.Version, &row.EventCount, &row.CreatedAtMS, &row.UpdatedAtMS, &row.DataKey)
	if errors.Is(err, sql.ErrNoRows) {
		return sessionNotFound(key)
	}
	if err != nil {
		return err
	}
	var stored store.AgentEvent
	var sc eventScan
	err = tx.Scan(a.s.q.events.byID, []any{row.PK, ev.ID}, sc.dest(&stored)...)
	if err == nil {
		sc.finish(&stored)
		dk, err := a.s.dataKey(context.Background(), row.DataKey)
		if err != nil {
			return err
		}
		one := []store.AgentEvent{stored}
		if err := openEvents(dk, one); err != nil {
			return err
		}
		stored = one[0]
		if !sameEvent(ev, stored) {
			return &store.ConflictError{Resource: "event", ID: ev.ID, Reason: "event id exists with other content"}
		}
		*res = store.AppendEventResult{Event: stored, Version: row.Version,
			UpdatedAt: rowcodec.FromMillis(row.UpdatedAtMS), Replayed: true}
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &store.StaleSessionError{Key: key, Expected: expected, Current: row.Version}
}

// replay answers an append whose event id is already in the log.
func (a *AgentSessions) replay(ctx context.Context, key store.SessionKey, ev store.AgentEvent) (store.AppendEventResult, error) {
	var res store.AppendEventResult
	err := a.s.write(ctx, func(tx Tx) error {
		err := a.refuseAppend(tx, key, ev, 0, &res)
		var stale *store.StaleSessionError
		if errors.As(err, &stale) {
			// The event vanished in between (its session was deleted and
			// recreated): nothing stored conflicts any more.
			return &store.ConflictError{Resource: "event", ID: ev.ID, Reason: "event id raced"}
		}
		return err
	})
	return res, err
}

// sameEvent reports whether a retried append carries the stored event.
func sameEvent(ev, stored store.AgentEvent) bool {
	if ev.InvocationID != stored.InvocationID || string(ev.Data) != string(stored.Data) {
		return false
	}
	if (ev.Compaction == nil) != (stored.Compaction == nil) || ev.Compaction != nil && *ev.Compaction != *stored.Compaction {
		return false
	}
	return ev.Timestamp.IsZero() || ev.Timestamp.Equal(stored.Timestamp)
}

// ListEvents returns a page of a session's events in log order (see
// store.AgentSessions.ListEvents).
func (a *AgentSessions) ListEvents(ctx context.Context, req store.ListEventsRequest) (store.Page[store.AgentEvent], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[store.AgentEvent]{}, err
	}
	var after int64
	if req.Cursor != "" {
		after, _ = store.DecodeEventCursor(req.Cursor) // validated by Normalize
	}
	key := req.Key
	var page store.Page[store.AgentEvent]
	err = a.s.readTxHot(ctx, func(r Tx) error {
		var row asRow
		err := scanHot(r, asGetLineageSQL, []any{key.App, key.User, key.Session, a.s.tenant},
			&row.PK, &row.Version, &row.EventCount, &row.CreatedAtMS, &row.UpdatedAtMS, &row.Parent, &row.ForkSeq, &row.DataKey, &row.Epoch)
		if errors.Is(err, sql.ErrNoRows) {
			return sessionNotFound(key)
		}
		if err != nil {
			return err
		}
		segs, err := a.lineage(r, row)
		if err != nil {
			return err
		}
		page.Items, err = a.readAscending(r, segs, after, req.Limit+1, req.InvocationID, false,
			make([]store.AgentEvent, 0, max(min(row.EventCount, int64(req.Limit)+1), 0)))
		return err
	})
	if err != nil {
		return store.Page[store.AgentEvent]{}, err
	}
	if len(page.Items) > req.Limit {
		page.Items = page.Items[:req.Limit]
		page.Next = store.EventCursor(page.Items[len(page.Items)-1].Seq)
	}
	if page.Items == nil {
		page.Items = []store.AgentEvent{}
	}
	return page, nil
}

// GetState returns the scopes named by key (see
// store.AgentSessions.GetState).
func (a *AgentSessions) GetState(ctx context.Context, key store.SessionKey) (store.ScopedState, error) {
	if err := validateScopeKey(key); err != nil {
		return store.ScopedState{}, err
	}
	var out store.ScopedState
	err := a.s.readTxHot(ctx, func(r Tx) error {
		var pk int64
		var keyID string
		if key.Session != "" {
			var row asRow
			err := scanHot(r, asGetSQL, []any{key.App, key.User, key.Session, a.s.tenant},
				&row.PK, &row.Version, &row.EventCount, &row.CreatedAtMS, &row.UpdatedAtMS, &row.DataKey)
			if errors.Is(err, sql.ErrNoRows) {
				return sessionNotFound(key)
			}
			if err != nil {
				return err
			}
			pk, keyID = row.PK, row.DataKey
		}
		var err error
		out, err = a.s.readStateOpen(r, key, pk, keyID)
		return err
	})
	return out, err
}

// validateScopeKey checks a key whose user and session parts are optional
// (a session needs its user).
func validateScopeKey(key store.SessionKey) error {
	if err := store.ValidateID("app", key.App); err != nil {
		return err
	}
	if key.User != "" || key.Session != "" {
		if err := store.ValidateID("user", key.User); err != nil {
			return err
		}
	}
	if key.Session != "" {
		return store.ValidateID("session", key.Session)
	}
	return nil
}

// UpdateState merges a delta into the scopes without an event (see
// store.AgentSessions.UpdateState).
func (a *AgentSessions) UpdateState(ctx context.Context, req store.UpdateStateRequest) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	key := req.Key
	var version int64
	err := a.s.write(ctx, func(tx Tx) error {
		version = 0
		var pk int64
		var keyID string
		if key.Session != "" {
			var row asRow
			var err error
			if len(req.Delta.Session) > 0 {
				err = tx.Scan(asBumpSQL, []any{rowcodec.ToMillis(a.s.now()), key.App, key.User, key.Session, req.ExpectedVersion, 0, a.s.tenant},
					&row.PK, &row.Version, &row.EventCount, &row.DataKey, &row.Epoch)
			} else {
				err = tx.Scan(asGetSQL, []any{key.App, key.User, key.Session, a.s.tenant},
					&row.PK, &row.Version, &row.EventCount, &row.CreatedAtMS, &row.UpdatedAtMS, &row.DataKey)
				if err == nil && req.ExpectedVersion > 0 && row.Version != req.ExpectedVersion {
					return &store.StaleSessionError{Key: key, Expected: req.ExpectedVersion, Current: row.Version}
				}
			}
			if errors.Is(err, sql.ErrNoRows) {
				var cur asRow
				err := tx.Scan(asGetSQL, []any{key.App, key.User, key.Session, a.s.tenant},
					&cur.PK, &cur.Version, &cur.EventCount, &cur.CreatedAtMS, &cur.UpdatedAtMS, &cur.DataKey)
				if errors.Is(err, sql.ErrNoRows) {
					return sessionNotFound(key)
				}
				if err != nil {
					return err
				}
				return &store.StaleSessionError{Key: key, Expected: req.ExpectedVersion, Current: cur.Version}
			}
			if err != nil {
				return err
			}
			pk, version, keyID = row.PK, row.Version, row.DataKey
		}
		delta := req.Delta
		if pk != 0 {
			dk, err := a.s.dataKey(ctx, keyID)
			if err != nil {
				return err
			}
			delta = sealDelta(dk, delta)
		}
		return putState(tx, a.s.tenant, key, pk, delta)
	})
	if err != nil {
		return 0, err
	}
	return version, nil
}
