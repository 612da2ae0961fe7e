package storetest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Continued reads (GetAgentSessionRequest.Continue): a caller that holds
// the first events of a log reads only the ones after them, and only while
// the store can tell that nothing but appends happened since.

// asFull reads key's whole log through st.
func asFull(e *env, st store.Store, key store.SessionKey) store.AgentSession {
	e.t.Helper()
	s, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil {
		e.t.Fatalf("GetSession: %v", err)
	}
	return s
}

// asContinue reads key through st continuing from prev (a read of the
// whole log), and checks the result against a fresh read of the whole
// log: the prefix prev held followed by the tail read when continued,
// the whole log read again otherwise, and the same state, version and
// counts. It returns the session with its whole log, as the caller now
// holds it.
func asContinue(e *env, st store.Store, key store.SessionKey, prev store.AgentSession) store.AgentSession {
	e.t.Helper()
	got, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true,
		Continue: &store.EventPrefix{Log: prev.Log, Count: int64(len(prev.Events))}})
	if err != nil {
		e.t.Fatalf("GetSession continuing: %v", err)
	}
	whole := got
	if got.Continued {
		whole.Events = append(append([]store.AgentEvent{}, prev.Events...), got.Events...)
	}
	fresh := asFull(e, st, key)
	if want := fresh.Log == prev.Log && int64(len(prev.Events)) <= fresh.EventCount; got.Continued != want {
		e.t.Fatalf("continued %v, want %v (stamp kept: %v)", got.Continued, want, fresh.Log == prev.Log)
	}
	if !reflect.DeepEqual(whole.Events, fresh.Events) {
		e.t.Fatalf("continued %v: events %s, a fresh read has %s", got.Continued, evIDs(whole.Events), evIDs(fresh.Events))
	}
	whole.Continued = false
	if !reflect.DeepEqual(whole, fresh) {
		e.t.Fatalf("continued read differs from a fresh one:\n%+v\n%+v", whole, fresh)
	}
	return whole
}

// testASContinueTail: after appends (by this store and by another one on
// the database), a continued read returns only the new events, with the
// stamp the appends reported; with nothing new it returns none.
func testASContinueTail(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	var last store.AppendEventResult
	for i := range 5 {
		last = e.asAppend(key, asEvent(fmt.Sprint("e", i), "w", i), store.ScopedState{Session: map[string]json.RawMessage{"n": raw(i)}}, 0)
	}
	prev := asFull(e, e.st, key)
	if prev.Log.IsZero() || prev.Log != last.Log || last.Event.Seq != 5 {
		t.Fatalf("stamps: read %v, last append %v at seq %d", prev.Log, last.Log, last.Event.Seq)
	}
	other := e.open()
	for i := 5; i < 8; i++ {
		res, err := other.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: asEvent(fmt.Sprint("e", i), "x", i),
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"n": raw(i)}, App: map[string]json.RawMessage{"a": raw(i)}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Log != prev.Log {
			t.Fatalf("an append moved the log's stamp")
		}
	}
	got, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true,
		Continue: &store.EventPrefix{Log: prev.Log, Count: 5}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Continued || evIDs(got.Events) != "e5,e6,e7" || got.EventCount != 8 || got.Events[0].Seq != 6 {
		t.Fatalf("continued %v with %s (count %d), want e5 e6 e7 after 5", got.Continued, evIDs(got.Events), got.EventCount)
	}
	wantState(t, "app", got.State.App, map[string]any{"a": 7})
	now := asContinue(e, e.st, key, prev)
	// Nothing new: continued, no events (an empty slice, not nil).
	got, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true,
		Continue: &store.EventPrefix{Log: now.Log, Count: now.EventCount}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Continued || got.Events == nil || len(got.Events) != 0 {
		t.Fatalf("nothing new: continued %v, events %v", got.Continued, got.Events)
	}
	// The data-only form continues too.
	got, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, EventDataOnly: true,
		Continue: &store.EventPrefix{Log: prev.Log, Count: 6}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Continued || len(got.Events) != 2 || string(got.Events[1].Data) != string(now.Events[7].Data) || got.Events[1].ID != "" {
		t.Fatalf("data only: continued %v, %d events", got.Continued, len(got.Events))
	}
	// A prefix longer than the log, or of no log, is read whole.
	for _, p := range []store.EventPrefix{{Log: prev.Log, Count: 9}, {Count: 0}} {
		got, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, Continue: &p})
		if err != nil {
			t.Fatal(err)
		}
		if got.Continued || len(got.Events) != 8 {
			t.Fatalf("prefix %+v: continued %v with %d events", p, got.Continued, len(got.Events))
		}
	}
}

