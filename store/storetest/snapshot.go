package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// snapshotCounts is what one look at every facet sees.
type snapshotCounts struct {
	governed, conversations, messages, runtime, agentSessions, events, audit int
}

// lookEverywhere counts the items of every facet the way an export reads
// them: pages of each listing, each facet on its own.
func (e *env) lookEverywhere(ctx context.Context) (snapshotCounts, error) {
	var c snapshotCounts
	gp, err := e.st.Governance().List(ctx, store.ListFilter{Limit: store.MaxPageSize})
	if err != nil {
		return c, err
	}
	c.governed = len(gp.Items)
	cp, err := e.st.Conversations().List(ctx, store.ConversationFilter{Limit: store.MaxPageSize})
	if err != nil {
		return c, err
	}
	c.conversations = len(cp.Items)
	msgs, err := e.st.Conversations().Messages(ctx, "snap-conv", 0, store.MaxPageSize)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	c.messages = len(msgs)
	ids, err := e.st.Runtime().ListIDs(ctx, store.ListIDsRequest{Limit: store.MaxPageSize})
	if err != nil {
		return c, err
	}
	c.runtime = len(ids.Items)
	ap, err := e.st.AgentSessions().ListSessions(ctx, store.ListAgentSessionsRequest{App: "snap", Limit: store.MaxPageSize})
	if err != nil {
		return c, err
	}
	c.agentSessions = len(ap.Items)
	ep, err := e.st.AgentSessions().ListEvents(ctx, store.ListEventsRequest{Key: store.SessionKey{App: "snap", User: "u", Session: "s0"}, Limit: store.MaxPageSize})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return c, err
	}
	c.events = len(ep.Items)
	au, err := e.st.Audit().List(ctx, store.AuditFilter{Limit: store.MaxPageSize})
	if err != nil {
		return c, err
	}
	c.audit = len(au.Items)
	return c, nil
}

