package sqlstore_test

// The fault-point sweep over the agent-session facet's writes (sessions,
// events with state deltas, scoped state).

import (
	"context"
	"encoding/json"

	"github.com/agentstore/sessionstore/store"
)

var sweepAgentKey = store.SessionKey{App: "app", User: "user", Session: "s1"}

func sweepState(scope, key, value string) store.ScopedState {
	m := map[string]json.RawMessage{key: json.RawMessage(value)}
	switch scope {
	case "app":
		return store.ScopedState{App: m}
	case "user":
		return store.ScopedState{User: m}
	}
	return store.ScopedState{Session: m}
}

func agentSetup(ctx context.Context, st store.Store) error {
	a := st.AgentSessions()
	if _, err := a.CreateSession(ctx, store.CreateAgentSessionRequest{Key: sweepAgentKey, State: sweepState("session", "k", `"v"`)}); err != nil {
		return err
	}
	_, err := a.AppendEvent(ctx, store.AppendEventRequest{Key: sweepAgentKey,
		Event: store.AgentEvent{ID: "e1", Data: json.RawMessage(`{"author":"user","text":"hi"}`)},
		Delta: sweepState("user", "seen", `1`)})
	return err
}

func agentSweepOps() []sweepOp {
	return []sweepOp{
		{name: "CreateSession", setup: agentSetup, run: func(ctx context.Context, st store.Store) error {
			k := sweepAgentKey
			k.Session = "s2"
			_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: k,
				State: store.ScopedState{App: map[string]json.RawMessage{"a": json.RawMessage(`true`)},
					Session: map[string]json.RawMessage{"b": json.RawMessage(`[1,2]`)}}})
			return err
		}},
		{name: "AppendEventWithDelta", setup: agentSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: sweepAgentKey,
				Event: store.AgentEvent{ID: "e2", InvocationID: "inv-1", Data: json.RawMessage(`{"author":"model"}`)},
				Delta: store.ScopedState{App: map[string]json.RawMessage{"n": json.RawMessage(`2`)},
					Session: map[string]json.RawMessage{"k": json.RawMessage(`"w"`)}}})
			return err
		}},
		{name: "AppendEventConditional", setup: agentSetup, run: func(ctx context.Context, st store.Store) error {
			s, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: sweepAgentKey})
			if err != nil {
				return err
			}
			_, err = st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: sweepAgentKey, ExpectedVersion: s.Version,
				Event: store.AgentEvent{ID: "e3", Data: json.RawMessage(`{}`)}})
			return err
		}},
		{name: "UpdateState", setup: agentSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := st.AgentSessions().UpdateState(ctx, store.UpdateStateRequest{Key: sweepAgentKey, Delta: sweepState("session", "k", `null`)})
			return err
		}},
		{name: "DeleteSession", setup: agentSetup, run: func(ctx context.Context, st store.Store) error {
			return st.AgentSessions().DeleteSession(ctx, sweepAgentKey)
		}},
	}
}
