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
	parse:     parseAgentSessions,
	prepare:   prepareAgentSessions,
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
	// and per session-state update); an import restores it, so that a
	// runtime's ExpectedVersion taken before the export still holds.
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

// exportAgentSessions adds every agent session (or those whose session id
// is one of x.ids) with its events and session state, and the app and
// user state of every application and user (or of those of the selected
// sessions).
func exportAgentSessions(ctx context.Context, x *exportRun) error {
	as := x.st.AgentSessions()
	out := &agentExport{AppState: []agentAppState{}, UserState: []agentUserState{}, Sessions: []agentSessionExport{}}
	x.doc.AgentSessions = out
	scopes, err := x.g.agentScopes(ctx)
	if err != nil {
		return err
	}
	apps, users := map[string]bool{}, map[store.SessionKey]bool{}
	err = eachAgentSession(ctx, as, scopes.apps, func(s store.AgentSession) error {
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
		out.Sessions = append(out.Sessions, newAgentSessionExport(full))
		x.counts.AgentSessions++
		x.found[s.Key.Session] = true
		apps[s.Key.App] = true
		users[store.SessionKey{App: s.Key.App, User: s.Key.User}] = true
		return nil
	})
	if err != nil {
		return err
	}
	for _, app := range scopes.apps {
		if x.ids != nil && !apps[app] {
			continue
		}
		st, err := as.GetState(ctx, store.SessionKey{App: app})
		if err != nil {
			return err
		}
		if len(st.App) > 0 {
			out.AppState = append(out.AppState, agentAppState{App: app, State: textState(st.App)})
		}
	}
	for _, u := range scopes.users {
		if x.ids != nil && !users[u] {
			continue
		}
		st, err := as.GetState(ctx, u)
		if err != nil {
			return err
		}
		if len(st.User) > 0 {
			out.UserState = append(out.UserState, agentUserState{App: u.App, User: u.User, State: textState(st.User)})
		}
	}
	return nil
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

// agentImport is the validated agent-session section of an import file.
type agentImport struct {
	appState  []agentStateImport
	userState []agentStateImport
	sessions  []agentSessionImport
}

// agentStateImport is the app state of key.App, or the user state of
// (key.App, key.User), in chunks the store takes in one request.
type agentStateImport struct {
	key    store.SessionKey
	chunks []map[string]json.RawMessage
}

// agentSessionImport is a validated agent session and how to restore it:
// create it with the first chunk of its session state, append its events
// (each carrying one more chunk while there are any), write the chunks
// left, then rewrite one state key with its own value (pad times) so that
// the version ends where it was.
type agentSessionImport struct {
	key       store.SessionKey
	createdAt time.Time
	updatedAt time.Time
	version   int64
	chunks    []map[string]json.RawMessage
	events    []store.AgentEvent
	pad       int64
}

// maxVersionPad bounds the state rewrites an import makes to restore a
// session's version: a version further above the session's events and
// state writes is refused rather than replayed.
const maxVersionPad = 1 << 20

// stateChunks splits a state scope into maps of at most
// store.MaxStateEntries keys (in key order). An empty scope is no chunk.
func stateChunks(m map[string]json.RawMessage) []map[string]json.RawMessage {
	keys := slices.Sorted(maps.Keys(m))
	var out []map[string]json.RawMessage
	for len(keys) > 0 {
		n := min(len(keys), store.MaxStateEntries)
		c := make(map[string]json.RawMessage, n)
		for _, k := range keys[:n] {
			c[k] = m[k]
		}
		out = append(out, c)
		keys = keys[n:]
	}
	return out
}

// parseAgentSessions validates the agent-session section of an export
// document (version 2 and later; version 1 has none).
func parseAgentSessions(doc *exportDoc, version int, f *importFile) error {
	x := doc.AgentSessions
	if x == nil {
		return nil
	}
	if version < 2 {
		return store.Invalid("agent_sessions", fmt.Sprintf("not part of export version %d", version))
	}
	seenApp := map[string]bool{}
	for i, a := range x.AppState {
		field := fmt.Sprintf("agent_sessions.app_state[%d]", i)
		if err := store.ValidateID("app", a.App); err != nil {
			return prefixInvalid(field, err)
		}
		if seenApp[a.App] {
			return store.Invalid(field+".app", "app "+a.App+" appears twice")
		}
		seenApp[a.App] = true
		imp := agentStateImport{key: store.SessionKey{App: a.App}, chunks: stateChunks(rawState(a.State))}
		for _, c := range imp.chunks {
			if err := (store.ScopedState{App: c}).Validate(field + ".state"); err != nil {
				return err
			}
		}
		f.agent.appState = append(f.agent.appState, imp)
	}
	seenUser := map[store.SessionKey]bool{}
	for i, u := range x.UserState {
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
		imp := agentStateImport{key: key, chunks: stateChunks(rawState(u.State))}
		for _, c := range imp.chunks {
			if err := (store.ScopedState{User: c}).Validate(field + ".state"); err != nil {
				return err
			}
		}
		f.agent.userState = append(f.agent.userState, imp)
	}
	seen := map[store.SessionKey]bool{}
	for i := range x.Sessions {
		field := fmt.Sprintf("agent_sessions.sessions[%d]", i)
		imp, err := x.Sessions[i].validate(field)
		if err != nil {
			return err
		}
		if seen[imp.key] {
			return store.Invalid(field, "session "+keyText(imp.key)+" appears twice")
		}
		seen[imp.key] = true
		f.agent.sessions = append(f.agent.sessions, imp)
	}
	return nil
}

// validate checks s as the store would on import, without writing, and
// plans its restore. The error is an *InvalidInputError.
func (s *agentSessionExport) validate(field string) (agentSessionImport, error) {
	key := s.key()
	imp := agentSessionImport{key: key, createdAt: s.CreatedAt.UTC(), updatedAt: s.UpdatedAt.UTC(), version: s.Version}
	if err := key.Validate(); err != nil {
		return imp, prefixInvalid(field, err)
	}
	for _, t := range []struct {
		name string
		t    time.Time
	}{{"created_at", s.CreatedAt}, {"updated_at", s.UpdatedAt}} {
		if y := t.t.Year(); t.t.IsZero() || y < 1970 || y > 9999 {
			return imp, store.Invalid(field+"."+t.name, "must be a time from 1970 to 9999")
		}
	}
	if s.EventCount != int64(len(s.Events)) {
		return imp, store.Invalid(field+".event_count", fmt.Sprintf("is %d, but the session has %d events", s.EventCount, len(s.Events)))
	}
	ids := map[string]bool{}
	for i, ev := range s.Events {
		f := fmt.Sprintf("%s.events[%d]", field, i)
		switch {
		case ev.Seq != int64(i+1):
			return imp, store.Invalid(f+".seq", fmt.Sprintf("is %d, want %d: positions run from 1 without gaps", ev.Seq, i+1))
		case ev.ID == "":
			return imp, store.Invalid(f+".id", "must not be empty")
		case ids[ev.ID]:
			return imp, store.Invalid(f+".id", "event id "+ev.ID+" appears twice")
		case ev.Timestamp.IsZero():
			return imp, store.Invalid(f+".timestamp", "must be set")
		}
		ids[ev.ID] = true
		e := store.AgentEvent{ID: ev.ID, InvocationID: ev.InvocationID, Timestamp: ev.Timestamp.UTC(), Data: json.RawMessage(ev.Data)}
		if err := (store.AppendEventRequest{Key: key, Event: e}).Validate(); err != nil {
			return imp, prefixInvalid(f, err)
		}
		imp.events = append(imp.events, e)
	}
	imp.chunks = stateChunks(rawState(s.State))
	for _, c := range imp.chunks {
		if err := (store.ScopedState{Session: c}).Validate(field + ".state"); err != nil {
			return imp, err
		}
	}
	n := int64(len(imp.events))
	writes := 1 + n + max(0, int64(len(imp.chunks))-1-n)
	switch pad := s.Version - writes; {
	case pad < 0:
		return imp, store.Invalid(field+".version", fmt.Sprintf("is %d, but creating the session and writing its events and state takes %d writes", s.Version, writes))
	case pad > 0 && len(s.State) == 0:
		return imp, store.Invalid(field+".version", fmt.Sprintf("is %d, more than its %d writes, but the session has no session state whose updates would account for it", s.Version, writes))
	case pad > maxVersionPad:
		return imp, store.Invalid(field+".version", fmt.Sprintf("is %d, too far above its %d writes to restore", s.Version, writes))
	default:
		imp.pad = pad
	}
	return imp, nil
}

// prepareAgentSessions fails on an agent session that exists, and on a
// shared state key that exists with another value; with --skip-existing
// it drops those (a skipped session counts as skipped). State keys that
// exist with the same value are dropped: writing them changes nothing.
func prepareAgentSessions(ctx context.Context, x *importRun) error {
	as := x.st.AgentSessions()
	a := &x.file.agent
	var err error
	if a.appState, err = prepareState(ctx, as, a.appState, x.skip, "app"); err != nil {
		return err
	}
	if a.userState, err = prepareState(ctx, as, a.userState, x.skip, "user"); err != nil {
		return err
	}
	var keep []agentSessionImport
	for _, s := range a.sessions {
		_, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: s.key})
		switch {
		case err == nil && !x.skip:
			return fmt.Errorf("%w: agent session %s exists (use --skip-existing)", store.ErrConflict, keyText(s.key))
		case err == nil:
			x.doc.Skipped++
		case errors.Is(err, store.ErrNotFound):
			keep = append(keep, s)
		default:
			return err
		}
	}
	a.sessions = keep
	return nil
}

