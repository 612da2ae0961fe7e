package storetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunAgentSessions runs the agent-session tests: sessions keyed by (app,
// user, session), event logs with windows and paging, scoped state applied
// in the same transaction as the event, stale-handle detection, idempotent
// appends, cascades, bad input, and appends from many goroutines and from
// several processes.
func RunAgentSessions(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateAndGet", testASCreateAndGet},
		{"CreateGeneratesSessionID", testASGeneratedID},
		{"CreateExistingIsConflict", testASCreateConflict},
		{"KeyIncludesUser", testASKeyIncludesUser},
		{"GetMissingIsNotFound", testASGetMissing},
		{"AppendAndReadBack", testASAppendReadBack},
		{"EventTimestampDefaultsToClock", testASTimestampDefault},
		{"RecentAndAfterWindows", testASWindows},
		{"AfterIsExactToTheMicrosecond", testASAfterPrecision},
		{"AppStateIsShared", testASAppState},
		{"UserStateIsPerUser", testASUserState},
		{"SessionStateIsPerSession", testASSessionState},
		{"NullStateValueIsKept", testASNullValue},
		{"StaleHandleIsRefused", testASStale},
		{"StaleRefreshAndRetry", testASStaleRetry},
		{"UnconditionalAppendIgnoresVersion", testASUnconditional},
		{"ReplayedAppendWritesNothing", testASReplay},
		{"SameEventIDOtherContentConflicts", testASReplayConflict},
		{"RefusedAppendWritesNothing", testASRefusedWritesNothing},
		{"ReadersSeeEventAndDeltaTogether", testASSnapshotConsistency},
		{"ListSessionsPaging", testASListSessions},
		{"ListEventsPaging", testASListEvents},
		{"ListAppsAndUsers", testASListScopes},
		{"DeleteCascades", testASDeleteCascades},
		{"DeleteRespectsUser", testASDeleteRespectsUser},
		{"UpdateState", testASUpdateState},
		{"GetState", testASGetState},
		{"StateSurvivesReopen", testASReopen},
		{"OpaqueErrorStrings", testASOpaqueErrors},
		{"InvalidInputWritesNothing", testASInvalidInput},
		{"CanceledContextWritesNothing", testASCanceled},
		{"ConcurrentReadsOnAFreshStore", testASConcurrentReads},
		{"ConcurrentAppendsOneSession", testASConcurrentOneSession},
		{"ConcurrentAppendsManySessions", testASConcurrentManySessions},
		{"ConcurrentConditionalAppendsNeverInterleave", testASConcurrentConditional},
		{"MultiProcessAppends", testASMultiProcess},
		{"ContinueReadsOnlyTheTail", testASContinueTail},
		{"ContinueFallsBackAfterRewind", testASContinueRewind},
		{"ContinueFallsBackAfterRecreate", testASContinueRecreate},
		{"ContinueSeesStateChanges", testASContinueState},
		{"ContinueAcrossForkPoint", testASContinueFork},
		{"ContinueBadInput", testASContinueBadInput},
		{"ContinueUnderConcurrentAppends", testASContinueConcurrent},
		{"ContinueAcrossProcesses", testASContinueProcess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func (e *env) as() store.AgentSessions { return e.st.AgentSessions() }

var asNextApp atomic.Int64

// asKey returns a fresh key: a new app per call, so that app state of
// parallel tests never mixes.
func asKey() store.SessionKey {
	n := asNextApp.Add(1)
	return store.SessionKey{App: "app-" + strconv.FormatInt(n, 10), User: "user-1", Session: "session-1"}
}

// raw encodes v as a JSON state value.
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (e *env) asCreate(key store.SessionKey, state store.ScopedState) store.AgentSession {
	e.t.Helper()
	s, err := e.as().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key, State: state})
	if err != nil {
		e.t.Fatalf("CreateSession: %v", err)
	}
	return s
}

func (e *env) asGet(key store.SessionKey) store.AgentSession {
	e.t.Helper()
	s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil {
		e.t.Fatalf("GetSession: %v", err)
	}
	return s
}

// asEvent is an event whose data names its writer and index.
func asEvent(id, writer string, i int) store.AgentEvent {
	return store.AgentEvent{
		ID:           id,
		InvocationID: "inv-" + writer,
		Data:         raw(map[string]any{"writer": writer, "i": i}),
	}
}

func (e *env) asAppend(key store.SessionKey, ev store.AgentEvent, delta store.ScopedState, expected int64) store.AppendEventResult {
	e.t.Helper()
	res, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: ev, Delta: delta, ExpectedVersion: expected})
	if err != nil {
		e.t.Fatalf("AppendEvent(%s): %v", ev.ID, err)
	}
	return res
}

// wantState compares one scope with the expected values (JSON-equal).
func wantState(t *testing.T, scope string, got map[string]json.RawMessage, want map[string]any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s state has %d keys %v, want %d %v", scope, len(got), slices.Sorted(maps.Keys(got)), len(want), want)
	}
	for k, v := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s state lacks %q", scope, k)
		}
		var gv any
		if err := json.Unmarshal(g, &gv); err != nil {
			t.Fatalf("%s state %q holds invalid JSON %q", scope, k, g)
		}
		if !bytes.Equal(raw(gv), raw(v)) {
			t.Fatalf("%s state %q = %s, want %s", scope, k, g, raw(v))
		}
	}
}

func testASCreateAndGet(t *testing.T, e *env) {
	key := asKey()
	created := e.asCreate(key, store.ScopedState{
		App:     map[string]json.RawMessage{"theme": raw("dark")},
		User:    map[string]json.RawMessage{"name": raw("Ada")},
		Session: map[string]json.RawMessage{"step": raw(1), "nested": raw(map[string]any{"a": []int{1, 2}})},
	})
	now := e.clock.Now()
	if created.Key != key || created.Version != 1 || created.EventCount != 0 {
		t.Fatalf("created %+v", created)
	}
	if !created.CreatedAt.Equal(now) || !created.UpdatedAt.Equal(now) {
		t.Fatalf("created at %v / updated at %v, want the clock's %v", created.CreatedAt, created.UpdatedAt, now)
	}
	got := e.asGet(key)
	if got.Version != 1 || got.EventCount != 0 || len(got.Events) != 0 || got.Events == nil {
		t.Fatalf("get %+v", got)
	}
	if !got.CreatedAt.Equal(now) {
		t.Fatalf("created at %v, want %v", got.CreatedAt, now)
	}
	for _, s := range []store.AgentSession{created, got} {
		wantState(t, "app", s.State.App, map[string]any{"theme": "dark"})
		wantState(t, "user", s.State.User, map[string]any{"name": "Ada"})
		wantState(t, "session", s.State.Session, map[string]any{"step": 1, "nested": map[string]any{"a": []int{1, 2}}})
	}
	merged := store.DefaultStatePrefixes.Merge(got.State)
	for _, k := range []string{"app:theme", "user:name", "step", "nested"} {
		if _, ok := merged[k]; !ok {
			t.Fatalf("merged view lacks %q: %v", k, slices.Sorted(maps.Keys(merged)))
		}
	}
	// Without IncludeEvents no events are read.
	s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
	if err != nil || s.Events != nil {
		t.Fatalf("GetSession without events: %v, %v", s.Events, err)
	}
}

