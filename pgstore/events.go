package pgstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/store"
)

var _ store.AgentSessions = (*AgentSessions)(nil)

// AgentSessions is the agent-session facet of a Store (see
// store.AgentSessions): sessions keyed by (app, user, session id), an
// append-only event log per session and state in app, user and session
// scopes. Obtain it with Store.AgentSessions.
//
// Appends to one session serialize on its row: the conditional UPDATE of
// its version waits for a concurrent append and re-checks the version on
// the committed row (READ COMMITTED), so a stale handle is refused, never
// interleaved. State keys are written in sorted order, so that concurrent
// deltas to shared app and user state cannot deadlock.
type AgentSessions struct{ s *Store }

// AgentSessions returns the agent-session facet.
func (s *Store) AgentSessions() store.AgentSessions { return &AgentSessions{s: s} }

const (
	pgasInsertSQL = `INSERT INTO agent_sessions
		(app, user_id, session_id, version, event_count, created_at_ms, updated_at_ms)
		VALUES (?, ?, ?, 1, 0, ?, ?) RETURNING pk`

	pgasColumns = `pk, user_id, session_id, version, event_count, created_at_ms, updated_at_ms`

	pgasGetSQL = `SELECT ` + pgasColumns + `
		FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id = ?`

	// pgasBumpSQL moves the session to its next version only if the caller
	// named the current one (or none). Parameters: 1 now, 2 app, 3 user,
	// 4 session, 5 expected version (0 = any), 6 events added (0 or 1).
	pgasBumpSQL = `UPDATE agent_sessions
		SET version = version + 1, event_count = event_count + ?6::bigint, updated_at_ms = ?1
		WHERE app = ?2 AND user_id = ?3 AND session_id = ?4 AND (?5::bigint = 0 OR version = ?5::bigint)
		RETURNING ` + pgasColumns

	pgasDeleteSQL = `DELETE FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id = ?`

	pgasListAppSQL = `SELECT ` + pgasColumns + `
		FROM agent_sessions WHERE app = ? AND (user_id, session_id) > (?, ?)
		ORDER BY user_id, session_id LIMIT ?`

	pgasListUserSQL = `SELECT ` + pgasColumns + `
		FROM agent_sessions WHERE app = ? AND user_id = ? AND session_id > ?
		ORDER BY session_id LIMIT ?`

	pgevInsertSQL = `INSERT INTO agent_events (session_pk, seq, event_id, invocation_id, ts_ms, data)
		VALUES (?, ?, ?, ?, ?, ?)`

	pgevColumns = `seq, event_id, invocation_id, ts_ms, data`

	pgevByIDSQL = `SELECT ` + pgevColumns + ` FROM agent_events WHERE session_pk = ? AND event_id = ?`

	// Recent events, newest first (the caller reverses); a NULL limit is
	// no limit.
	pgevRecentSQL = `SELECT ` + pgevColumns + ` FROM agent_events
		WHERE session_pk = ? ORDER BY seq DESC LIMIT ?`
	pgevRecentAfterSQL = `SELECT ` + pgevColumns + ` FROM agent_events
		WHERE session_pk = ? AND ts_ms >= ? ORDER BY seq DESC LIMIT ?`

	pgevPageSQL = `SELECT ` + pgevColumns + ` FROM agent_events
		WHERE session_pk = ? AND seq > ? ORDER BY seq LIMIT ?`
	pgevPageInvocationSQL = `SELECT ` + pgevColumns + ` FROM agent_events
		WHERE session_pk = ? AND invocation_id = ? AND seq > ? ORDER BY seq LIMIT ?`

	pgstAppPutSQL = `INSERT INTO agent_app_state (app, key, value) VALUES (?, ?, ?)
		ON CONFLICT (app, key) DO UPDATE SET value = excluded.value`
	pgstUserPutSQL = `INSERT INTO agent_user_state (app, user_id, key, value) VALUES (?, ?, ?, ?)
		ON CONFLICT (app, user_id, key) DO UPDATE SET value = excluded.value`
	pgstSessionPutSQL = `INSERT INTO agent_session_state (session_pk, key, value) VALUES (?, ?, ?)
		ON CONFLICT (session_pk, key) DO UPDATE SET value = excluded.value`

	pgstAppGetSQL     = `SELECT key, value FROM agent_app_state WHERE app = ?`
	pgstUserGetSQL    = `SELECT key, value FROM agent_user_state WHERE app = ? AND user_id = ?`
	pgstSessionGetSQL = `SELECT key, value FROM agent_session_state WHERE session_pk = ?`

	pgstUsersGetSQL    = `SELECT user_id, key, value FROM agent_user_state WHERE app = ? AND user_id = ANY(?)`
	pgstSessionsGetSQL = `SELECT session_pk, key, value FROM agent_session_state WHERE session_pk = ANY(?)`
)