// snapshotWrites adds one item to every facet (and audit events).
func (e *env) snapshotWrites(t *testing.T, i int) {
	t.Helper()
	id := "snap-" + string(rune('a'+i))
	if _, err := e.gov().Create(e.ctx, store.CreateRequest{ID: id, AgentID: "snap-agent",
		AuthorizedTools: []string{"*"}, CallBudget: 5, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: id, Tools: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	e.save(store.NewConversation(id))
	e.appendMsgs("snap-conv", store.Message{Role: store.RoleUser, Content: []store.ContentBlock{store.TextBlock("hi")}})
	if _, err := e.st.Runtime().Insert(e.ctx, rtNew(id)); err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "snap", User: "u", Session: "s" + string(rune('1'+i))}
	e.asCreate(key, store.ScopedState{})
	e.asAppend(store.SessionKey{App: "snap", User: "u", Session: "s0"},
		store.AgentEvent{ID: id, InvocationID: "inv", Data: json.RawMessage(`{}`)}, store.ScopedState{}, 0)
}

// testReadSnapshotOneInstant: every read under ReadSnapshot, of every
// facet, sees the state when it began, while other goroutines commit
// writes to every facet in between; a read outside it sees them.
func testReadSnapshotOneInstant(t *testing.T, e *env) {
	e.save(store.NewConversation("snap-conv"))
	e.asCreate(store.SessionKey{App: "snap", User: "u", Session: "s0"}, store.ScopedState{})
	e.snapshotWrites(t, 0)
	before, err := e.lookEverywhere(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	nested := false
	err = e.st.ReadSnapshot(e.ctx, func(ctx context.Context) error {
		for i := 1; i <= 3; i++ {
			done := make(chan struct{})
			go func() { defer close(done); e.snapshotWrites(t, i) }()
			<-done
			got, err := e.lookEverywhere(ctx)
			if err != nil {
				return err
			}
			if got != before {
				t.Errorf("after %d rounds of writes the snapshot sees %+v, want %+v", i, got, before)
			}
		}
		// A nested ReadSnapshot stays in the same snapshot.
		return e.st.ReadSnapshot(ctx, func(ctx context.Context) error {
			nested = true
			got, err := e.lookEverywhere(ctx)
			if err == nil && got != before {
				t.Errorf("nested snapshot sees %+v, want %+v", got, before)
			}
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !nested {
		t.Fatal("the nested ReadSnapshot did not call fn")
	}
	after, err := e.lookEverywhere(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := snapshotCounts{governed: before.governed + 3, conversations: before.conversations + 3,
		messages: before.messages + 3, runtime: before.runtime + 3, agentSessions: before.agentSessions + 3,
		events: before.events + 3, audit: after.audit}
	if after != want || after.audit <= before.audit {
		t.Errorf("outside the snapshot: %+v, want %+v (and more audit events than %d)", after, want, before.audit)
	}
}

// testReadSnapshotRefusesWrites: a write with a snapshot's context fails
// with ErrSnapshotWrite and changes nothing.
func testReadSnapshotRefusesWrites(t *testing.T, e *env) {
	if _, err := e.gov().Create(e.ctx, store.CreateRequest{ID: "w", AgentID: "a", AuthorizedTools: []string{"*"},
		CallBudget: 5, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	e.save(store.NewConversation("wc"))
	err := e.st.ReadSnapshot(e.ctx, func(ctx context.Context) error {
		for name, write := range map[string]func() error{
			"Use": func() error {
				_, err := e.gov().Use(ctx, store.UseRequest{SessionID: "w", Tools: []string{"t"}})
				return err
			},
			"Close": func() error { _, err := e.gov().Close(ctx, "w"); return err },
			"Create": func() error {
				_, err := e.gov().Create(ctx, store.CreateRequest{ID: "w2", AgentID: "a", TimeLimit: time.Hour})
				return err
			},
			"AppendMessages": func() error {
				_, err := e.conv().AppendMessages(ctx, "wc", store.Message{Role: store.RoleUser, Content: []store.ContentBlock{store.TextBlock("x")}})
				return err
			},
			"Runtime.Insert": func() error { _, err := e.st.Runtime().Insert(ctx, rtNew("wr")); return err },
			"CreateSession": func() error {
				_, err := e.as().CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "a", User: "u", Session: "s"}})
				return err
			},
		} {
			if err := write(); !errors.Is(err, store.ErrSnapshotWrite) || !errors.Is(err, store.ErrInvalidInput) {
				t.Errorf("%s under a snapshot: %v, want ErrSnapshotWrite", name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.gov().Get(e.ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if s.CallsMade != 0 || s.Status != store.StatusActive {
		t.Errorf("session after refused writes: %d calls, %s", s.CallsMade, s.Status)
	}
	if _, err := e.gov().Get(e.ctx, "w2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("w2 after a refused create: %v", err)
	}
	if e.exists("wr") {
		t.Error("a refused runtime insert left a conversation")
	}
	if _, err := e.st.Runtime().Get(e.ctx, "wr"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("wr after a refused insert: %v", err)
	}
	if c := e.load("wc"); c.MessageCount != 0 {
		t.Errorf("conversation after a refused append: %d messages", c.MessageCount)
	}
}

// testReadSnapshotMisuse: a nil fn, a read while another read of the same
// snapshot is in progress, and a read after the snapshot ended are
// errors, never a wait or a panic.
func testReadSnapshotMisuse(t *testing.T, e *env) {
	if err := e.st.ReadSnapshot(e.ctx, nil); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("nil fn: %v", err)
	}
	if err := e.st.Spend().SetAgentLimits(e.ctx, "busy-agent", []store.SpendLimit{{Metric: store.MetricTotalTokens, Limit: 10}}); err != nil {
		t.Fatal(err)
	}
	var kept context.Context
	calls := 0
	err := e.st.ReadSnapshot(e.ctx, func(ctx context.Context) error {
		kept = ctx
		// A read from inside the callback of another read of the same
		// snapshot.
		return e.st.Spend().ExportEach(ctx, nil, func(store.SpendLimitRecord) error {
			calls++
			_, err := e.gov().List(ctx, store.ListFilter{})
			if !errors.Is(err, store.ErrSnapshotBusy) || !errors.Is(err, store.ErrInvalidInput) {
				t.Errorf("a read inside another read of the snapshot: %v, want ErrSnapshotBusy", err)
			}
			return nil
		}, func(store.ReservationRecord) error { return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("ExportEach called back %d times for one agent limit", calls)
	}
	if _, err := e.gov().List(kept, store.ListFilter{}); !errors.Is(err, store.ErrSnapshotEnded) {
		t.Errorf("a read after the snapshot ended: %v, want ErrSnapshotEnded", err)
	}
}