func testASGeneratedID(t *testing.T, e *env) {
	key := asKey()
	key.Session = ""
	seen := map[string]bool{}
	for range 3 {
		s := e.asCreate(key, store.ScopedState{})
		if s.Key.Session == "" || seen[s.Key.Session] {
			t.Fatalf("generated session id %q (seen: %v)", s.Key.Session, seen)
		}
		seen[s.Key.Session] = true
		e.asGet(s.Key)
	}
}

func testASCreateConflict(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{Session: map[string]json.RawMessage{"k": raw("first")}})
	e.asAppend(key, asEvent("e1", "w", 1), store.ScopedState{}, 0)
	_, err := e.as().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"k": raw("second")},
			App: map[string]json.RawMessage{"leak": raw(true)}}})
	wantErr(t, err, store.ErrConflict)
	got := e.asGet(key)
	if got.Version != 2 || len(got.Events) != 1 {
		t.Fatalf("existing session changed by a refused create: %+v", got)
	}
	wantState(t, "session", got.State.Session, map[string]any{"k": "first"})
	wantState(t, "app", got.State.App, map[string]any{}) // the refused create wrote nothing
}

func testASKeyIncludesUser(t *testing.T, e *env) {
	a := asKey()
	b := a
	b.User = "user-2"
	e.asCreate(a, store.ScopedState{Session: map[string]json.RawMessage{"who": raw("a")}})
	e.asCreate(b, store.ScopedState{Session: map[string]json.RawMessage{"who": raw("b")}})
	e.asAppend(a, asEvent("e1", "a", 1), store.ScopedState{}, 0)
	wantState(t, "session", e.asGet(a).State.Session, map[string]any{"who": "a"})
	gb := e.asGet(b)
	wantState(t, "session", gb.State.Session, map[string]any{"who": "b"})
	if len(gb.Events) != 0 {
		t.Fatalf("user-2's session sees %d events of user-1's", len(gb.Events))
	}
}

func testASGetMissing(t *testing.T, e *env) {
	key := asKey()
	_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
	wantErr(t, err, store.ErrNotFound)
	e.asCreate(key, store.ScopedState{})
	other := key
	other.User = "someone-else"
	_, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: other})
	wantErr(t, err, store.ErrNotFound)
	_, err = e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: other, Event: asEvent("x", "w", 0)})
	wantErr(t, err, store.ErrNotFound)
	_, err = e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: other})
	wantErr(t, err, store.ErrNotFound)
}

func testASAppendReadBack(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	// Data is returned byte for byte, including whitespace and key order.
	payloads := []string{`{"b":1,"a":2}`, `{ "text" : "héllo \u00e9 \"q\"" }`, `[1,2,3]`, `"just a string"`, `{"big":"` + strings.Repeat("x", 100_000) + `"}`}
	for i, p := range payloads {
		res := e.asAppend(key, store.AgentEvent{ID: "e" + strconv.Itoa(i), InvocationID: "inv", Data: json.RawMessage(p)}, store.ScopedState{}, int64(i+1))
		if res.Event.Seq != int64(i+1) || res.Version != int64(i+2) || res.Replayed || !res.UpdatedAt.Equal(e.clock.Now()) {
			t.Fatalf("append %d: %+v", i, res)
		}
		e.clock.Advance(time.Millisecond)
	}
	got := e.asGet(key)
	if got.Version != int64(len(payloads)+1) || got.EventCount != int64(len(payloads)) {
		t.Fatalf("version %d, event count %d", got.Version, got.EventCount)
	}
	if len(got.Events) != len(payloads) {
		t.Fatalf("%d events, want %d", len(got.Events), len(payloads))
	}
	for i, ev := range got.Events {
		if ev.Seq != int64(i+1) || ev.ID != "e"+strconv.Itoa(i) || ev.InvocationID != "inv" {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if string(ev.Data) != payloads[i] {
			t.Fatalf("event %d data changed: %.60q, want %.60q", i, ev.Data, payloads[i])
		}
	}
	if !got.UpdatedAt.Equal(e.clock.Now().Add(-time.Millisecond)) {
		t.Fatalf("updated at %v, want the last append's %v", got.UpdatedAt, e.clock.Now().Add(-time.Millisecond))
	}
	// An empty event id is generated, unique.
	r1 := e.asAppend(key, store.AgentEvent{Data: raw(1)}, store.ScopedState{}, 0)
	r2 := e.asAppend(key, store.AgentEvent{Data: raw(1)}, store.ScopedState{}, 0)
	if r1.Event.ID == "" || r1.Event.ID == r2.Event.ID {
		t.Fatalf("generated event ids %q, %q", r1.Event.ID, r2.Event.ID)
	}
}

func testASTimestampDefault(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	e.clock.Advance(1234567*time.Microsecond + 89) // not on a millisecond, nor a microsecond
	res := e.asAppend(key, store.AgentEvent{ID: "a", Data: raw(1)}, store.ScopedState{}, 0)
	want := e.clock.Now().Truncate(time.Microsecond)
	if !res.Event.Timestamp.Equal(want) {
		t.Fatalf("timestamp %v, want the clock truncated to µs %v", res.Event.Timestamp, want)
	}
	// A given timestamp is kept exactly, to the nanosecond (ADK's
	// compaction ranges select events by it).
	given := time.Date(2030, 5, 6, 7, 8, 9, 987654321, time.FixedZone("X", 3600))
	res = e.asAppend(key, store.AgentEvent{ID: "b", Data: raw(2), Timestamp: given}, store.ScopedState{}, 0)
	if !res.Event.Timestamp.Equal(given) || res.Event.Timestamp.Location() != time.UTC {
		t.Fatalf("timestamp %v, want %v in UTC", res.Event.Timestamp, given)
	}
	got := e.asGet(key).Events
	if !got[0].Timestamp.Equal(want) || !got[1].Timestamp.Equal(given) {
		t.Fatalf("stored timestamps %v, %v (given event timestamps keep nanoseconds)", got[0].Timestamp, got[1].Timestamp)
	}
	// A replay of an event with its timestamp is a replay; one
	// nanosecond off is other content.
	if r := e.asAppend(key, store.AgentEvent{ID: "b", Data: raw(2), Timestamp: given}, store.ScopedState{}, 0); !r.Replayed {
		t.Fatalf("replay with the same timestamp: %+v", r)
	}
	_, err := e.st.AgentSessions().AppendEvent(context.Background(), store.AppendEventRequest{Key: key,
		Event: store.AgentEvent{ID: "b", Data: raw(2), Timestamp: given.Add(time.Nanosecond)}})
	wantErr(t, err, store.ErrConflict)
}

func testASWindows(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ts []time.Time
	for i := 1; i <= 5; i++ {
		t := base.Add(time.Duration(i) * time.Second)
		ts = append(ts, t)
		e.asAppend(key, store.AgentEvent{ID: strconv.Itoa(i), Timestamp: t, Data: raw(i)}, store.ScopedState{}, 0)
	}
	ids := func(req store.GetAgentSessionRequest) string {
		t.Helper()
		req.Key, req.IncludeEvents = key, true
		s, err := e.as().GetSession(e.ctx, req)
		if err != nil {
			t.Fatalf("GetSession(%+v): %v", req, err)
		}
		var out []string
		for _, ev := range s.Events {
			out = append(out, ev.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		req  store.GetAgentSessionRequest
		want string
	}{
		{store.GetAgentSessionRequest{}, "1,2,3,4,5"},
		{store.GetAgentSessionRequest{Recent: 3}, "3,4,5"},
		{store.GetAgentSessionRequest{Recent: 50}, "1,2,3,4,5"},
		{store.GetAgentSessionRequest{After: ts[1]}, "2,3,4,5"},
		{store.GetAgentSessionRequest{Recent: 2, After: ts[0]}, "4,5"},
		{store.GetAgentSessionRequest{Recent: 10, After: ts[3]}, "4,5"},
		{store.GetAgentSessionRequest{After: ts[4].Add(time.Millisecond)}, ""},
	} {
		if got := ids(c.req); got != c.want {
			t.Errorf("window %+v: events %q, want %q", c.req, got, c.want)
		}
	}
}

func testASAfterPrecision(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	at := time.Date(2025, 3, 4, 5, 6, 7, 8_007_000, time.UTC) // 8 ms and 7 µs: event times keep microseconds
	e.asAppend(key, store.AgentEvent{ID: "a", Timestamp: at, Data: raw(1)}, store.ScopedState{}, 0)
	for _, c := range []struct {
		after time.Time
		n     int
	}{
		{at, 1},
		{at.Add(-time.Nanosecond), 1},
		{at.Add(-time.Microsecond), 1},
		{at.Add(time.Nanosecond), 0},
		{at.Add(time.Microsecond), 0},
		{at.Add(999 * time.Microsecond), 0},
	} {
		s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, After: c.after})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Events) != c.n {
			t.Errorf("After %v: %d events, want %d", c.after, len(s.Events), c.n)
		}
	}
}

