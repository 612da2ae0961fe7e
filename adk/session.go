package adk

import (
	"iter"
	"maps"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
)

var (
	_ session.Session = (*Session)(nil)
	_ session.State   = (*sessionState)(nil)
	_ session.Events  = events(nil)
)

// Session is the session.Session handle of this service: the session as it
// was read or created, kept current by the appends made through it. It is
// safe for concurrent use.
type Session struct {
	key store.SessionKey

	// appendMu serializes appends through this handle, so that they chain
	// versions instead of refusing each other.
	appendMu sync.Mutex

	mu        sync.RWMutex // guards the fields below
	version   int64
	updatedAt time.Time
	state     map[string]any
	// stateShared: state is shared with the read cache (and other
	// handles) and must be copied before it is written.
	stateShared bool
	events      []*session.Event
}

// ownState makes the handle's state its own before a write; s.mu is held.
func (s *Session) ownState() {
	if s.stateShared {
		s.state = maps.Clone(s.state)
		s.stateShared = false
	}
}

// ID returns the session id.
func (s *Session) ID() string { return s.key.Session }

// AppName returns the application name.
func (s *Session) AppName() string { return s.key.App }

// UserID returns the user id.
func (s *Session) UserID() string { return s.key.User }

// State returns the session's merged state: session keys, and app and user
// keys with their "app:" and "user:" prefixes. Set changes the handle only;
// state is persisted through event state deltas.
func (s *Session) State() session.State { return &sessionState{s: s} }

// Events returns the events read with the session and appended through it,
// oldest first. The view does not change when more events are appended.
func (s *Session) Events() session.Events {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return events(s.events[:len(s.events):len(s.events)])
}

// LastUpdateTime returns the time of the session's last update.
func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updatedAt
}

// Version returns the store version the handle is at (see
// store.AgentSession.Version).
func (s *Session) Version() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.version
}

// replace loads a freshly read session into the handle.
func (s *Session) replace(fresh *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = fresh.version
	s.updatedAt = fresh.updatedAt
	s.state = fresh.state
	s.stateShared = fresh.stateShared
	s.events = fresh.events
}

// applied records a successful append in the handle: every key of the
// delta, temp: keys included, is visible in the handle's state for the rest
// of the invocation (as in ADK's own services); stored is the event without
// its temp: keys.
func (s *Session) applied(version int64, updatedAt time.Time, delta map[string]any, stored *session.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version = version
	s.updatedAt = updatedAt
	s.ownState()
	if s.state == nil {
		s.state = make(map[string]any, len(delta))
	}
	maps.Copy(s.state, delta)
	s.events = append(s.events, stored)
}

// sessionState is the session.State view of a handle. It reads through
// the handle, so it sees appends and refreshes made after it was taken.
type sessionState struct{ s *Session }

// Get returns the value of key, or session.ErrStateKeyNotExist.
func (v *sessionState) Get(key string) (any, error) {
	v.s.mu.RLock()
	defer v.s.mu.RUnlock()
	val, ok := v.s.state[key]
	if !ok {
		return nil, session.ErrStateKeyNotExist
	}
	return val, nil
}

// Set sets key in the handle (not in the store).
func (v *sessionState) Set(key string, val any) error {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.ownState()
	if v.s.state == nil {
		v.s.state = make(map[string]any)
	}
	v.s.state[key] = val
	return nil
}

// All iterates over a copy of the state taken when it is called.
func (v *sessionState) All() iter.Seq2[string, any] {
	v.s.mu.RLock()
	snapshot := v.s.state
	if !v.s.stateShared { // a shared map is never written: no copy needed
		snapshot = maps.Clone(snapshot)
	}
	v.s.mu.RUnlock()
	return func(yield func(string, any) bool) {
		for k, val := range snapshot {
			if !yield(k, val) {
				return
			}
		}
	}
}

// events is an immutable view of a handle's events.
type events []*session.Event

// All iterates over the events, oldest first.
func (e events) All() iter.Seq[*session.Event] {
	return func(yield func(*session.Event) bool) {
		for _, ev := range e {
			if !yield(ev) {
				return
			}
		}
	}
}

// Len returns the number of events.
func (e events) Len() int { return len(e) }

// At returns the i-th event, or nil when i is out of range.
func (e events) At(i int) *session.Event {
	if i >= 0 && i < len(e) {
		return e[i]
	}
	return nil
}