// agentRow is an agent_sessions row.
type agentRow struct {
	PK          int64  `db:"pk"`
	User        string `db:"user_id"`
	Session     string `db:"session_id"`
	Version     int64  `db:"version"`
	EventCount  int64  `db:"event_count"`
	CreatedAtMS int64  `db:"created_at_ms"`
	UpdatedAtMS int64  `db:"updated_at_ms"`
}

func (r *agentRow) session(app string) store.AgentSession {
	return store.AgentSession{
		Key:        store.SessionKey{App: app, User: r.User, Session: r.Session},
		Version:    r.Version,
		EventCount: r.EventCount,
		CreatedAt:  store.FromMillis(r.CreatedAtMS),
		UpdatedAt:  store.FromMillis(r.UpdatedAtMS),
	}
}

// agentEventRow is an agent_events row.
type agentEventRow struct {
	Seq          int64  `db:"seq"`
	EventID      string `db:"event_id"`
	InvocationID string `db:"invocation_id"`
	TsMS         int64  `db:"ts_ms"`
	Data         string `db:"data"`
}

func (r *agentEventRow) event() store.AgentEvent {
	return store.AgentEvent{ID: r.EventID, Seq: r.Seq, InvocationID: r.InvocationID,
		Timestamp: store.FromMillis(r.TsMS), Data: json.RawMessage(r.Data)}
}

// stateRow is one stored state entry, with the owner column of a listing.
type stateRow struct {
	User      string `db:"user_id"`
	SessionPK int64  `db:"session_pk"`
	Key       string `db:"key"`
	Value     string `db:"value"`
}

func stateMap(rows []stateRow) map[string]json.RawMessage {
	if len(rows) == 0 {
		return nil
	}
	m := make(map[string]json.RawMessage, len(rows))
	for _, r := range rows {
		m[r.Key] = json.RawMessage(r.Value)
	}
	return m
}

// putAgentState writes a delta into the scopes of key, each scope's keys in
// sorted order (see AgentSessions).
func putAgentState(tx *wtx, key store.SessionKey, pk int64, delta store.ScopedState) error {
	for _, k := range slices.Sorted(maps.Keys(delta.App)) {
		if _, err := tx.exec(pgstAppPutSQL, key.App, k, string(delta.App[k])); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(delta.User)) {
		if _, err := tx.exec(pgstUserPutSQL, key.App, key.User, k, string(delta.User[k])); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(delta.Session)) {
		if _, err := tx.exec(pgstSessionPutSQL, pk, k, string(delta.Session[k])); err != nil {
			return err
		}
	}
	return nil
}

func agentNotFound(key store.SessionKey) error {
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
	var out store.AgentSession
	err := a.s.write(ctx, func(tx *wtx) error {
		nowMS := store.ToMillis(a.s.now())
		var pk int64
		err := tx.get(&pk, pgasInsertSQL, key.App, key.User, key.Session, nowMS, nowMS)
		if isUniqueViolation(err) {
			return &store.ConflictError{Resource: "session", ID: key.Session, Reason: "session exists"}
		}
		if err != nil {
			return err
		}
		if err := putAgentState(tx, key, pk, req.State); err != nil {
			return err
		}
		var app, user []stateRow
		if err := tx.selectRows(&app, pgstAppGetSQL, key.App); err != nil {
			return err
		}
		if err := tx.selectRows(&user, pgstUserGetSQL, key.App, key.User); err != nil {
			return err
		}
		row := agentRow{PK: pk, User: key.User, Session: key.Session, Version: 1, CreatedAtMS: nowMS, UpdatedAtMS: nowMS}
		out = row.session(key.App)
		out.State = store.ScopedState{App: stateMap(app), User: stateMap(user), Session: req.State.Clone().Session}
		return nil
	})
	if err != nil {
		return store.AgentSession{}, err
	}
	return out, nil
}