func testASAppState(t *testing.T, e *env) {
	k1 := asKey()
	e.asCreate(k1, store.ScopedState{App: map[string]json.RawMessage{"k1": raw("v1")}})
	e.asAppend(k1, asEvent("e1", "w", 1), store.ScopedState{App: map[string]json.RawMessage{"k2": raw("v2")}}, 0)
	k2 := k1
	k2.User, k2.Session = "user-2", "other"
	s2 := e.asCreate(k2, store.ScopedState{})
	wantState(t, "app", s2.State.App, map[string]any{"k1": "v1", "k2": "v2"})
	// Another app does not see it.
	k3 := asKey()
	wantState(t, "app", e.asCreate(k3, store.ScopedState{}).State.App, map[string]any{})
	// An overwrite is seen by every session of the app.
	e.asAppend(k2, asEvent("e2", "w", 2), store.ScopedState{App: map[string]json.RawMessage{"k1": raw(42)}}, 0)
	wantState(t, "app", e.asGet(k1).State.App, map[string]any{"k1": 42, "k2": "v2"})
}

func testASUserState(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{User: map[string]json.RawMessage{"k1": raw("v1")}})
	e.asAppend(k, asEvent("e1", "w", 1), store.ScopedState{User: map[string]json.RawMessage{"k2": raw("v2")}}, 0)
	same := k
	same.Session = "second"
	wantState(t, "user", e.asCreate(same, store.ScopedState{}).State.User, map[string]any{"k1": "v1", "k2": "v2"})
	other := k
	other.User = "user-2"
	wantState(t, "user", e.asCreate(other, store.ScopedState{}).State.User, map[string]any{})
}

func testASSessionState(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"sk1": raw("v1")}})
	e.asAppend(k, asEvent("e1", "w", 1), store.ScopedState{Session: map[string]json.RawMessage{"sk2": raw("v2")}}, 0)
	wantState(t, "session", e.asGet(k).State.Session, map[string]any{"sk1": "v1", "sk2": "v2"})
	second := k
	second.Session = "second"
	wantState(t, "session", e.asCreate(second, store.ScopedState{}).State.Session, map[string]any{})
}

func testASNullValue(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"k": raw("v")}})
	e.asAppend(k, asEvent("e1", "w", 1), store.ScopedState{Session: map[string]json.RawMessage{"k": raw(nil)}}, 0)
	st := e.asGet(k).State.Session
	if v, ok := st["k"]; !ok || string(v) != "null" {
		t.Fatalf("state after setting null: %q (present %v), want null kept", v, ok)
	}
}

