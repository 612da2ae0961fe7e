package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Op is one timed operation of a scenario; caller is the number of the
// calling goroutine, from 0 to the scenario's callers - 1.
type Op func(ctx context.Context, caller int) error

// Scenario is one measurement: Setup prepares a fresh store (not timed)
// and returns the operation that Run calls in a loop from Callers
// goroutines.
type Scenario struct {
	// Name names the scenario in the Report ("use", "append@10", …).
	// Several scenarios may share a name (one operation at several
	// caller counts).
	Name string
	// Callers is the number of concurrent callers; 0 means
	// Options.Callers.
	Callers int
	// Setup seeds st for the given number of callers and returns the
	// operation to time.
	Setup func(ctx context.Context, st store.Store, callers int) (Op, error)
}

// Scenarios returns the standard scenarios, in the order sessionctl bench
// runs them:
//
//   - use (1 caller, then Options.Callers): a governed Use of one tool
//   - append@10, append@10000: a message append to a conversation of 10
//     (cycling over 1,000 conversations) or 10,000 messages
//   - get: a governed session by id
//   - list-100-of-10000: a page of 100 of 10,000 governed sessions
//   - agent-create: an agent session
//   - agent-append (1, then 4 callers on sessions of their own): an event
//     of about 1 KiB with a one-key state delta
//   - agent-get-100-of-1000: the last 100 of 1,000 events of a session
//   - agent-list-100-of-1000: a page of 100 of 1,000 agent sessions
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "use", Callers: 1, Setup: setupUse},
		{Name: "use", Setup: setupUse},
		{Name: "append@10", Callers: 1, Setup: setupAppend(1000, 10)},
		{Name: "append@10000", Callers: 1, Setup: setupAppend(1, 10000)},
		{Name: "get", Callers: 1, Setup: setupGet},
		{Name: "list-100-of-10000", Callers: 1, Setup: setupList},
		{Name: "agent-create", Callers: 1, Setup: setupAgentCreate},
		{Name: "agent-append", Callers: 1, Setup: setupAgentAppend},
		{Name: "agent-append", Callers: 4, Setup: setupAgentAppend},
		{Name: "agent-get-100-of-1000", Callers: 1, Setup: setupAgentGet},
		{Name: "agent-list-100-of-1000", Callers: 1, Setup: setupAgentList},
	}
}

// Select returns the standard scenarios with the given names, in their
// standard order; no names means all of them. A name that names no
// scenario is store.ErrInvalidInput.
func Select(names ...string) ([]Scenario, error) {
	all := Scenarios()
	if len(names) == 0 {
		return all, nil
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(sc Scenario) bool { return sc.Name == n }) {
			return nil, store.Invalid("scenario", "no scenario of that name")
		}
	}
	return slices.DeleteFunc(all, func(sc Scenario) bool { return !slices.Contains(names, sc.Name) }), nil
}

// inParallel runs fn(i) for i in [0, n) on 16 goroutines and returns the
// first error: the seeding of the larger scenarios.
func inParallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				if err := fn(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	err, _ := firstErr.Load().(error)
	return err
}

func setupUse(ctx context.Context, st store.Store, _ int) (Op, error) {
	s, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "bench", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 50, TimeLimit: 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	req := store.UseRequest{SessionID: s.ID, AgentID: "bench", Tools: []string{"read_file"}}
	return func(ctx context.Context, _ int) error {
		_, err := st.Governance().Use(ctx, req)
		return err
	}, nil
}

// setupAppend seeds convs conversations with history messages each; the
// operation appends one message, cycling over the conversations so that
// the history stays near its starting length during the run.
func setupAppend(convs, history int) func(context.Context, store.Store, int) (Op, error) {
	return func(ctx context.Context, st store.Store, _ int) (Op, error) {
		msg := store.Message{Role: "user", Content: []store.ContentBlock{store.TextBlock("how many files are in the repository?")}}
		seed := make([]store.Message, history)
		for i := range seed {
			seed[i] = msg
		}
		err := inParallel(convs, func(i int) error {
			_, err := st.Conversations().Save(ctx, store.Conversation{ID: fmt.Sprintf("conv-%05d", i), Messages: seed})
			return err
		})
		if err != nil {
			return nil, err
		}
		var next atomic.Int64
		return func(ctx context.Context, _ int) error {
			id := fmt.Sprintf("conv-%05d", next.Add(1)%int64(convs))
			_, err := st.Conversations().AppendMessages(ctx, id, msg)
			return err
		}, nil
	}
}

