package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// countsByListing computes each facet's part of store.Counts the slow way,
// through the facet's listing API. RunCounts walks the facet registry and
// fails for a facet without an entry here: a new facet cannot be left out
// of the counts (and so of sessionctl stats).
var countsByListing = map[facet.Name]func(e *env, c *store.Counts){
	facet.Governance:    (*env).countGovernedByListing,
	facet.Runtime:       (*env).countRuntimeByListing,
	facet.Conversations: (*env).countConversationsByListing,
	facet.AgentSessions: (*env).countAgentSessionsByListing,
	facet.Audit:         (*env).countAuditByListing,
}

// RunCounts checks store.Counter where the backend's Store implements it:
// on a fixture that gives every count a value, the counts equal what
// listing every facet and counting in Go gives; an empty store counts
// zero; the counts under ReadSnapshot are the snapshot's; a closed store
// refuses.
func RunCounts(t *testing.T, h Harness) {
	e := newEnv(t, h)
	cnt, ok := e.st.(store.Counter)
	if !ok {
		t.Skip("the backend's Store does not implement store.Counter")
	}
	e.countsFixture()

	got, err := cnt.Counts(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want store.Counts
	for _, f := range facet.All() {
		count, ok := countsByListing[f.Name]
		if !ok {
			t.Errorf("facet %s has no counts: add its part to store.Counts and to countsByListing", f.Name)
			continue
		}
		count(e, &want)
	}
	if gj, wj := dumpJSON(t, got), dumpJSON(t, want); gj != wj {
		t.Errorf("Counts:\n%s\nwant (by listing):\n%s", gj, wj)
	}
	for _, zero := range zeroCounts(reflect.ValueOf(got), "Counts") {
		t.Errorf("the fixture leaves %s zero: the test cannot tell it from a count that is never made", zero)
	}
	if n := got.Governed.ByStatus[store.StatusExpired]; n != 1 {
		t.Errorf("%d expired governed sessions, want 1 (the active one past its limit)", n)
	}

	t.Run("Empty", func(t *testing.T) {
		z, err := newEnv(t, h).st.(store.Counter).Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := store.Counts{
			Governed:      store.GovernedCounts{ByStatus: map[store.Status]int64{store.StatusActive: 0, store.StatusClosed: 0, store.StatusExpired: 0}},
			Runtime:       store.RuntimeCounts{ByAgent: map[string]int64{}},
			Conversations: store.ConversationCounts{ByState: map[store.ConversationState]int64{}},
		}
		if !reflect.DeepEqual(z, want) {
			t.Errorf("counts of an empty store: %+v, want %+v", z, want)
		}
	})

	t.Run("UnderReadSnapshot", func(t *testing.T) {
		snap, ok := e.st.(store.Snapshotter)
		if !ok {
			t.Skip("the backend's Store does not implement store.Snapshotter")
		}
		before, err := cnt.Counts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var inside store.Counts
		err = snap.ReadSnapshot(e.ctx, func(ctx context.Context) error {
			// Written after the snapshot began: not in its counts.
			e.create(baseRequest())
			e.save(store.NewConversation("after-snapshot"))
			var err error
			inside, err = cnt.Counts(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if gj, wj := dumpJSON(t, inside), dumpJSON(t, before); gj != wj {
			t.Errorf("Counts under ReadSnapshot:\n%s\nwant the snapshot's:\n%s", gj, wj)
		}
		after, err := cnt.Counts(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Governed.Total != before.Governed.Total+1 || after.Conversations.Total != before.Conversations.Total+1 {
			t.Errorf("Counts after the snapshot: %d governed, %d conversations; want %d and %d",
				after.Governed.Total, after.Conversations.Total, before.Governed.Total+1, before.Conversations.Total+1)
		}
	})

	t.Run("AfterClose", func(t *testing.T) {
		c := newEnv(t, h)
		if err := c.st.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.st.(store.Counter).Counts(c.ctx); !errors.Is(err, store.ErrStoreClosed) {
			t.Errorf("Counts after Close: %v, want ErrStoreClosed", err)
		}
	})
}

// zeroCounts names the numbers and maps of v (a struct of counts) that
// are zero or empty.
func zeroCounts(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, zeroCounts(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
	default:
		if v.IsZero() {
			return []string{path}
		}
	}
	return nil
}

// countsFixture fills every facet so that every count has a value: an
// expired, a closed and active governed sessions; runtime sessions of two
// agents with a running and an ended turn and uploads that share content;
// conversations in three states; agent sessions in an app with sessions,
// an app with app state only and an app with user state only.
func (e *env) countsFixture() {
	t := e.t
	t.Helper()
	// Governed sessions of two agents (their audit chains come with them).
	for i, agent := range []string{"agent-a", "agent-b"} {
		for j := range 3 {
			req := baseRequest()
			req.AgentID = agent
			if i == 0 && j == 0 {
				req.TimeLimit = time.Minute // expired below
			}
			s := e.create(req)
			for range j {
				e.mustUse(s.ID, "read_file")
			}
			if j == 2 {
				if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Runtime sessions: one turn running, one ended; uploads, two of them
	// with the same content, one overwritten.
	for _, r := range []store.NewRuntimeSession{
		{ID: e.ids + "r1", AgentAlias: "coder", WorkspaceDir: ".", ChatMode: store.ChatModeChat},
		{ID: e.ids + "r2", AgentAlias: "coder", WorkspaceDir: ".", ChatMode: store.ChatModeChat},
		{ID: e.ids + "r3", AgentAlias: "reviewer", WorkspaceDir: ".", ChatMode: store.ChatModeChat},
	} {
		e.rtInsert(r)
	}
	e.beginTurn(e.ids + "r1")
	gen, _ := e.beginTurn(e.ids + "r2")
	e.endTurn(e.ids+"r2", gen, true)
	e.putUpload(e.ids+"r1", "a", []byte("shared content"))
	e.putUpload(e.ids+"r1", "b", []byte("first"))
	e.putUpload(e.ids+"r1", "b", []byte("overwritten, longer"))
	e.putUpload(e.ids+"r3", "a", []byte("shared content"))
	// Conversations in three states.
	for i := range 5 {
		c := store.NewConversation(fmt.Sprintf("%sconv-%d", e.ids, i))
		c.State = []store.ConversationState{store.StateActive, store.StateCompleted, store.StateError}[i%3]
		c.TotalUsage = store.TokenUsage{PromptTokens: int64(100 * i), CompletionTokens: int64(10 * i), TotalTokens: int64(110*i + 1)}
		c.TotalCost = float64(i%3) * 0.25
		for j := range i + 1 {
			c.Messages = append(c.Messages, store.UserMessage(fmt.Sprint("message ", j)))
		}
		e.save(c)
	}
	// Agent sessions: app-1 with two users' sessions (events, state of
	// every scope); app-2 with app state only; app-3 with user state only.
	s1 := store.SessionKey{App: "app-1", User: "u1", Session: "s1"}
	e.asCreate(s1, store.ScopedState{
		App:     map[string]json.RawMessage{"theme": raw("dark")},
		User:    map[string]json.RawMessage{"lang": raw("en")},
		Session: map[string]json.RawMessage{"step": raw(1), "goal": raw("count")},
	})
	for i := range 3 {
		e.asAppend(s1, asEvent(fmt.Sprint("e", i), "w", i), store.ScopedState{}, 0)
	}
	e.asCreate(store.SessionKey{App: "app-1", User: "u2", Session: "s2"}, store.ScopedState{})
	for _, req := range []store.UpdateStateRequest{
		{Key: store.SessionKey{App: "app-2"}, Delta: store.ScopedState{App: map[string]json.RawMessage{"a": raw(1), "b": raw(2)}}},
		{Key: store.SessionKey{App: "app-3", User: "u3"}, Delta: store.ScopedState{User: map[string]json.RawMessage{"c": raw(3)}}},
	} {
		if _, err := e.as().UpdateState(e.ctx, req); err != nil {
			t.Fatalf("UpdateState(%+v): %v", req.Key, err)
		}
	}
	e.clock.Advance(2 * time.Minute) // past the expiring session's limit
}
