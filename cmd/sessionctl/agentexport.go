package main

// Maintenance of agent sessions (store.AgentSessions): export and import
// of sessions with their event logs and session state, and of the app and
// user state they share (once per application and per user); stats; and
// what gc does with them (it reports idle sessions and keeps them).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/store"
)

var agentOps = facetOps{
	one: "agent session", many: "agent sessions",
	count:     func(c *facetCounts) *int64 { return &c.AgentSessions },
	section:   "agent_sessions",
	export:    exportAgentSessions,
	restore:   restoreAgentSessions,
	stats:     statsAgentSessions,
	statsRows: statsAgentSessionsRows,
	gc:        gcAgentSessions,
	gcLines:   gcAgentSessionsLines,
}

// agentExport is the agent-session section of an export document. App
// and user state are shared by sessions, so they appear once per
// application and once per (application, user); each session carries its
// own session state and its whole event log. Event data and state values
// are JSON documents kept as JSON text in strings: the store returns them
// byte for byte as the runtime wrote them, and so does an import.
type agentExport struct {
	AppState  []agentAppState      `json:"app_state"`
	UserState []agentUserState     `json:"user_state"`
	Sessions  []agentSessionExport `json:"sessions"`
}

// agentAppState is the state of one application.
type agentAppState struct {
	App   string            `json:"app"`
	State map[string]string `json:"state"`
}

// agentUserState is the state of one user of an application.
type agentUserState struct {
	App   string            `json:"app"`
	User  string            `json:"user"`
	State map[string]string `json:"state"`
}

// agentSessionExport is one agent session: its key, version, times,
// session state and event log.
type agentSessionExport struct {
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
	// Version counts the session's writes (1 at creation, one per append
	// and per session-state update); an import restores it exactly, so
	// that a runtime's ExpectedVersion taken before the export still
	// holds.
	Version    int64              `json:"version"`
	EventCount int64              `json:"event_count"`
	CreatedAt  time.Time          `json:"created_at"`
	UpdatedAt  time.Time          `json:"updated_at"`
	State      map[string]string  `json:"state"`
	Events     []agentEventExport `json:"events"`
}

// agentEventExport is one event of a session's log.
type agentEventExport struct {
	ID           string    `json:"id"`
	Seq          int64     `json:"seq"`
	InvocationID string    `json:"invocation_id,omitempty"`
	Timestamp    time.Time `json:"timestamp"`
	Data         string    `json:"data"`
}

func (s agentSessionExport) key() store.SessionKey {
	return store.SessionKey{App: s.App, User: s.User, Session: s.Session}
}

// keyText names an agent session in messages.
func keyText(k store.SessionKey) string {
	return fmt.Sprintf("%s (app %s, user %s)", k.Session, k.App, k.User)
}

func textState(m map[string]json.RawMessage) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func rawState(m map[string]string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = json.RawMessage(v)
	}
	return out
}