// prepareState compares app or user state to import with the stored one.
func prepareState(ctx context.Context, as store.AgentSessions, list []agentStateImport, skip bool, scope string) ([]agentStateImport, error) {
	var out []agentStateImport
	for _, imp := range list {
		cur, err := as.GetState(ctx, imp.key)
		if err != nil {
			return nil, err
		}
		stored := cur.App
		owner := "app " + imp.key.App
		if scope == "user" {
			stored = cur.User
			owner = "user " + imp.key.User + " of app " + imp.key.App
		}
		var chunks []map[string]json.RawMessage
		for _, c := range imp.chunks {
			left := map[string]json.RawMessage{}
			for k, v := range c {
				old, ok := stored[k]
				switch {
				case !ok:
					left[k] = v
				case string(old) == string(v):
				case !skip:
					return nil, fmt.Errorf("%w: %s state key %q of %s exists with another value (use --skip-existing)", store.ErrConflict, scope, k, owner)
				}
			}
			if len(left) > 0 {
				chunks = append(chunks, left)
			}
		}
		if len(chunks) > 0 {
			out = append(out, agentStateImport{key: imp.key, chunks: chunks})
		}
	}
	return out, nil
}

// restoreAgentSessions writes the app and user state, then each session.
func restoreAgentSessions(ctx context.Context, x *importRun) error {
	as := x.st.AgentSessions()
	a := x.file.agent
	for _, s := range a.appState {
		for _, c := range s.chunks {
			if _, err := as.UpdateState(ctx, store.UpdateStateRequest{Key: s.key, Delta: store.ScopedState{App: c}}); err != nil {
				return fmt.Errorf("app state of %s: %w", s.key.App, err)
			}
		}
	}
	for _, s := range a.userState {
		for _, c := range s.chunks {
			if _, err := as.UpdateState(ctx, store.UpdateStateRequest{Key: s.key, Delta: store.ScopedState{User: c}}); err != nil {
				return fmt.Errorf("user state of %s in app %s: %w", s.key.User, s.key.App, err)
			}
		}
	}
	for _, s := range a.sessions {
		if err := restoreAgentSession(ctx, as, x.clock, s); err != nil {
			return fmt.Errorf("agent session %s: %w", keyText(s.key), err)
		}
		x.doc.AgentSessions++
	}
	return nil
}