// readAgentState reads the scopes of key (pk 0: no session scope).
func readAgentState(r *rtx, key store.SessionKey, pk int64) (store.ScopedState, error) {
	var st store.ScopedState
	var rows []stateRow
	if err := r.selectRows(&rows, pgstAppGetSQL, key.App); err != nil {
		return st, err
	}
	st.App = stateMap(rows)
	if key.User != "" {
		rows = nil
		if err := r.selectRows(&rows, pgstUserGetSQL, key.App, key.User); err != nil {
			return st, err
		}
		st.User = stateMap(rows)
	}
	if pk != 0 {
		rows = nil
		if err := r.selectRows(&rows, pgstSessionGetSQL, pk); err != nil {
			return st, err
		}
		st.Session = stateMap(rows)
	}
	return st, nil
}

// getAgentRow reads a session row in a snapshot.
func getAgentRow(r *rtx, key store.SessionKey) (agentRow, error) {
	var row agentRow
	err := r.get(&row, pgasGetSQL, key.App, key.User, key.Session)
	if errors.Is(err, sql.ErrNoRows) {
		return row, agentNotFound(key)
	}
	return row, err
}

// GetSession returns a session with its state and, if asked, a window of
// its events, from one snapshot (see store.AgentSessions.GetSession).
func (a *AgentSessions) GetSession(ctx context.Context, req store.GetAgentSessionRequest) (store.AgentSession, error) {
	if err := req.Validate(); err != nil {
		return store.AgentSession{}, err
	}
	key := req.Key
	var out store.AgentSession
	err := a.s.readTx(ctx, func(r *rtx) error {
		row, err := getAgentRow(r, key)
		if err != nil {
			return err
		}
		out = row.session(key.App)
		if out.State, err = readAgentState(r, key, row.PK); err != nil {
			return err
		}
		out.Events = nil
		if !req.IncludeEvents {
			return nil
		}
		var limit any // NULL: no limit
		if req.Recent > 0 {
			limit = int64(req.Recent)
		}
		var rows []agentEventRow
		if req.After.IsZero() {
			err = r.selectRows(&rows, pgevRecentSQL, row.PK, limit)
		} else {
			err = r.selectRows(&rows, pgevRecentAfterSQL, row.PK, ceilMillis(req.After), limit)
		}
		if err != nil {
			return err
		}
		out.Events = make([]store.AgentEvent, len(rows))
		for i := range rows {
			out.Events[len(rows)-1-i] = rows[i].event()
		}
		return nil
	})
	if err != nil {
		return store.AgentSession{}, mapErr(err)
	}
	return out, nil
}

// ceilMillis is the first stored millisecond at or after t (event times
// are stored in milliseconds).
func ceilMillis(t time.Time) int64 {
	ms := store.ToMillis(t)
	if !store.FromMillis(ms).Equal(t) {
		ms++
	}
	return ms
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
	err = a.s.readTx(ctx, func(r *rtx) error {
		page = store.Page[store.AgentSession]{Items: []store.AgentSession{}}
		var rows []agentRow
		if req.User == "" {
			err = r.selectRows(&rows, pgasListAppSQL, req.App, cur.User, cur.Session, req.Limit+1)
		} else {
			after := ""
			if cur.User == req.User {
				after = cur.Session
			} else if cur.User > req.User {
				return nil // the cursor is past this user's sessions
			}
			err = r.selectRows(&rows, pgasListUserSQL, req.App, req.User, after, req.Limit+1)
		}
		if err != nil {
			return err
		}
		if len(rows) > req.Limit {
			rows = rows[:req.Limit]
			last := rows[len(rows)-1]
			page.Next = store.SessionCursor{User: last.User, Session: last.Session}.Encode()
		}
		if len(rows) == 0 {
			return nil
		}
		return fillAgentListState(r, req.App, rows, &page)
	})
	if err != nil {
		return store.Page[store.AgentSession]{}, mapErr(err)
	}
	return page, nil
}