// testASContinueRewind: a rewind, by another store, gives the log a new
// stamp, also when the log grows back past the length the caller held.
func testASContinueRewind(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	for i := range 6 {
		e.asAppend(key, asEvent(fmt.Sprint("e", i), "w", i), store.ScopedState{Session: map[string]json.RawMessage{"n": raw(i)}}, 0)
	}
	prev := asFull(e, e.st, key)
	other := e.open()
	if _, err := other.AgentSessions().Rewind(e.ctx, store.RewindRequest{Key: key, To: 3}); err != nil {
		t.Fatal(err)
	}
	// Positions 4..7 now name other events, with the same ids.
	for i := 3; i < 7; i++ {
		if _, err := other.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: asEvent(fmt.Sprint("e", i), "other", i)}); err != nil {
			t.Fatal(err)
		}
	}
	now := asContinue(e, e.st, key, prev)
	if string(now.Events[3].Data) == string(prev.Events[3].Data) {
		t.Fatal("the rewound position kept its event")
	}
	// Rewound to nothing and appended again.
	if _, err := other.AgentSessions().Rewind(e.ctx, store.RewindRequest{Key: key, To: 0}); err != nil {
		t.Fatal(err)
	}
	e.asAppend(key, asEvent("e0", "third", 0), store.ScopedState{}, 0)
	asContinue(e, e.st, key, now)
}

// testASContinueRecreate: a session deleted and created again under the
// same key, with events of the same ids, is another log.
func testASContinueRecreate(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	for i := range 3 {
		e.asAppend(key, asEvent(fmt.Sprint("e", i), "w", i), store.ScopedState{}, 0)
	}
	prev := asFull(e, e.st, key)
	other := e.open()
	for round := range 3 {
		if err := other.AgentSessions().DeleteSession(e.ctx, key); err != nil {
			t.Fatal(err)
		}
		_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true,
			Continue: &store.EventPrefix{Log: prev.Log, Count: 3}})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("continuing a deleted session: %v", err)
		}
		if _, err := other.AgentSessions().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if _, err := other.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key,
				Event: asEvent(fmt.Sprint("e", i), "round"+strconv.Itoa(round), i)}); err != nil {
				t.Fatal(err)
			}
		}
		prev = asContinue(e, e.st, key, prev)
	}
	// Removed by retention (idle) and created again.
	e.clock.Advance(2 * time.Hour)
	e.sweep(store.SweepOptions{Policies: []store.Policy{{Kind: store.PolicyAgentSessionsIdle, MaxAge: time.Hour}}})
	if _, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an idle session after the sweep: %v", err)
	}
	e.asCreate(key, store.ScopedState{})
	for i := range 5 {
		e.asAppend(key, asEvent(fmt.Sprint("e", i), "after-retention", i), store.ScopedState{}, 0)
	}
	asContinue(e, e.st, key, prev)
}

// testASContinueState: a state change without an event keeps the log's
// stamp; the continued read has the new state and version.
func testASContinueState(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{Session: map[string]json.RawMessage{"k": raw("v0")}})
	e.asAppend(key, asEvent("e0", "w", 0), store.ScopedState{}, 0)
	prev := asFull(e, e.st, key)
	other := e.open()
	if _, err := other.AgentSessions().UpdateState(e.ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"k": raw("v1")}, User: map[string]json.RawMessage{"u": raw(1)}}}); err != nil {
		t.Fatal(err)
	}
	now := asContinue(e, e.st, key, prev)
	if now.Version != prev.Version+1 {
		t.Fatalf("version %d after a state update of version %d", now.Version, prev.Version)
	}
	wantState(t, "session", now.State.Session, map[string]any{"k": "v1"})
	wantState(t, "user", now.State.User, map[string]any{"u": 1})
}