// restoreAgentSession recreates one session with its times, events,
// session state and version. The store stamps creation and update times
// with its clock, so the clock reads the exported times meanwhile. Every
// write after the creation names the version it expects: a writer that
// touches the session during its import fails the import instead of
// interleaving with it.
func restoreAgentSession(ctx context.Context, as store.AgentSessions, clock *importClock, s agentSessionImport) error {
	defer clock.pin(time.Time{})
	chunks := s.chunks
	next := func() map[string]json.RawMessage {
		if len(chunks) == 0 {
			return nil
		}
		c := chunks[0]
		chunks = chunks[1:]
		return c
	}
	clock.pin(s.createdAt)
	created, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: s.key, State: store.ScopedState{Session: next()}})
	if err != nil {
		return err
	}
	version := created.Version
	clock.pin(s.updatedAt)
	for _, ev := range s.events {
		res, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: s.key, Event: ev,
			Delta: store.ScopedState{Session: next()}, ExpectedVersion: version})
		if err != nil {
			return fmt.Errorf("event %s: %w", ev.ID, err)
		}
		version = res.Version
	}
	for c := next(); c != nil; c = next() {
		if version, err = as.UpdateState(ctx, store.UpdateStateRequest{Key: s.key,
			Delta: store.ScopedState{Session: c}, ExpectedVersion: version}); err != nil {
			return err
		}
	}
	if s.pad > 0 {
		// Rewrite one key with its own value: the state stays, the
		// version counts one more write, as in the source.
		k := slices.Min(slices.Collect(maps.Keys(s.chunks[0])))
		same := map[string]json.RawMessage{k: s.chunks[0][k]}
		for range s.pad {
			if version, err = as.UpdateState(ctx, store.UpdateStateRequest{Key: s.key,
				Delta: store.ScopedState{Session: same}, ExpectedVersion: version}); err != nil {
				return err
			}
		}
	}
	if version != s.version {
		return fmt.Errorf("restored at version %d, want %d", version, s.version)
	}
	return nil
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
	return eachAgentSession(ctx, st.AgentSessions(), scopes.apps, func(s store.AgentSession) error {
		if s.UpdatedAt.Before(req.cutoff) {
			doc.IdleAgentSessions++
		}
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