// fillAgentListState builds the page's sessions with their three scopes,
// one query per scope.
func fillAgentListState(r *rtx, app string, rows []agentRow, page *store.Page[store.AgentSession]) error {
	var appRows []stateRow
	if err := r.selectRows(&appRows, pgstAppGetSQL, app); err != nil {
		return err
	}
	appState := stateMap(appRows)
	var users []string
	pks := make([]int64, 0, len(rows))
	for _, row := range rows {
		if len(users) == 0 || users[len(users)-1] != row.User {
			users = append(users, row.User)
		}
		pks = append(pks, row.PK)
	}
	var userRows, sessRows []stateRow
	if err := r.selectRows(&userRows, pgstUsersGetSQL, app, users); err != nil {
		return err
	}
	if err := r.selectRows(&sessRows, pgstSessionsGetSQL, pks); err != nil {
		return err
	}
	userState := map[string]map[string]json.RawMessage{}
	for _, s := range userRows {
		if userState[s.User] == nil {
			userState[s.User] = map[string]json.RawMessage{}
		}
		userState[s.User][s.Key] = json.RawMessage(s.Value)
	}
	sessState := map[int64]map[string]json.RawMessage{}
	for _, s := range sessRows {
		if sessState[s.SessionPK] == nil {
			sessState[s.SessionPK] = map[string]json.RawMessage{}
		}
		sessState[s.SessionPK][s.Key] = json.RawMessage(s.Value)
	}
	for i := range rows {
		sess := rows[i].session(app)
		// Clone the shared scopes: every session gets maps of its own.
		sess.State = store.ScopedState{App: appState, User: userState[rows[i].User]}.Clone()
		sess.State.Session = sessState[rows[i].PK]
		page.Items = append(page.Items, sess)
	}
	return nil
}

// DeleteSession deletes a session, its events and its session state (see
// store.AgentSessions.DeleteSession).
func (a *AgentSessions) DeleteSession(ctx context.Context, key store.SessionKey) error {
	if err := key.Validate(); err != nil {
		return err
	}
	return a.s.write(ctx, func(tx *wtx) error {
		res, err := tx.exec(pgasDeleteSQL, key.App, key.User, key.Session)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return agentNotFound(key)
		}
		return nil
	})
}

// errDuplicateAgentEvent aborts an append whose event id is taken;
// AppendEvent then tells a replay from a conflict.
var errDuplicateAgentEvent = errors.New("pgstore: duplicate event id")

// AppendEvent appends an event and applies its state delta in one
// transaction (see store.AgentSessions.AppendEvent).
func (a *AgentSessions) AppendEvent(ctx context.Context, req store.AppendEventRequest) (store.AppendEventResult, error) {
	if err := req.Validate(); err != nil {
		return store.AppendEventResult{}, err
	}
	key, ev := req.Key, req.Event
	if ev.ID == "" {
		ev.ID = uuid.NewString()
	}
	data := string(ev.Data)
	var res store.AppendEventResult
	err := a.s.write(ctx, func(tx *wtx) error {
		now := a.s.now()
		ts := ev.Timestamp
		if ts.IsZero() {
			ts = now
		}
		tsMS := store.ToMillis(ts)
		var row agentRow
		err := tx.get(&row, pgasBumpSQL, store.ToMillis(now), key.App, key.User, key.Session, req.ExpectedVersion, 1)
		if errors.Is(err, sql.ErrNoRows) {
			return refuseAgentAppend(tx, key, ev, req.ExpectedVersion, &res)
		}
		if err != nil {
			return err
		}
		_, err = tx.exec(pgevInsertSQL, row.PK, row.EventCount, ev.ID, ev.InvocationID, tsMS, data)
		if isUniqueViolation(err) {
			return errDuplicateAgentEvent
		}
		if err != nil {
			return err
		}
		if err := putAgentState(tx, key, row.PK, req.Delta); err != nil {
			return err
		}
		stored := ev
		stored.Seq = row.EventCount
		stored.Timestamp = store.FromMillis(tsMS)
		res = store.AppendEventResult{Event: stored, Version: row.Version, UpdatedAt: now}
		return nil
	})
	if errors.Is(err, errDuplicateAgentEvent) {
		err = a.s.write(ctx, func(tx *wtx) error {
			err := refuseAgentAppend(tx, key, ev, 0, &res)
			var stale *store.StaleSessionError
			if errors.As(err, &stale) {
				// The event vanished in between (its session was
				// deleted): nothing stored conflicts any more.
				return &store.ConflictError{Resource: "event", ID: ev.ID, Reason: "event id raced"}
			}
			return err
		})
	}
	if err != nil {
		return store.AppendEventResult{}, err
	}
	return res, nil
}