func testASStale(t *testing.T, e *env) {
	k := asKey()
	h1 := e.asCreate(k, store.ScopedState{})
	h2 := e.asGet(k) // a second writer's handle, same version
	r := e.asAppend(k, asEvent("from-1", "one", 1), store.ScopedState{Session: map[string]json.RawMessage{"by": raw("one")}}, h1.Version)
	if r.Version != h1.Version+1 {
		t.Fatalf("version after append %d, want %d", r.Version, h1.Version+1)
	}
	_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("from-2", "two", 1),
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"by": raw("two")}, App: map[string]json.RawMessage{"x": raw(1)}}, ExpectedVersion: h2.Version})
	wantErr(t, err, store.ErrStaleSession)
	wantErr(t, err, store.ErrConflict)
	var stale *store.StaleSessionError
	if !errors.As(err, &stale) {
		t.Fatalf("error %T is not a *StaleSessionError", err)
	}
	if stale.Key != k || stale.Expected != h2.Version || stale.Current != r.Version {
		t.Fatalf("stale error details %+v, want key %v expected %d current %d", stale, k, h2.Version, r.Version)
	}
	got := e.asGet(k)
	if len(got.Events) != 1 || got.Events[0].ID != "from-1" || got.Version != r.Version {
		t.Fatalf("refused stale append changed the log: %+v", got)
	}
	wantState(t, "session", got.State.Session, map[string]any{"by": "one"})
	wantState(t, "app", got.State.App, map[string]any{})
	// A state update through the stale handle is refused the same way.
	_, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"by": raw("two")}}, ExpectedVersion: h2.Version})
	wantErr(t, err, store.ErrStaleSession)
}

func testASStaleRetry(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	h := e.asGet(k)
	e.asAppend(k, asEvent("other", "other", 1), store.ScopedState{}, h.Version)
	// The documented way out: reload, decide again, retry with the new
	// version.
	ev := asEvent("mine", "me", 1)
	_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: ev, ExpectedVersion: h.Version})
	wantErr(t, err, store.ErrStaleSession)
	h = e.asGet(k)
	if h.Events[len(h.Events)-1].ID != "other" {
		t.Fatalf("refreshed handle does not show the other writer's event")
	}
	res := e.asAppend(k, ev, store.ScopedState{}, h.Version)
	if res.Event.Seq != 2 || res.Version != h.Version+1 {
		t.Fatalf("retry: %+v", res)
	}
}

func testASUnconditional(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	for i := range 3 {
		e.asAppend(k, asEvent("", "w", i), store.ScopedState{}, 0)
	}
	if got := e.asGet(k); got.Version != 4 || got.EventCount != 3 {
		t.Fatalf("version %d, count %d after 3 unconditional appends", got.Version, got.EventCount)
	}
}

func testASReplay(t *testing.T, e *env) {
	k := asKey()
	h := e.asCreate(k, store.ScopedState{})
	ev := asEvent("once", "w", 1)
	ev.Timestamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	delta := store.ScopedState{Session: map[string]json.RawMessage{"k": raw("from-event")}}
	first := e.asAppend(k, ev, delta, h.Version)
	// The state moves on, then the append is retried with its old version
	// (its outcome was unknown to the caller).
	if _, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, Delta: store.ScopedState{Session: map[string]json.RawMessage{"k": raw("later")}}}); err != nil {
		t.Fatal(err)
	}
	for _, expected := range []int64{h.Version, 0} {
		again := e.asAppend(k, ev, delta, expected)
		if !again.Replayed || again.Event.Seq != first.Event.Seq || again.Event.ID != "once" || string(again.Event.Data) != string(ev.Data) {
			t.Fatalf("replay (expected version %d): %+v", expected, again)
		}
		if again.Version != first.Version+1 {
			t.Fatalf("replay reports version %d, want the current %d", again.Version, first.Version+1)
		}
	}
	got := e.asGet(k)
	if len(got.Events) != 1 {
		t.Fatalf("%d events after replays, want 1", len(got.Events))
	}
	wantState(t, "session", got.State.Session, map[string]any{"k": "later"}) // the delta was not re-applied
}

func testASReplayConflict(t *testing.T, e *env) {
	k := asKey()
	h := e.asCreate(k, store.ScopedState{})
	e.asAppend(k, asEvent("dup", "w", 1), store.ScopedState{}, h.Version)
	for _, expected := range []int64{0, h.Version, h.Version + 1} {
		_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("dup", "w", 2),
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"x": raw(1)}}, ExpectedVersion: expected})
		wantErr(t, err, store.ErrConflict)
		if errors.Is(err, store.ErrStaleSession) {
			t.Fatalf("expected version %d: a reused event id reads as a stale session: %v", expected, err)
		}
	}
	got := e.asGet(k)
	if len(got.Events) != 1 || got.Version != 2 || len(got.State.Session) != 0 {
		t.Fatalf("conflicting appends wrote something: %+v", got)
	}
}

func testASRefusedWritesNothing(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	missing := k
	missing.Session = "missing"
	delta := store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"u": raw(1)}}
	_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: missing, Event: asEvent("x", "w", 1), Delta: delta})
	wantErr(t, err, store.ErrNotFound)
	_, err = e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("y", "w", 1), Delta: delta, ExpectedVersion: 7})
	wantErr(t, err, store.ErrStaleSession)
	st, err := e.as().GetState(e.ctx, store.SessionKey{App: k.App, User: k.User})
	if err != nil {
		t.Fatal(err)
	}
	if !st.IsEmpty() {
		t.Fatalf("refused appends applied their delta: %+v", st)
	}
}

// testASSnapshotConsistency: every append sets state "n" to its seq; a
// reader must never see an event without its delta or the reverse.
func testASSnapshotConsistency(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"n": raw(0)}, App: map[string]json.RawMessage{"n": raw(0)}})
	const n = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("", "w", i),
				Delta: store.ScopedState{Session: map[string]json.RawMessage{"n": raw(i)}, App: map[string]json.RawMessage{"n": raw(i)}}})
			if err != nil {
				t.Errorf("append %d: %v", i, err)
				return
			}
		}
	})
	reads := 0
	for {
		select {
		case <-done:
			wg.Wait()
			if reads == 0 {
				t.Log("the writer finished before any read overlapped")
			}
			return
		default:
		}
		s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true, Recent: 1})
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		reads++
		var sn, an int64
		json.Unmarshal(s.State.Session["n"], &sn)
		json.Unmarshal(s.State.App["n"], &an)
		if sn != s.EventCount || an != s.EventCount || s.Version != s.EventCount+1 {
			t.Fatalf("torn read: %d events, version %d, session n=%d, app n=%d", s.EventCount, s.Version, sn, an)
		}
		if s.EventCount > 0 && (len(s.Events) != 1 || s.Events[0].Seq != s.EventCount) {
			t.Fatalf("torn read: count %d but recent event %+v", s.EventCount, s.Events)
		}
	}
}

