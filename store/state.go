package store

import (
	"encoding/json"
	"maps"
	"strings"
	"unicode/utf8"
)

// Bounds of scoped state.
const (
	// MaxStateKeyLength bounds a state key (bytes, without its prefix).
	MaxStateKeyLength = 1024
	// MaxStateValueSize bounds one state value (bytes of JSON).
	MaxStateValueSize = 1 << 20
	// MaxStateEntries bounds the keys of one scope in one request.
	MaxStateEntries = 1024
)

// ScopedState is key–value state in the three scopes of an agent session.
// Keys are stored without prefixes; values are JSON documents. A nil map
// and an empty map mean the same: nothing in that scope.
//
//   - App state is shared by every user and session of the application.
//   - User state is shared by every session of one user of the application.
//   - Session state belongs to one session and is deleted with it.
type ScopedState struct {
	App     map[string]json.RawMessage `json:"app,omitempty"`
	User    map[string]json.RawMessage `json:"user,omitempty"`
	Session map[string]json.RawMessage `json:"session,omitempty"`
}

// IsEmpty reports whether no scope holds a key.
func (s ScopedState) IsEmpty() bool {
	return len(s.App) == 0 && len(s.User) == 0 && len(s.Session) == 0
}

// Validate checks every key and value of s. The error is an
// *InvalidInputError naming the scope.
func (s ScopedState) Validate(field string) error {
	for _, sc := range []struct {
		name string
		m    map[string]json.RawMessage
	}{{"app", s.App}, {"user", s.User}, {"session", s.Session}} {
		if len(sc.m) > MaxStateEntries {
			return Invalid(field+"."+sc.name, "too many keys")
		}
		for k, v := range sc.m {
			if len(k) > MaxStateKeyLength {
				return Invalid(field+"."+sc.name, "key too long")
			}
			if !validText(k) {
				return Invalid(field+"."+sc.name, "key must be valid UTF-8 without NUL")
			}
			if len(v) > MaxStateValueSize {
				return Invalid(field+"."+sc.name, "value too large")
			}
			if !json.Valid(v) || !utf8.Valid(v) {
				return Invalid(field+"."+sc.name, "value must be a JSON document in UTF-8")
			}
		}
	}
	return nil
}

// Clone returns a deep copy of s (the maps and the value bytes).
func (s ScopedState) Clone() ScopedState {
	return ScopedState{App: cloneValues(s.App), User: cloneValues(s.User), Session: cloneValues(s.Session)}
}

func cloneValues(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = append(json.RawMessage(nil), v...)
	}
	return out
}

// StatePrefixes is the key convention that maps one flat state map onto
// the three scopes: keys starting with App go to app state, keys starting
// with User to user state, keys starting with Temp are never persisted,
// every other key is session state. The prefix is removed from stored keys
// and added back by Merge.
type StatePrefixes struct {
	App  string
	User string
	Temp string
}

// DefaultStatePrefixes is the convention of Google's ADK (and of
// trpc-agent-go): "app:", "user:" and "temp:".
var DefaultStatePrefixes = StatePrefixes{App: "app:", User: "user:", Temp: "temp:"}

// Split sorts a flat state map into scopes and drops temporary keys. The
// App prefix is tested first, then User, then Temp; an empty prefix never
// matches.
func (p StatePrefixes) Split(flat map[string]json.RawMessage) ScopedState {
	var s ScopedState
	for k, v := range flat {
		switch {
		case p.App != "" && strings.HasPrefix(k, p.App):
			s.App = put(s.App, k[len(p.App):], v)
		case p.User != "" && strings.HasPrefix(k, p.User):
			s.User = put(s.User, k[len(p.User):], v)
		case p.Temp != "" && strings.HasPrefix(k, p.Temp):
		default:
			s.Session = put(s.Session, k, v)
		}
	}
	return s
}

// Merge returns the flat view of s: session keys as they are, app and user
// keys with their prefixes. On a clash a scoped key wins over a session key
// that happens to carry the same prefix.
func (p StatePrefixes) Merge(s ScopedState) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(s.App)+len(s.User)+len(s.Session))
	maps.Copy(out, s.Session)
	for k, v := range s.App {
		out[p.App+k] = v
	}
	for k, v := range s.User {
		out[p.User+k] = v
	}
	return out
}

func put(m map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = make(map[string]json.RawMessage)
	}
	m[k] = v
	return m
}