func setupGet(ctx context.Context, st store.Store, _ int) (Op, error) {
	s, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "bench", CallBudget: 1, TimeLimit: time.Hour})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ int) error {
		_, err := st.Governance().Get(ctx, s.ID)
		return err
	}, nil
}

func setupList(ctx context.Context, st store.Store, _ int) (Op, error) {
	err := inParallel(10000, func(i int) error {
		_, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: fmt.Sprintf("bench-%05d", i), AgentID: "bench", CallBudget: 1, TimeLimit: time.Hour,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ int) error {
		p, err := st.Governance().List(ctx, store.ListFilter{After: "bench-05000", Limit: 100})
		if err == nil && len(p.Items) != 100 {
			err = fmt.Errorf("list returned %d items", len(p.Items))
		}
		return err
	}, nil
}

// agentEvent is an agent-session event of about 1 KiB: model text, usage
// metadata, the turn-complete flag.
var agentEvent = func() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"author":        "model",
		"content":       map[string]any{"role": "model", "parts": []any{map[string]any{"text": strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)}}},
		"usageMetadata": map[string]any{"promptTokenCount": 120, "candidatesTokenCount": 60, "totalTokenCount": 180},
		"turnComplete":  true,
	})
	return b
}()

func agentKey(id string) store.SessionKey {
	return store.SessionKey{App: "bench", User: "u", Session: id}
}

// appendAgentEvent appends the i-th event of a session with a one-key
// state delta, as a model turn leaves.
func appendAgentEvent(ctx context.Context, st store.Store, key store.SessionKey, i int) error {
	_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{
		Key:   key,
		Event: store.AgentEvent{ID: fmt.Sprintf("ev-%d", i), InvocationID: fmt.Sprintf("inv-%d", i/4), Data: agentEvent},
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}},
	})
	return err
}

func setupAgentCreate(_ context.Context, st store.Store, _ int) (Op, error) {
	var next atomic.Int64
	return func(ctx context.Context, _ int) error {
		_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: agentKey(fmt.Sprintf("c-%d", next.Add(1)))})
		return err
	}, nil
}

// setupAgentAppend: each caller appends to a session of its own.
func setupAgentAppend(ctx context.Context, st store.Store, callers int) (Op, error) {
	keys := make([]store.SessionKey, callers)
	next := make([]int, callers) // each caller its own element
	for w := range keys {
		keys[w] = agentKey(fmt.Sprintf("w-%d", w))
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: keys[w]}); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, caller int) error {
		i := next[caller]
		next[caller]++
		return appendAgentEvent(ctx, st, keys[caller], i)
	}, nil
}

func setupAgentGet(ctx context.Context, st store.Store, _ int) (Op, error) {
	key := agentKey("history")
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		return nil, err
	}
	for i := range 1000 {
		if err := appendAgentEvent(ctx, st, key, i); err != nil {
			return nil, err
		}
	}
	req := store.GetAgentSessionRequest{Key: key, IncludeEvents: true, Recent: 100}
	return func(ctx context.Context, _ int) error {
		s, err := st.AgentSessions().GetSession(ctx, req)
		if err == nil && len(s.Events) != 100 {
			err = fmt.Errorf("get returned %d events", len(s.Events))
		}
		return err
	}, nil
}

func setupAgentList(ctx context.Context, st store.Store, _ int) (Op, error) {
	err := inParallel(1000, func(i int) error {
		_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: agentKey(fmt.Sprintf("s-%04d", i)),
			State: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage("0")}}})
		return err
	})
	if err != nil {
		return nil, err
	}
	cursor := store.SessionCursor{User: "u", Session: "s-0499"}.Encode()
	return func(ctx context.Context, _ int) error {
		p, err := st.AgentSessions().ListSessions(ctx, store.ListAgentSessionsRequest{App: "bench", User: "u", Cursor: cursor, Limit: 100})
		if err == nil && len(p.Items) != 100 {
			err = fmt.Errorf("list returned %d sessions", len(p.Items))
		}
		return err
	}, nil
}