// refuseAgentAppend runs when the conditional bump matched nothing: the
// session is missing, or the event is already stored (a replay, reported
// as a success that writes nothing), or the caller's version is stale.
func refuseAgentAppend(tx *wtx, key store.SessionKey, ev store.AgentEvent, expected int64, res *store.AppendEventResult) error {
	var row agentRow
	err := tx.get(&row, pgasGetSQL, key.App, key.User, key.Session)
	if errors.Is(err, sql.ErrNoRows) {
		return agentNotFound(key)
	}
	if err != nil {
		return err
	}
	var stored agentEventRow
	err = tx.get(&stored, pgevByIDSQL, row.PK, ev.ID)
	if err == nil {
		got := stored.event()
		if ev.InvocationID != got.InvocationID || string(ev.Data) != string(got.Data) ||
			(!ev.Timestamp.IsZero() && store.ToMillis(ev.Timestamp) != store.ToMillis(got.Timestamp)) {
			return &store.ConflictError{Resource: "event", ID: ev.ID, Reason: "event id exists with other content"}
		}
		*res = store.AppendEventResult{Event: got, Version: row.Version,
			UpdatedAt: store.FromMillis(row.UpdatedAtMS), Replayed: true}
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return &store.StaleSessionError{Key: key, Expected: expected, Current: row.Version}
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
	var rows []agentEventRow
	err = a.s.readTx(ctx, func(r *rtx) error {
		rows = nil
		row, err := getAgentRow(r, req.Key)
		if err != nil {
			return err
		}
		if req.InvocationID != "" {
			return r.selectRows(&rows, pgevPageInvocationSQL, row.PK, req.InvocationID, after, req.Limit+1)
		}
		return r.selectRows(&rows, pgevPageSQL, row.PK, after, req.Limit+1)
	})
	if err != nil {
		return store.Page[store.AgentEvent]{}, mapErr(err)
	}
	page := store.Page[store.AgentEvent]{Items: make([]store.AgentEvent, 0, min(len(rows), req.Limit))}
	for i := range rows {
		if i == req.Limit {
			page.Next = store.EventCursor(rows[i-1].Seq)
			break
		}
		page.Items = append(page.Items, rows[i].event())
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
	err := a.s.readTx(ctx, func(r *rtx) error {
		var pk int64
		if key.Session != "" {
			row, err := getAgentRow(r, key)
			if err != nil {
				return err
			}
			pk = row.PK
		}
		var err error
		out, err = readAgentState(r, key, pk)
		return err
	})
	if err != nil {
		return store.ScopedState{}, mapErr(err)
	}
	return out, nil
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
	err := a.s.write(ctx, func(tx *wtx) error {
		version = 0
		var pk int64
		if key.Session != "" {
			var row agentRow
			var err error
			if len(req.Delta.Session) > 0 {
				err = tx.get(&row, pgasBumpSQL, store.ToMillis(a.s.now()), key.App, key.User, key.Session, req.ExpectedVersion, 0)
			} else {
				// Lock the row so that the version checked is the one the
				// app and user writes commit against.
				err = tx.get(&row, pgasGetSQL+` FOR UPDATE`, key.App, key.User, key.Session)
				if err == nil && req.ExpectedVersion > 0 && row.Version != req.ExpectedVersion {
					return &store.StaleSessionError{Key: key, Expected: req.ExpectedVersion, Current: row.Version}
				}
			}
			if errors.Is(err, sql.ErrNoRows) {
				var cur agentRow
				err := tx.get(&cur, pgasGetSQL, key.App, key.User, key.Session)
				if errors.Is(err, sql.ErrNoRows) {
					return agentNotFound(key)
				}
				if err != nil {
					return err
				}
				return &store.StaleSessionError{Key: key, Expected: req.ExpectedVersion, Current: cur.Version}
			}
			if err != nil {
				return err
			}
			pk, version = row.PK, row.Version
		}
		return putAgentState(tx, key, pk, req.Delta)
	})
	if err != nil {
		return 0, err
	}
	return version, nil
}