// exportAgentSessions writes the app and user state of every application
// and user (or of those of the selected sessions), then every agent
// session (or those whose session id is one of x.ids) with its events and
// session state, one at a time.
func exportAgentSessions(ctx context.Context, x *exportRun) error {
	as := x.st.AgentSessions()
	scopes, err := x.g.agentScopes(ctx)
	if err != nil {
		return err
	}
	// The apps and users of the selected sessions, listed without their
	// events, so that their shared state comes first in the document.
	var apps map[string]bool
	var users map[store.SessionKey]bool
	if x.ids != nil {
		apps, users = map[string]bool{}, map[store.SessionKey]bool{}
		err = eachAgentSession(ctx, as, scopes.apps, func(s store.AgentSession) error {
			if x.wants(s.Key.Session) {
				apps[s.Key.App] = true
				users[store.SessionKey{App: s.Key.App, User: s.Key.User}] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	x.out.open("agent_sessions", '{')
	defer x.out.close('}')
	x.out.open("app_state", '[')
	for _, app := range scopes.apps {
		if apps != nil && !apps[app] {
			continue
		}
		st, err := as.GetState(ctx, store.SessionKey{App: app})
		if err != nil {
			x.out.close(']')
			return err
		}
		if len(st.App) > 0 {
			x.out.value("", agentAppState{App: app, State: textState(st.App)})
		}
	}
	x.out.close(']')
	x.out.open("user_state", '[')
	for _, u := range scopes.users {
		if users != nil && !users[u] {
			continue
		}
		st, err := as.GetState(ctx, u)
		if err != nil {
			x.out.close(']')
			return err
		}
		if len(st.User) > 0 {
			x.out.value("", agentUserState{App: u.App, User: u.User, State: textState(st.User)})
		}
	}
	x.out.close(']')
	x.out.open("sessions", '[')
	defer x.out.close(']')
	return eachAgentSession(ctx, as, scopes.apps, func(s store.AgentSession) error {
		if !x.wants(s.Key.Session) {
			return nil
		}
		full, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: s.Key, IncludeEvents: true})
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted since it was listed
		}
		if err != nil {
			return err
		}
		x.out.value("", newAgentSessionExport(full))
		x.counts.AgentSessions++
		x.tick()
		return nil
	})
}

func newAgentSessionExport(s store.AgentSession) agentSessionExport {
	x := agentSessionExport{
		App: s.Key.App, User: s.Key.User, Session: s.Key.Session,
		Version: s.Version, EventCount: s.EventCount, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		State: textState(s.State.Session), Events: make([]agentEventExport, 0, len(s.Events)),
	}
	for _, ev := range s.Events {
		x.Events = append(x.Events, agentEventExport{ID: ev.ID, Seq: ev.Seq, InvocationID: ev.InvocationID,
			Timestamp: ev.Timestamp, Data: string(ev.Data)})
	}
	return x
}

// eachAgentSession calls fn for every session of the applications, in
// key order. Listed sessions carry their state but no events.
func eachAgentSession(ctx context.Context, as store.AgentSessions, apps []string, fn func(store.AgentSession) error) error {
	for _, app := range apps {
		req := store.ListAgentSessionsRequest{App: app, Limit: store.MaxPageSize}
		for {
			page, err := as.ListSessions(ctx, req)
			if err != nil {
				return err
			}
			for _, s := range page.Items {
				if err := fn(s); err != nil {
					return err
				}
			}
			if page.Next == "" {
				break
			}
			req.Cursor = page.Next
		}
	}
	return nil
}

// restoreAgentSessions reads the agent-session section of an export
// document (version 2 and later; version 1 has none): the app and user
// state, which a stored key with another value conflicts with, and the
// sessions, each restored exactly (version, times, events, session state).
func restoreAgentSessions(ctx context.Context, x *importRun, in *jsonIn, version int) error {
	ok, err := in.delim('{', true)
	if err != nil || !ok {
		return err
	}
	if version < 2 {
		return store.Invalid("agent_sessions", fmt.Sprintf("not part of export version %d", version))
	}
	seenApp, seenUser, seen := map[string]bool{}, map[store.SessionKey]bool{}, map[store.SessionKey]bool{}
	for {
		k, more, err := in.key()
		if err != nil || !more {
			return err
		}
		switch k {
		case "app_state":
			err = in.array(func(i int) error {
				var a agentAppState
				if err := in.decode(&a); err != nil {
					return err
				}
				field := fmt.Sprintf("agent_sessions.app_state[%d]", i)
				if err := store.ValidateID("app", a.App); err != nil {
					return prefixInvalid(field, err)
				}
				if seenApp[a.App] {
					return store.Invalid(field+".app", "app "+a.App+" appears twice")
				}
				seenApp[a.App] = true
				state := rawState(a.State)
				if err := validateStateScope(field+".state", state, func(c map[string]json.RawMessage) store.ScopedState { return store.ScopedState{App: c} }); err != nil {
					return err
				}
				return x.putState("app", "app "+a.App, func(w store.RecordWriter) ([]string, error) { return w.PutAppState(a.App, state) })
			})
		case "user_state":
			err = in.array(func(i int) error {
				var u agentUserState
				if err := in.decode(&u); err != nil {
					return err
				}
				field := fmt.Sprintf("agent_sessions.user_state[%d]", i)
				key := store.SessionKey{App: u.App, User: u.User}
				if err := store.ValidateID("app", u.App); err != nil {
					return prefixInvalid(field, err)
				}
				if err := store.ValidateID("user", u.User); err != nil {
					return prefixInvalid(field, err)
				}
				if seenUser[key] {
					return store.Invalid(field, "user "+u.User+" of app "+u.App+" appears twice")
				}
				seenUser[key] = true
				state := rawState(u.State)
				if err := validateStateScope(field+".state", state, func(c map[string]json.RawMessage) store.ScopedState { return store.ScopedState{User: c} }); err != nil {
					return err
				}
				return x.putState("user", "user "+u.User+" of app "+u.App, func(w store.RecordWriter) ([]string, error) {
					return w.PutUserState(u.App, u.User, state)
				})
			})
		case "sessions":
			err = in.array(func(i int) error {
				var s agentSessionExport
				if err := in.decode(&s); err != nil {
					return err
				}
				field := fmt.Sprintf("agent_sessions.sessions[%d]", i)
				rec, err := s.record(field)
				if err != nil {
					return err
				}
				if seen[rec.Key] {
					return store.Invalid(field, "session "+keyText(rec.Key)+" appears twice")
				}
				seen[rec.Key] = true
				return x.put(&x.counts.AgentSessions, "agent session "+keyText(rec.Key), func(w store.RecordWriter) (bool, error) {
					return w.PutAgentSession(rec)
				})
			})
		default:
			err = store.Invalid("agent_sessions", fmt.Sprintf("unknown field %q", k))
		}
		if err != nil {
			return err
		}
	}
}

// validateStateScope checks the keys and values of one state scope, in
// chunks of store.MaxStateEntries (the store's limit per request; a
// restore takes any number).
func validateStateScope(field string, m map[string]json.RawMessage, scope func(map[string]json.RawMessage) store.ScopedState) error {
	keys := slices.Sorted(maps.Keys(m))
	for len(keys) > 0 {
		n := min(len(keys), store.MaxStateEntries)
		c := make(map[string]json.RawMessage, n)
		for _, k := range keys[:n] {
			c[k] = m[k]
		}
		if err := scope(c).Validate(field); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// record checks s as the store would on import, without writing, and
// returns the agent session to restore. The error is an
// *InvalidInputError.
func (s *agentSessionExport) record(field string) (store.AgentSession, error) {
	key := s.key()
	rec := store.AgentSession{Key: key, Version: s.Version, EventCount: s.EventCount,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(), State: store.ScopedState{Session: rawState(s.State)}}
	if err := key.Validate(); err != nil {
		return rec, prefixInvalid(field, err)
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"created_at", s.CreatedAt}, {"updated_at", s.UpdatedAt}} {
		if y := t.t.Year(); t.t.IsZero() || y < 1970 || y > 9999 {
			return rec, store.Invalid(field+"."+t.name, "must be a time from 1970 to 9999")
		}
	}
	if s.Version < 1 {
		return rec, store.Invalid(field+".version", "must be at least 1")
	}
	if s.EventCount != int64(len(s.Events)) {
		return rec, store.Invalid(field+".event_count", fmt.Sprintf("is %d, but the session has %d events", s.EventCount, len(s.Events)))
	}
	ids := map[string]bool{}
	for i, ev := range s.Events {
		f := fmt.Sprintf("%s.events[%d]", field, i)
		switch {
		case ev.Seq != int64(i+1):
			return rec, store.Invalid(f+".seq", fmt.Sprintf("is %d, want %d: positions run from 1 without gaps", ev.Seq, i+1))
		case ev.ID == "":
			return rec, store.Invalid(f+".id", "must not be empty")
		case ids[ev.ID]:
			return rec, store.Invalid(f+".id", "event id "+ev.ID+" appears twice")
		case ev.Timestamp.IsZero():
			return rec, store.Invalid(f+".timestamp", "must be set")
		}
		ids[ev.ID] = true
		e := store.AgentEvent{ID: ev.ID, InvocationID: ev.InvocationID, Timestamp: ev.Timestamp.UTC(), Data: json.RawMessage(ev.Data)}
		if err := (store.AppendEventRequest{Key: key, Event: e}).Validate(); err != nil {
			return rec, prefixInvalid(f, err)
		}
		e.Seq = ev.Seq
		rec.Events = append(rec.Events, e)
	}
	if err := validateStateScope(field+".state", rec.State.Session, func(c map[string]json.RawMessage) store.ScopedState { return store.ScopedState{Session: c} }); err != nil {
		return rec, err
	}
	return rec, nil
}

// agentCounts summarizes the agent sessions and their state.
type agentCounts struct {
	Total            int64 `json:"total"`
	Apps             int64 `json:"apps"`
	Users            int64 `json:"users"`
	Events           int64 `json:"events"`
	AppStateKeys     int64 `json:"app_state_keys"`
	UserStateKeys    int64 `json:"user_state_keys"`
	SessionStateKeys int64 `json:"session_state_keys"`
}

func statsAgentSessions(ctx context.Context, g *globals, st cliStore, doc *statsJSON) error {
	as := st.AgentSessions()
	scopes, err := g.agentScopes(ctx)
	if err != nil {
		return err
	}
	c := agentCounts{Apps: int64(len(scopes.apps))}
	users := map[store.SessionKey]bool{}
	for _, u := range scopes.users {
		users[u] = true
	}
	for _, app := range scopes.apps {
		s, err := as.GetState(ctx, store.SessionKey{App: app})
		if err != nil {
			return err
		}
		c.AppStateKeys += int64(len(s.App))
	}
	for _, u := range scopes.users {
		s, err := as.GetState(ctx, u)
		if err != nil {
			return err
		}
		c.UserStateKeys += int64(len(s.User))
	}
	err = eachAgentSession(ctx, as, scopes.apps, func(s store.AgentSession) error {
		c.Total++
		c.Events += s.EventCount
		c.SessionStateKeys += int64(len(s.State.Session))
		users[store.SessionKey{App: s.Key.App, User: s.Key.User}] = true
		return nil
	})
	c.Users = int64(len(users))
	doc.AgentSessions = c
	return err
}

func statsAgentSessionsRows(doc *statsJSON) [][2]string {
	c := doc.AgentSessions
	return [][2]string{
		{"agent sessions", fmt.Sprintf("%d in %d %s, %d %s; %d %s", c.Total, c.Apps, plural(int(c.Apps), "app", "apps"),
			c.Users, plural(int(c.Users), "user", "users"), c.Events, plural(int(c.Events), "event", "events"))},
		{"agent state", fmt.Sprintf("%d app, %d user, %d session %s", c.AppStateKeys, c.UserStateKeys, c.SessionStateKeys,
			plural(int(c.SessionStateKeys), "key", "keys"))},
	}
}

// gcAgentSessions counts the agent sessions not updated since the cutoff.
// gc keeps them: the store has no delete-by-age for agent sessions, and
// deleting what a listing found would not be one decision (an append
// between the listing and the delete would be lost with the session).
func gcAgentSessions(ctx context.Context, g *globals, st cliStore, req gcRequest, doc *gcJSON) error {
	if req.cutoff.IsZero() {
		return nil
	}
	scopes, err := g.agentScopes(ctx)
	if err != nil {
		return err
	}
	var seen int64
	p := g.status
	p.show("gc: counting idle agent sessions")
	return eachAgentSession(ctx, st.AgentSessions(), scopes.apps, func(s store.AgentSession) error {
		seen++
		if s.UpdatedAt.Before(req.cutoff) {
			doc.IdleAgentSessions++
		}
		p.update(func() string {
			return fmt.Sprintf("gc: counting idle agent sessions: %d read, %d idle", seen, doc.IdleAgentSessions)
		})
		return nil
	})
}

func gcAgentSessionsLines(req gcRequest, doc *gcJSON) []string {
	if req.cutoff.IsZero() || doc.IdleAgentSessions == 0 {
		return nil
	}
	n := doc.IdleAgentSessions
	return []string{fmt.Sprintf("kept %d agent %s not updated since %s (gc does not delete agent sessions)",
		n, plural(int(n), "session", "sessions"), tableTime(req.cutoff))}
}

// agentScopes are the applications that have agent sessions, app state or
// user state, and the (application, user) pairs that have user state, in
// byte order.
type agentScopes struct {
	apps  []string
	users []store.SessionKey // App and User set
}

// The store's API lists sessions of one application and reads the state
// of a named application or user, but cannot list the applications and
// users themselves; these two queries, on the facet's tables, are the
// only SQL of export, stats and gc for agent sessions. Everything else
// goes through store.AgentSessions.
const (
	agentAppsSQL = `SELECT app FROM agent_sessions UNION SELECT app FROM agent_app_state
		UNION SELECT app FROM agent_user_state`
	agentUsersSQL = `SELECT DISTINCT app, user_id FROM agent_user_state`
)

// agentScopes reads the applications and users of the database.
func (g *globals) agentScopes(ctx context.Context) (agentScopes, error) {
	apps, err := g.rawStrings(ctx, agentAppsSQL, 1)
	if err != nil {
		return agentScopes{}, fmt.Errorf("list agent applications: %w", err)
	}
	users, err := g.rawStrings(ctx, agentUsersSQL, 2)
	if err != nil {
		return agentScopes{}, fmt.Errorf("list agent users: %w", err)
	}
	var s agentScopes
	for _, r := range apps {
		s.apps = append(s.apps, r[0])
	}
	for _, r := range users {
		s.users = append(s.users, store.SessionKey{App: r[0], User: r[1]})
	}
	slices.Sort(s.apps)
	slices.SortFunc(s.users, func(a, b store.SessionKey) int {
		if c := strings.Compare(a.App, b.App); c != 0 {
			return c
		}
		return strings.Compare(a.User, b.User)
	})
	return s, nil
}