func testASListSessions(t *testing.T, e *env) {
	app := asKey().App
	e.asCreate(store.SessionKey{App: app, User: "u1", Session: "s0"}, store.ScopedState{})
	var want []string
	for _, u := range []string{"u1", "u2", "u3"} {
		for i := range 4 {
			k := store.SessionKey{App: app, User: u, Session: "s" + strconv.Itoa(i)}
			if !(u == "u1" && i == 0) {
				e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"id": raw(u + "/" + k.Session)}})
			}
			want = append(want, u+"/"+k.Session)
		}
	}
	if _, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: store.SessionKey{App: app, User: "u2"},
		Delta: store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"who": raw("u2")}}}); err != nil {
		t.Fatal(err)
	}
	e.asCreate(store.SessionKey{App: app + "-other", User: "u1", Session: "s0"}, store.ScopedState{})
	list := func(user string, limit int) []store.AgentSession {
		t.Helper()
		var out []store.AgentSession
		cursor := ""
		for pages := 0; ; pages++ {
			p, err := e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: app, User: user, Cursor: cursor, Limit: limit})
			if err != nil {
				t.Fatalf("ListSessions: %v", err)
			}
			if len(p.Items) > limit {
				t.Fatalf("page of %d items, limit %d", len(p.Items), limit)
			}
			out = append(out, p.Items...)
			if p.Next == "" {
				return out
			}
			if pages > 100 {
				t.Fatal("paging does not end")
			}
			cursor = p.Next
		}
	}
	names := func(ss []store.AgentSession) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Key.User+"/"+s.Key.Session)
		}
		return out
	}
	for _, limit := range []int{1, 5, 12, 100} {
		all := list("", limit)
		if got := names(all); !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %v, want %v", limit, got, want)
		}
		u2 := list("u2", limit)
		if got := names(u2); !slices.Equal(got, want[4:8]) {
			t.Fatalf("limit %d: u2 listed %v", limit, got)
		}
		for _, s := range slices.Concat(all, u2, list("u1", limit)) {
			wantState(t, "app", s.State.App, map[string]any{"a": 1})
			if s.Key.User == "u2" {
				wantState(t, "user", s.State.User, map[string]any{"who": "u2"})
			} else {
				wantState(t, "user", s.State.User, map[string]any{})
			}
			if s.Key.User == "u1" && s.Key.Session == "s0" {
				wantState(t, "session", s.State.Session, map[string]any{})
			} else {
				wantState(t, "session", s.State.Session, map[string]any{"id": s.Key.User + "/" + s.Key.Session})
			}
			if s.Version != 1 || s.Events != nil {
				t.Fatalf("listed session %+v", s)
			}
		}
	}
	if got := list("nobody", 10); len(got) != 0 {
		t.Fatalf("listed %d sessions of an unknown user", len(got))
	}
	// Every listed session has maps of its own.
	all := list("", 100)
	all[0].State.App["a"] = raw("changed")
	if string(all[1].State.App["a"]) != "1" {
		t.Fatalf("listed sessions share their app state map")
	}
}

func testASListEvents(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	for i := 1; i <= 25; i++ {
		ev := asEvent("e"+strconv.Itoa(i), "w", i)
		if i%3 == 0 {
			ev.InvocationID = "inv-three"
		}
		e.asAppend(k, ev, store.ScopedState{}, 0)
	}
	page := func(inv string, limit int) []int64 {
		t.Helper()
		var seqs []int64
		cursor := ""
		for {
			p, err := e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: k, Cursor: cursor, InvocationID: inv, Limit: limit})
			if err != nil {
				t.Fatalf("ListEvents: %v", err)
			}
			if len(p.Items) > limit {
				t.Fatalf("page of %d, limit %d", len(p.Items), limit)
			}
			for _, ev := range p.Items {
				seqs = append(seqs, ev.Seq)
			}
			if p.Next == "" {
				return seqs
			}
			cursor = p.Next
		}
	}
	for _, limit := range []int{1, 7, 25, 1000} {
		got := page("", limit)
		if len(got) != 25 || got[0] != 1 || got[24] != 25 || !slices.IsSorted(got) {
			t.Fatalf("limit %d: seqs %v", limit, got)
		}
		three := page("inv-three", limit)
		if !slices.Equal(three, []int64{3, 6, 9, 12, 15, 18, 21, 24}) {
			t.Fatalf("limit %d: invocation seqs %v", limit, three)
		}
	}
	p, err := e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: k})
	if err != nil || len(p.Items) != 25 || p.Next != "" {
		t.Fatalf("default page: %d items, next %q, %v", len(p.Items), p.Next, err)
	}
}

func testASDeleteCascades(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"s": raw(1)},
		App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"u": raw(1)}})
	for i := range 10 {
		e.asAppend(k, asEvent("e"+strconv.Itoa(i), "w", i), store.ScopedState{Session: map[string]json.RawMessage{"s": raw(i)}}, 0)
	}
	if err := e.as().DeleteSession(e.ctx, k); err != nil {
		t.Fatal(err)
	}
	_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: k})
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, e.as().DeleteSession(e.ctx, k), store.ErrNotFound)
	// App and user state stay; the session's own state and events went
	// with it: a new session under the same key starts empty.
	again := e.asCreate(k, store.ScopedState{})
	if again.Version != 1 || again.EventCount != 0 {
		t.Fatalf("recreated session %+v", again)
	}
	got := e.asGet(k)
	if len(got.Events) != 0 || len(got.State.Session) != 0 {
		t.Fatalf("recreated session sees old events %d or state %v", len(got.Events), got.State.Session)
	}
	wantState(t, "app", got.State.App, map[string]any{"a": 1})
	wantState(t, "user", got.State.User, map[string]any{"u": 1})
	// The old event ids are free again.
	e.asAppend(k, asEvent("e0", "w", 99), store.ScopedState{}, 0)
}

func testASDeleteRespectsUser(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	other := k
	other.User = "intruder"
	wantErr(t, e.as().DeleteSession(e.ctx, other), store.ErrNotFound)
	e.asGet(k)
}

func testASUpdateState(t *testing.T, e *env) {
	k := asKey()
	// App and user scopes need no session.
	v, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: store.SessionKey{App: k.App, User: k.User},
		Delta: store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"u": raw(2)}}})
	if err != nil || v != 0 {
		t.Fatalf("UpdateState app/user: %d, %v", v, err)
	}
	_, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, Delta: store.ScopedState{Session: map[string]json.RawMessage{"s": raw(1)}}})
	wantErr(t, err, store.ErrNotFound)
	h := e.asCreate(k, store.ScopedState{})
	wantState(t, "app", h.State.App, map[string]any{"a": 1})
	wantState(t, "user", h.State.User, map[string]any{"u": 2})
	v, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, Delta: store.ScopedState{Session: map[string]json.RawMessage{"s": raw(1)}}, ExpectedVersion: h.Version})
	if err != nil || v != h.Version+1 {
		t.Fatalf("UpdateState session: version %d, %v; want %d", v, err, h.Version+1)
	}
	got := e.asGet(k)
	if got.Version != v || got.EventCount != 0 {
		t.Fatalf("after a session state update: %+v", got)
	}
	wantState(t, "session", got.State.Session, map[string]any{"s": 1})
	// Naming the session without a session delta reads its version and
	// checks it, without moving it.
	v2, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, Delta: store.ScopedState{App: map[string]json.RawMessage{"a": raw(3)}}})
	if err != nil || v2 != v {
		t.Fatalf("UpdateState app via session key: %d, %v; want %d", v2, err, v)
	}
	_, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, Delta: store.ScopedState{App: map[string]json.RawMessage{"a": raw(4)}}, ExpectedVersion: 1})
	wantErr(t, err, store.ErrStaleSession)
	wantState(t, "app", e.asGet(k).State.App, map[string]any{"a": 3})
}