// testASContinueFork: a fork is a log of its own; continuing a fork from
// below its fork point reads the parent's part it holds.
func testASContinueFork(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	for i := range 4 {
		e.asAppend(key, asEvent(fmt.Sprint("e", i), "w", i), store.ScopedState{}, 0)
	}
	parent := asFull(e, e.st, key)
	f := e.fork(key, 4, "fork")
	fk := withSession(key, "fork")
	if f.Log == parent.Log {
		t.Fatal("a fork has its parent's stamp")
	}
	early := asFull(e, e.st, fk)
	early.Events = early.Events[:2] // as if read when the fork held two events
	asContinue(e, e.st, fk, early)
	e.asAppend(fk, asEvent("f0", "fork", 0), store.ScopedState{}, 0)
	// The parent's own appends do not reach the fork, and the reverse.
	e.asAppend(key, asEvent("p4", "w", 4), store.ScopedState{}, 0)
	now := asContinue(e, e.st, fk, asFull(e, e.st, fk))
	if evIDs(now.Events) != "e0,e1,e2,e3,f0" {
		t.Fatalf("fork reads %s", evIDs(now.Events))
	}
	asContinue(e, e.st, key, parent)
	// The parent rewound below the fork point: the fork's log stays.
	e.rewind(key, 1)
	asContinue(e, e.st, fk, now)
}

// testASContinueBadInput: Continue needs the whole log.
func testASContinueBadInput(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	s := asFull(e, e.st, key)
	p := &store.EventPrefix{Log: s.Log}
	for _, req := range []store.GetAgentSessionRequest{
		{Key: key, Continue: p},
		{Key: key, IncludeEvents: true, Recent: 2, Continue: p},
		{Key: key, IncludeEvents: true, After: e.clock.Now(), Continue: p},
		{Key: key, IncludeEvents: true, FromLatestSummary: true, Continue: p},
		{Key: key, IncludeEvents: true, Continue: &store.EventPrefix{Log: s.Log, Count: -1}},
	} {
		if _, err := e.as().GetSession(e.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("%+v: %v, want ErrInvalidInput", req, err)
		}
	}
}

// testASContinueConcurrent: goroutines append through several stores
// while a reader continues from what it holds; whatever it holds is
// always a prefix of the log, and at the end the whole of it.
func testASContinueConcurrent(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	const writers, n = 4, 40
	var wg sync.WaitGroup
	for w := range writers {
		st := e.st
		if w%2 == 1 {
			st = e.open()
		}
		wg.Go(func() {
			for i := range n {
				if _, err := st.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: key,
					Event: asEvent(fmt.Sprintf("w%d-%d", w, i), strconv.Itoa(w), i)}); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	reader := e.open()
	held := asFull(e, reader, key)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		got, err := reader.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true,
			Continue: &store.EventPrefix{Log: held.Log, Count: int64(len(held.Events))}})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Continued {
			t.Fatal("an append-only log was not continued")
		}
		if int64(len(held.Events)+len(got.Events)) != got.EventCount {
			t.Fatalf("held %d + read %d events, the snapshot counts %d", len(held.Events), len(got.Events), got.EventCount)
		}
		held.Events = append(held.Events, got.Events...)
		held.Log = got.Log
	}
	fresh := asFull(e, e.st, key)
	if len(fresh.Events) != writers*n || !reflect.DeepEqual(held.Events, fresh.Events) {
		t.Fatalf("held %d events, the log has %d (equal: %v)", len(held.Events), len(fresh.Events), reflect.DeepEqual(held.Events, fresh.Events))
	}
}

// testASContinueProcess: another OS process appends while this one
// continues; then this one rewinds and the process appends again.
func testASContinueProcess(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	held := asFull(e, e.st, key)
	run := func(writer string, n int) {
		cmd, stdout := e.spawn("agent-append", key.App, key.User, key.Session, writer, strconv.Itoa(n))
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v", err)
		}
	}
	run("p1", 30)
	held = asContinue(e, e.st, key, held)
	if len(held.Events) != 30 {
		t.Fatalf("held %d events after the helper's 30", len(held.Events))
	}
	before := held
	run("p2", 5)
	held = asContinue(e, e.st, key, held)
	if len(held.Events) != 35 {
		t.Fatalf("held %d events after the helper's 35", len(held.Events))
	}
	e.rewind(key, 10)
	run("p3", 30) // past the length held, with new events
	asContinue(e, e.st, key, before)
	asContinue(e, e.st, key, held)
}
