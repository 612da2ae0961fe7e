package adk

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
)

// prefixes is ADK's state-key convention.
var prefixes = store.StatePrefixes{App: session.KeyPrefixApp, User: session.KeyPrefixUser, Temp: session.KeyPrefixTemp}

// encodeState splits a flat ADK state map into the store's scopes, JSON
// encoding each value; temp: keys are dropped.
func encodeState(field string, flat map[string]any) (store.ScopedState, error) {
	if len(flat) == 0 {
		return store.ScopedState{}, nil
	}
	enc := make(map[string]json.RawMessage, len(flat))
	for k, v := range flat {
		if strings.HasPrefix(k, session.KeyPrefixTemp) {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return store.ScopedState{}, fmt.Errorf("%w: %s: value is not JSON-encodable: %w", store.ErrInvalidInput, field, err)
		}
		enc[k] = b
	}
	return prefixes.Split(enc), nil
}

// decodeState returns the merged ADK view of stored scopes.
func decodeState(st store.ScopedState) (map[string]any, error) {
	merged := prefixes.Merge(st)
	out := make(map[string]any, len(merged))
	for k, v := range merged {
		val, err := decodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: a stored state value is not JSON: %w", store.ErrCorrupt, err)
		}
		out[k] = val
	}
	return out, nil
}

// decodeValue decodes a stored JSON value as encoding/json decodes it
// into an interface, with the fast decoder's value reader when it takes
// the value whole (FuzzDecodeValue compares the two).
func decodeValue(data []byte) (any, error) {
	d := fastDec{b: data}
	if v, ok := d.value(); ok {
		if d.ws(); d.i == len(d.b) {
			return v, nil
		}
	}
	var v any
	err := json.Unmarshal(data, &v)
	return v, err
}

// withoutTemp returns ev without temp: keys in its state delta: ev itself
// when it has none, else a shallow copy (ev is not changed).
func withoutTemp(ev *session.Event) *session.Event {
	hasTemp := false
	for k := range ev.Actions.StateDelta {
		if strings.HasPrefix(k, session.KeyPrefixTemp) {
			hasTemp = true
			break
		}
	}
	if !hasTemp {
		return ev
	}
	cp := *ev
	cp.Actions.StateDelta = make(map[string]any, len(ev.Actions.StateDelta))
	for k, v := range ev.Actions.StateDelta {
		if !strings.HasPrefix(k, session.KeyPrefixTemp) {
			cp.Actions.StateDelta[k] = v
		}
	}
	return &cp
}

// decodeEvent decodes a stored event document: the common shape directly
// (see fastDecodeEvent), anything else with encoding/json. what names the
// event in the error. The event's strings may share data's memory: data
// must not be written afterwards.
func decodeEvent(data []byte, what func() string) (*session.Event, error) {
	out := new(session.Event)
	if err := decodeEventInto(data, out, nil, what); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeEventInto is decodeEvent into out (a zero Event), with the structs
// it points to taken from slab when it is not nil.
func decodeEventInto(data []byte, out *session.Event, slab *decodeSlab, what func() string) error {
	if fastDecodeEvent(data, out, slab) {
		return nil
	}
	*out = session.Event{}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s does not decode as an ADK event: %w", store.ErrCorrupt, what(), err)
	}
	return nil
}