func testASGetState(t *testing.T, e *env) {
	k := asKey()
	st, err := e.as().GetState(e.ctx, store.SessionKey{App: k.App})
	if err != nil || !st.IsEmpty() {
		t.Fatalf("GetState of an unknown app: %+v, %v", st, err)
	}
	_, err = e.as().GetState(e.ctx, k)
	wantErr(t, err, store.ErrNotFound)
	e.asCreate(k, store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}, User: map[string]json.RawMessage{"u": raw(1)}, Session: map[string]json.RawMessage{"s": raw(1)}})
	st, err = e.as().GetState(e.ctx, store.SessionKey{App: k.App})
	if err != nil || len(st.App) != 1 || st.User != nil || st.Session != nil {
		t.Fatalf("GetState(app): %+v, %v", st, err)
	}
	st, err = e.as().GetState(e.ctx, store.SessionKey{App: k.App, User: k.User})
	if err != nil || len(st.App) != 1 || len(st.User) != 1 || st.Session != nil {
		t.Fatalf("GetState(app, user): %+v, %v", st, err)
	}
	st, err = e.as().GetState(e.ctx, k)
	if err != nil || len(st.App) != 1 || len(st.User) != 1 || len(st.Session) != 1 {
		t.Fatalf("GetState(key): %+v, %v", st, err)
	}
	_, err = e.as().GetState(e.ctx, store.SessionKey{App: k.App, Session: k.Session})
	wantErr(t, err, store.ErrInvalidInput)
}

func testASReopen(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{App: map[string]json.RawMessage{"a": raw(1)}})
	for i := range 5 {
		e.asAppend(k, asEvent("e"+strconv.Itoa(i), "w", i), store.ScopedState{Session: map[string]json.RawMessage{"n": raw(i)}}, 0)
	}
	before := e.asGet(k)
	e.reopen()
	after := e.asGet(k)
	if after.Version != before.Version || len(after.Events) != 5 || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("after reopen %+v, before %+v", after, before)
	}
	for i := range after.Events {
		if string(after.Events[i].Data) != string(before.Events[i].Data) {
			t.Fatalf("event %d changed across reopen", i)
		}
	}
	wantState(t, "session", after.State.Session, map[string]any{"n": 4})
	wantState(t, "app", after.State.App, map[string]any{"a": 1})
}

func testASOpaqueErrors(t *testing.T, e *env) {
	k := store.SessionKey{App: "secret-app-5e1", User: "secret-user-9a2", Session: "secret-session-77c"}
	e.asCreate(k, store.ScopedState{})
	e.asAppend(k, asEvent("secret-event-3", "w", 1), store.ScopedState{}, 0)
	var errs []error
	_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("secret-event-4", "w", 1), ExpectedVersion: 1})
	errs = append(errs, err)
	_, err = e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("secret-event-3", "w", 2)})
	errs = append(errs, err)
	_, err = e.as().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k})
	errs = append(errs, err)
	missing := k
	missing.Session = "secret-missing-1"
	_, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: missing})
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Fatalf("case %d: no error", i)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("case %d: Error() %q reveals an id", i, err.Error())
		}
	}
	if errs[0].Error() != store.ErrStaleSession.Error() {
		t.Errorf("stale Error() = %q, want the constant %q", errs[0], store.ErrStaleSession)
	}
}

