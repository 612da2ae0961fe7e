package archive

// Agent sessions: sessions with their event logs and session state, and
// the app and user state they share (once per application and per user).

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentstore/sessionstore/store"
)

var agentSessionsSection = section{
	key:     "agent_sessions",
	export:  exportAgentSessions,
	restore: restoreAgentSessions,
}

// AgentSessionsSection is the agent-session section of an export document. App
// and user state are shared by sessions, so they appear once per
// application and once per (application, user); each session carries its
// own session state and its whole event log. Event data and state values
// are JSON documents kept as JSON text in strings: the store returns them
// byte for byte as the runtime wrote them, and so does an import.
type AgentSessionsSection struct {
	AppState  []AppState     `json:"app_state"`
	UserState []UserState    `json:"user_state"`
	Sessions  []AgentSession `json:"sessions"`
}

// AppState is the state of one application.
type AppState struct {
	App   string            `json:"app"`
	State map[string]string `json:"state"`
}

// UserState is the state of one user of an application.
type UserState struct {
	App   string            `json:"app"`
	User  string            `json:"user"`
	State map[string]string `json:"state"`
}

// AgentSession is one agent session: its key, version, times,
// session state and event log.
type AgentSession struct {
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
	// Version counts the session's writes (1 at creation, one per append
	// and per session-state update); an import restores it exactly, so
	// that a runtime's ExpectedVersion taken before the export still
	// holds.
	Version    int64             `json:"version"`
	EventCount int64             `json:"event_count"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	State      map[string]string `json:"state"`
	Events     []AgentEvent      `json:"events"`
	// ForkedFrom names the session (same app and user) this one was
	// forked from and the fork point (version 4 and later). Events holds
	// the whole history all the same; an import restores the session as
	// a fork when that session is restored by the same import (a fork
	// listed before its parent waits for it: forks.go) or is stored, with
	// the same history up to the fork point, else as a session of its
	// own.
	ForkedFrom *store.ForkPoint `json:"forked_from,omitempty"`
	// DataKey, when set, is the id of the session's data key in the
	// keyring: the session is encrypted at rest and its event data and
	// state values are sealed with that key (sealed.go).
	DataKey string `json:"data_key,omitempty"`
}

// AgentEvent is one event of a session's log.
type AgentEvent struct {
	ID           string    `json:"id"`
	Seq          int64     `json:"seq"`
	InvocationID string    `json:"invocation_id,omitempty"`
	Timestamp    time.Time `json:"timestamp"`
	Data         string    `json:"data"`
	// Compaction is the range a compaction record summarises (version 4
	// and later); nil for every other event.
	Compaction *store.CompactionRange `json:"compaction,omitempty"`
}

func (s AgentSession) key() store.SessionKey {
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

func NewAgentSession(s store.AgentSession) AgentSession {
	x := AgentSession{
		App: s.Key.App, User: s.Key.User, Session: s.Key.Session,
		Version: s.Version, EventCount: s.EventCount, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		State: textState(s.State.Session), Events: make([]AgentEvent, 0, len(s.Events)),
		ForkedFrom: s.ForkedFrom,
	}
	for _, ev := range s.Events {
		x.Events = append(x.Events, AgentEvent{ID: ev.ID, Seq: ev.Seq, InvocationID: ev.InvocationID,
			Timestamp: ev.Timestamp, Data: string(ev.Data), Compaction: ev.Compaction})
	}
	return x
}

// restoreAgentSessions reads the agent-session section of an export
// document (version 2 and later; version 1 has none): the app and user
// state, which a stored key with another value conflicts with, and the
// sessions, each restored exactly (version, times, events, session state).
func restoreAgentSessions(ctx context.Context, x *importer, in *jsonIn, version int) error {
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
				var a AppState
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
				var u UserState
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
			// A fork whose parent comes later in the section waits for
			// it (forks.go).
			q := newForkQueue()
			put := func(s AgentSession, rec store.AgentSession) error {
				err := x.put(&x.counts.AgentSessions, "agent session "+keyText(rec.Key), func(w store.RecordWriter) (bool, error) {
					return w.PutAgentSession(rec)
				})
				q.done(agentLineageKey(s.App, s.User, s.Session))
				return err
			}
			err = in.array(func(i int) error {
				var s AgentSession
				if err := in.decode(&s); err != nil {
					return err
				}
				field := fmt.Sprintf("agent_sessions.sessions[%d]", i)
				if version < 4 && s.ForkedFrom != nil {
					return store.Invalid(field+".forked_from", fmt.Sprintf("not part of export version %d", version))
				}
				if version < 4 {
					for j, ev := range s.Events {
						if ev.Compaction != nil {
							return store.Invalid(fmt.Sprintf("%s.events[%d].compaction", field, j), fmt.Sprintf("not part of export version %d", version))
						}
					}
				}
				// Checked now; restored now, or at the end of the section
				// when it is a fork whose parent comes later (as the
				// document holds it: sealed content stays sealed).
				var aside []byte
				if s.ForkedFrom != nil && q.waits(x, agentLineageKey(s.App, s.User, s.ForkedFrom.Session)) {
					if aside, err = json.Marshal(s); err != nil {
						return err
					}
				}
				if err := s.open(ctx, x.keys); err != nil { // sealed.go
					return err
				}
				rec, err := s.Record(field)
				if err != nil {
					return err
				}
				if seen[rec.Key] {
					return store.Invalid(field, "session "+keyText(rec.Key)+" appears twice")
				}
				seen[rec.Key] = true
				if aside != nil {
					return q.add(agentLineageKey(s.App, s.User, s.Session), agentLineageKey(s.App, s.User, s.ForkedFrom.Session), field, json.RawMessage(aside))
				}
				return put(s, rec)
			})
			if err == nil {
				err = q.flush(func(a aside, raw []byte) error {
					var s AgentSession
					if err := json.Unmarshal(raw, &s); err != nil {
						return err
					}
					if err := s.open(ctx, x.keys); err != nil {
						return err
					}
					rec, err := s.Record(a.field)
					if err != nil {
						return err
					}
					return put(s, rec)
				})
			}
			q.close()
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
func (s *AgentSession) Record(field string) (store.AgentSession, error) {
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
		if c := ev.Compaction; c != nil {
			if c.From < 1 || c.To < c.From || c.To >= ev.Seq {
				return rec, store.Invalid(f+".compaction", "must cover positions before the record")
			}
			e.Compaction = &store.CompactionRange{From: c.From, To: c.To}
		}
		e.Seq = ev.Seq
		rec.Events = append(rec.Events, e)
	}
	if err := validateStateScope(field+".state", rec.State.Session, func(c map[string]json.RawMessage) store.ScopedState { return store.ScopedState{Session: c} }); err != nil {
		return rec, err
	}
	if fp := s.ForkedFrom; fp != nil {
		if err := store.ValidateID(field+".forked_from.session", fp.Session); err != nil {
			return rec, err
		}
		if fp.At < 0 || fp.At > s.EventCount {
			return rec, store.Invalid(field+".forked_from.at", "must be a position of the session's history")
		}
		rec.ForkedFrom = &store.ForkPoint{Session: fp.Session, At: fp.At}
	}
	return rec, nil
}

// exportAgentSessions writes the app and user state of every application
// and user (or of those of the selected sessions), then every agent
// session (or those whose session id is one of x.ids) with its events and
// session state, one at a time.
func exportAgentSessions(ctx context.Context, x *exporter) error {
	as := x.st.AgentSessions()
	// The apps and users of the selected sessions, listed without their
	// events, so that their shared state comes first in the document.
	var apps map[string]bool
	var users map[store.SessionKey]bool
	if x.ids != nil {
		apps, users = map[string]bool{}, map[store.SessionKey]bool{}
		err := eachAgentSession(ctx, as, func(s store.AgentSession) error {
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
	err := eachApp(ctx, as, func(app string) error {
		if apps != nil && !apps[app] {
			return nil
		}
		st, err := as.GetState(ctx, store.SessionKey{App: app})
		if err == nil && len(st.App) > 0 {
			x.out.value("", AppState{App: app, State: textState(st.App)})
		}
		return err
	})
	x.out.close(']')
	if err != nil {
		return err
	}
	x.out.open("user_state", '[')
	err = eachApp(ctx, as, func(app string) error {
		return eachUser(ctx, as, app, func(user string) error {
			u := store.SessionKey{App: app, User: user}
			if users != nil && !users[u] {
				return nil
			}
			st, err := as.GetState(ctx, u)
			if err == nil && len(st.User) > 0 {
				x.out.value("", UserState{App: app, User: user, State: textState(st.User)})
			}
			return err
		})
	})
	x.out.close(']')
	if err != nil {
		return err
	}
	x.out.open("sessions", '[')
	defer x.out.close(']')
	return eachAgentSession(ctx, as, func(s store.AgentSession) error {
		if !x.wants(s.Key.Session) {
			return nil
		}
		full, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: s.Key, IncludeEvents: true})
		if err != nil {
			return err
		}
		rec := NewAgentSession(full)
		if full.DataKeyID != "" { // sealed.go: never in plaintext
			if err := rec.seal(ctx, x.keys, full.DataKeyID); err != nil {
				return err
			}
		}
		x.out.value("", rec)
		x.tick()
		return nil
	})
}

// eachApp calls fn for every application, in byte order.
func eachApp(ctx context.Context, as store.AgentSessions, fn func(app string) error) error {
	for app, err := range store.AllApps(ctx, as) {
		if err == nil {
			err = fn(app)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachUser calls fn for every user of app, in byte order.
func eachUser(ctx context.Context, as store.AgentSessions, app string, fn func(user string) error) error {
	for u, err := range store.AllUsers(ctx, as, app) {
		if err == nil {
			err = fn(u)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// eachAgentSession calls fn for every session of every application, in
// key order. Listed sessions carry their state but no events.
func eachAgentSession(ctx context.Context, as store.AgentSessions, fn func(store.AgentSession) error) error {
	for s, err := range store.AllAgentSessions(ctx, as) {
		if err == nil {
			err = fn(s)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