func testASInvalidInput(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	bad := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
	good := asEvent("ok", "w", 1)
	huge := store.AgentEvent{Data: json.RawMessage(`"` + strings.Repeat("x", store.MaxEventSize) + `"`)}
	bigValue := raw(strings.Repeat("v", store.MaxStateValueSize))
	manyKeys := map[string]json.RawMessage{}
	for i := range store.MaxStateEntries + 1 {
		manyKeys[strconv.Itoa(i)] = raw(i)
	}
	for name, key := range map[string]store.SessionKey{
		"empty app":      {User: "u", Session: "s"},
		"empty user":     {App: "a", Session: "s"},
		"empty session":  {App: "a", User: "u"},
		"control char":   {App: "a\x01", User: "u", Session: "s"},
		"invalid utf8":   {App: "a", User: "u\xff", Session: "s"},
		"too long":       {App: strings.Repeat("a", store.MaxIDLength+1), User: "u", Session: "s"},
		"nul in session": {App: "a", User: "u", Session: "s\x00"},
	} {
		_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: good})
		bad("append "+name, err)
		_, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
		bad("get "+name, err)
		bad("delete "+name, e.as().DeleteSession(e.ctx, key))
		_, err = e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: key})
		bad("list events "+name, err)
	}
	createKey := k
	createKey.Session = "never-created"
	for name, req := range map[string]store.CreateAgentSessionRequest{
		"create empty app":  {Key: store.SessionKey{User: "u"}},
		"create bad value":  {Key: createKey, State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`{bad`)}}},
		"create empty json": {Key: createKey, State: store.ScopedState{App: map[string]json.RawMessage{"k": nil}}},
		"create big value":  {Key: createKey, State: store.ScopedState{User: map[string]json.RawMessage{"k": bigValue}}},
		"create many keys":  {Key: createKey, State: store.ScopedState{Session: manyKeys}},
		"create nul key":    {Key: createKey, State: store.ScopedState{Session: map[string]json.RawMessage{"a\x00b": raw(1)}}},
		"create long key":   {Key: createKey, State: store.ScopedState{Session: map[string]json.RawMessage{strings.Repeat("k", store.MaxStateKeyLength+1): raw(1)}}},
	} {
		_, err := e.as().CreateSession(e.ctx, req)
		bad(name, err)
	}
	for name, req := range map[string]store.AppendEventRequest{
		"malformed data":    {Key: k, Event: store.AgentEvent{Data: json.RawMessage(`{"a":`)}},
		"data not utf-8":    {Key: k, Event: store.AgentEvent{Data: json.RawMessage("\"\xff\xfe\"")}},
		"delta not utf-8":   {Key: k, Event: good, Delta: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage("\"\xc3\"")}}},
		"empty data":        {Key: k, Event: store.AgentEvent{}},
		"huge data":         {Key: k, Event: huge},
		"seq given":         {Key: k, Event: store.AgentEvent{Seq: 3, Data: raw(1)}},
		"bad event id":      {Key: k, Event: store.AgentEvent{ID: "e\n", Data: raw(1)}},
		"bad invocation":    {Key: k, Event: store.AgentEvent{InvocationID: strings.Repeat("i", store.MaxIDLength+1), Data: raw(1)}},
		"negative version":  {Key: k, Event: good, ExpectedVersion: -1},
		"bad delta value":   {Key: k, Event: good, Delta: store.ScopedState{App: map[string]json.RawMessage{"k": json.RawMessage("nope")}}},
		"timestamp too far": {Key: k, Event: store.AgentEvent{Data: raw(1), Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		_, err := e.as().AppendEvent(e.ctx, req)
		bad(name, err)
	}
	_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, Recent: -1})
	bad("negative recent", err)
	for _, c := range []string{"x", "[]", `{"u":""}`, "0", "-5", strings.Repeat("9", 40)} {
		_, err = e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: k.App, Cursor: c})
		bad("session cursor "+c, err)
		_, err = e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: k, Cursor: c})
		bad("event cursor "+c, err)
	}
	_, err = e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: k.App, Limit: -1})
	bad("negative session limit", err)
	_, err = e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: k, Limit: -1})
	bad("negative event limit", err)
	_, err = e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{})
	bad("list without app", err)
	_, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: store.SessionKey{App: k.App}, Delta: store.ScopedState{User: map[string]json.RawMessage{"u": raw(1)}}})
	bad("user delta without user", err)
	_, err = e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: k, ExpectedVersion: -2})
	bad("update negative version", err)

	// Nothing was written by any of it.
	got := e.asGet(k)
	if got.Version != 1 || len(got.Events) != 0 || !got.State.IsEmpty() {
		t.Fatalf("invalid requests wrote something: %+v", got)
	}
	_, err = e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: createKey})
	wantErr(t, err, store.ErrNotFound)
}

func testASCanceled(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.as().AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: asEvent("x", "w", 1)})
	wantErr(t, err, context.Canceled)
	other := k
	other.Session = "other"
	_, err = e.as().CreateSession(ctx, store.CreateAgentSessionRequest{Key: other})
	wantErr(t, err, context.Canceled)
	if got := e.asGet(k); got.Version != 1 || len(got.Events) != 0 {
		t.Fatalf("canceled append wrote: %+v", got)
	}
}

// asCheckLog verifies a session's whole log: gapless seqs, every wanted
// event id exactly once.
func asCheckLog(t *testing.T, e *env, k store.SessionKey, wantIDs map[string]bool) []store.AgentEvent {
	t.Helper()
	got := e.asGet(k)
	if int64(len(got.Events)) != got.EventCount || got.EventCount != int64(len(wantIDs)) {
		t.Fatalf("session has %d events (count %d), want %d", len(got.Events), got.EventCount, len(wantIDs))
	}
	seen := map[string]bool{}
	for i, ev := range got.Events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: the log has a gap", i, ev.Seq)
		}
		if seen[ev.ID] || !wantIDs[ev.ID] {
			t.Fatalf("event %q duplicated or unexpected", ev.ID)
		}
		seen[ev.ID] = true
	}
	return got.Events
}

// testASConcurrentReads runs many more concurrent reads than a backend
// keeps read connections, on a store that has prepared nothing yet: no read
// may wait for another forever.
func testASConcurrentReads(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{Session: map[string]json.RawMessage{"s": raw(1)}})
	for i := range 20 {
		e.asAppend(k, asEvent("", "w", i), store.ScopedState{}, 0)
	}
	fresh := e.open().AgentSessions()
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			for range 5 {
				var err error
				switch w % 4 {
				case 0:
					_, err = fresh.GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true, Recent: 10})
				case 1:
					_, err = fresh.ListSessions(ctx, store.ListAgentSessionsRequest{App: k.App})
				case 2:
					_, err = fresh.ListEvents(ctx, store.ListEventsRequest{Key: k, Limit: 5})
				case 3:
					_, err = fresh.GetState(ctx, k)
				}
				if err != nil {
					t.Errorf("concurrent read: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func testASConcurrentOneSession(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	const workers, per = 16, 40
	want := map[string]bool{}
	for w := range workers {
		for i := range per {
			want[fmt.Sprintf("w%d-%d", w, i)] = true
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range per {
				ev := asEvent(fmt.Sprintf("w%d-%d", w, i), strconv.Itoa(w), i)
				_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: ev,
					Delta: store.ScopedState{Session: map[string]json.RawMessage{"last-" + strconv.Itoa(w): raw(i)}}})
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	asCheckLog(t, e, k, want)
	st := e.asGet(k).State.Session
	for w := range workers {
		if string(st["last-"+strconv.Itoa(w)]) != strconv.Itoa(per-1) {
			t.Fatalf("worker %d's last delta is %s", w, st["last-"+strconv.Itoa(w)])
		}
	}
	if got := e.asGet(k).Version; got != workers*per+1 {
		t.Fatalf("version %d, want %d", got, workers*per+1)
	}
}

func testASConcurrentManySessions(t *testing.T, e *env) {
	app := asKey().App
	const workers, per = 12, 30
	second := e.open()
	var wg sync.WaitGroup
	for w := range workers {
		st := e.st
		if w%2 == 1 {
			st = second // half of the writers go through a second store
		}
		wg.Go(func() {
			k := store.SessionKey{App: app, User: "u" + strconv.Itoa(w%3), Session: "s" + strconv.Itoa(w)}
			s, err := st.AgentSessions().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k})
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			v := s.Version
			for i := range per {
				res, err := st.AgentSessions().AppendEvent(e.ctx, store.AppendEventRequest{Key: k, Event: asEvent("", "w", i),
					Delta: store.ScopedState{User: map[string]json.RawMessage{"w" + strconv.Itoa(w): raw(i)}}, ExpectedVersion: v})
				if err != nil {
					t.Errorf("conditional append on an own session: %v", err)
					return
				}
				v = res.Version
			}
		})
	}
	wg.Wait()
	p, err := e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: app})
	if err != nil || len(p.Items) != workers {
		t.Fatalf("listed %d sessions, %v", len(p.Items), err)
	}
	for _, s := range p.Items {
		if s.EventCount != per || s.Version != per+1 {
			t.Fatalf("session %v: %d events, version %d", s.Key, s.EventCount, s.Version)
		}
		if len(s.State.User) != workers/3 {
			t.Fatalf("user %s state has %d keys, want %d", s.Key.User, len(s.State.User), workers/3)
		}
	}
}

// asRetryAppend appends through a handle, refreshing and retrying on a
// stale handle, as documented. The event records the version it was
// decided on, so the log shows whether any append was based on a history
// other than the one directly before it. It returns the stale refusals.
func asRetryAppend(ctx context.Context, as store.AgentSessions, k store.SessionKey, id, writer string) (int, error) {
	stale := 0
	for {
		cur, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: k})
		if err != nil {
			return stale, err
		}
		ev := store.AgentEvent{ID: id, InvocationID: "inv-" + writer, Data: raw(map[string]any{"writer": writer, "decided_at": cur.Version})}
		_, err = as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: ev, ExpectedVersion: cur.Version,
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"last": raw(id)}}})
		if errors.Is(err, store.ErrStaleSession) {
			stale++
			continue
		}
		return stale, err
	}
}

// asCheckDecisions verifies that each event was decided on the version
// directly before it (version = seq at that point: no state updates).
func asCheckDecisions(t *testing.T, evs []store.AgentEvent) {
	t.Helper()
	for _, ev := range evs {
		var d struct {
			DecidedAt int64 `json:"decided_at"`
		}
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.DecidedAt != ev.Seq {
			t.Fatalf("event %s at seq %d was decided at version %d: histories interleaved", ev.ID, ev.Seq, d.DecidedAt)
		}
	}
}

func testASConcurrentConditional(t *testing.T, e *env) {
	k := asKey()
	e.asCreate(k, store.ScopedState{})
	const workers, per = 8, 15
	want := map[string]bool{}
	var stale atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		for i := range per {
			want[fmt.Sprintf("w%d-%d", w, i)] = true
		}
		wg.Go(func() {
			for i := range per {
				n, err := asRetryAppend(e.ctx, e.as(), k, fmt.Sprintf("w%d-%d", w, i), strconv.Itoa(w))
				stale.Add(int64(n))
				if err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs := asCheckLog(t, e, k, want)
	asCheckDecisions(t, evs)
	t.Logf("%d appends, %d stale refusals retried", workers*per, stale.Load())
}

func init() {
	registerRole("agent-append", agentAppendRole)
}

// agentAppendRole: args are app, user, session, writer name, count. It
// appends count unconditional events to the session and reports
// {"appended":N}; any error fails the process.
func agentAppendRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 5 {
		return fmt.Errorf("agent-append wants 5 args, got %d", len(args))
	}
	k := store.SessionKey{App: args[0], User: args[1], Session: args[2]}
	writer := args[3]
	n, err := strconv.Atoi(args[4])
	if err != nil {
		return err
	}
	as := st.AgentSessions()
	appended := 0
	for i := range n {
		ev := asEvent(fmt.Sprintf("%s-u%d", writer, i), writer, i)
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: k, Event: ev}); err != nil {
			return fmt.Errorf("unconditional append: %w", err)
		}
		appended++
	}
	return report(out, map[string]int{"appended": appended})
}

func init() {
	registerRole("agent-append-conditional", agentAppendConditionalRole)
}

// agentAppendConditionalRole: args as agent-append; the appends are
// conditional, with refresh and retry on a stale handle. It reports
// {"appended":N,"stale":M}.
func agentAppendConditionalRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 5 {
		return fmt.Errorf("agent-append-conditional wants 5 args, got %d", len(args))
	}
	k := store.SessionKey{App: args[0], User: args[1], Session: args[2]}
	writer := args[3]
	n, err := strconv.Atoi(args[4])
	if err != nil {
		return err
	}
	stale := 0
	for i := range n {
		s, err := asRetryAppend(ctx, st.AgentSessions(), k, fmt.Sprintf("%s-c%d", writer, i), writer)
		stale += s
		if err != nil {
			return fmt.Errorf("conditional append: %w", err)
		}
	}
	return report(out, map[string]int{"appended": n, "stale": stale})
}

func testASMultiProcess(t *testing.T, e *env) {
	unconditional := asKey()
	conditional := unconditional
	conditional.Session = "conditional"
	e.asCreate(unconditional, store.ScopedState{})
	e.asCreate(conditional, store.ScopedState{})
	const procs, n = 2, 150
	wantU, wantC := map[string]bool{}, map[string]bool{}
	type result struct{ Appended, Stale int }
	results := make([]result, 2*procs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for p := range procs {
		writer := "p" + strconv.Itoa(p)
		for i := range n {
			wantU[fmt.Sprintf("%s-u%d", writer, i)] = true
			wantC[fmt.Sprintf("%s-c%d", writer, i)] = true
		}
		for j, role := range []string{"agent-append", "agent-append-conditional"} {
			k := unconditional
			if j == 1 {
				k = conditional
			}
			cmd, stdout := e.spawn(role, k.App, k.User, k.Session, writer, strconv.Itoa(n))
			slot := 2*p + j
			wg.Go(func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					var r result
					if json.Unmarshal(sc.Bytes(), &r) == nil {
						results[slot] = r
					}
				}
				if err := cmd.Wait(); err != nil {
					t.Errorf("helper %s %s: %v", role, writer, err)
				}
			})
		}
	}
	// The parent appends to both sessions too.
	for i := range n {
		id := fmt.Sprintf("parent-u%d", i)
		wantU[id] = true
		if _, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: unconditional, Event: asEvent(id, "parent", i)}); err != nil {
			t.Fatalf("parent append: %v", err)
		}
		id = fmt.Sprintf("parent-c%d", i)
		wantC[id] = true
		if _, err := asRetryAppend(e.ctx, e.as(), conditional, id, "parent"); err != nil {
			t.Fatalf("parent conditional append: %v", err)
		}
	}
	wg.Wait()
	stale := 0
	for i, r := range results {
		if r.Appended != n {
			t.Fatalf("helper %d reports %d appends, want %d", i, r.Appended, n)
		}
		stale += r.Stale
	}
	t.Logf("helpers retried %d stale conditional appends", stale)
	asCheckLog(t, e, unconditional, wantU)
	asCheckDecisions(t, asCheckLog(t, e, conditional, wantC))
}
