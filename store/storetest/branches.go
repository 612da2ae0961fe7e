package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunAgentBranches checks fork, rewind and compaction records of agent
// sessions (store.AgentBranches), and event timestamps to the nanosecond.
func RunAgentBranches(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"ForkHoldsHistoryAndStateAtTheForkPoint", testBrForkPoint},
		{"ForkAtZeroAndAtTheEnd", testBrForkEnds},
		{"ForkBadInputWritesNothing", testBrForkBadInput},
		{"ForksOfForks", testBrForkOfFork},
		{"AppendsNeverCrossBetweenForkAndParent", testBrIsolation},
		{"DeletedParentKeepsForksReadable", testBrParentDeleted},
		{"RewindSupersedesAndRestoresState", testBrRewind},
		{"RewindToTheCreationState", testBrRewindToCreation},
		{"RewindKeepsForksIntact", testBrRewindKeepsForks},
		{"RewindBelowTheForkPoint", testBrRewindBelowFork},
		{"CompactionRecordAndSummaryRead", testBrCompaction},
		{"EventDataOnlyReadsTheSameDocuments", testBrEventDataOnly},
		{"OnlyCompactWritesCompactionRecords", testBrCompactionOnlyByCompact},
		{"CompactionWhileAnotherProcessAppends", testBrCompactionMultiProcess},
		{"AfterIsExactToTheNanosecond", testBrAfterNanos},
		{"HistoryTree", testBrHistory},
		{"HistoryTreeIsDepthFirst", testBrHistoryDepthFirst},
		{"RewindsAndForksWhileAppending", testBrConcurrent},
		{"ForkIsAFeedStreamOfItsOwn", testBrFeed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

// brSession creates key with session state {"created": true, "n": 0}
// and appends n events "e1".."en", event i setting "n" to i.
func (e *env) brSession(key store.SessionKey, n int) {
	e.t.Helper()
	e.asCreate(key, store.ScopedState{Session: map[string]json.RawMessage{"created": raw(true), "n": raw(0)}})
	for i := 1; i <= n; i++ {
		e.brAppend(key, "e"+strconv.Itoa(i), i)
	}
}

// brAppend appends event id setting the session key "n" to n.
func (e *env) brAppend(key store.SessionKey, id string, n int) store.AppendEventResult {
	e.t.Helper()
	return e.asAppend(key, store.AgentEvent{ID: id, Data: raw(map[string]any{"id": id})},
		store.ScopedState{Session: map[string]json.RawMessage{"n": raw(n)}}, 0)
}

// brIDs returns the ids of key's events, in order.
func (e *env) brIDs(key store.SessionKey) string {
	e.t.Helper()
	return evIDs(e.asGet(key).Events)
}

func evIDs(evs []store.AgentEvent) string {
	ids := make([]string, 0, len(evs))
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return strings.Join(ids, ",")
}

// upTo is "e1,...,en".
func upTo(n int) string {
	ids := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		ids = append(ids, "e"+strconv.Itoa(i))
	}
	return strings.Join(ids, ",")
}

func (e *env) fork(key store.SessionKey, at int64, session string) store.AgentSession {
	e.t.Helper()
	f, err := e.as().Fork(e.ctx, store.ForkRequest{Key: key, At: at, Session: session})
	if err != nil {
		e.t.Fatalf("Fork(%v at %d): %v", key.Session, at, err)
	}
	return f
}

func (e *env) rewind(key store.SessionKey, to int64) store.AgentSession {
	e.t.Helper()
	s, err := e.as().Rewind(e.ctx, store.RewindRequest{Key: key, To: to})
	if err != nil {
		e.t.Fatalf("Rewind(%v to %d): %v", key.Session, to, err)
	}
	return s
}

// wantSessionState checks key's session scope: "n" and "created".
func (e *env) wantSessionState(key store.SessionKey, n int) {
	e.t.Helper()
	st := e.asGet(key).State.Session
	if string(st["n"]) != strconv.Itoa(n) || string(st["created"]) != "true" {
		e.t.Fatalf("session %s state %s, want n=%d and created=true", key.Session, mustJSON(st), n)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func withSession(key store.SessionKey, s string) store.SessionKey {
	key.Session = s
	return key
}

func testBrForkPoint(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 10)
	fk := withSession(key, "fork")
	f := e.fork(key, 4, fk.Session)
	if f.EventCount != 4 || f.Version != 1 || string(f.State.Session["n"]) != "4" {
		t.Fatalf("fork %+v, want 4 events, version 1 and n=4", f)
	}
	if got := e.brIDs(fk); got != upTo(4) {
		t.Fatalf("fork events %s, want %s", got, upTo(4))
	}
	e.wantSessionState(fk, 4)
	// The fork's next append follows the fork point.
	if r := e.brAppend(fk, "f5", 50); r.Event.Seq != 5 || r.Version != 2 {
		t.Fatalf("fork append %+v, want seq 5 and version 2", r)
	}
	if got := e.brIDs(fk); got != upTo(4)+",f5" {
		t.Fatalf("fork events %s", got)
	}
	e.wantSessionState(fk, 50)
	e.wantSessionState(key, 10)
	// Paging and a recent window walk the lineage too.
	page, err := e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: fk, Limit: 3})
	if err != nil || evIDs(page.Items) != "e1,e2,e3" || page.Next == "" {
		t.Fatalf("first page %v %v", page, err)
	}
	page, err = e.as().ListEvents(e.ctx, store.ListEventsRequest{Key: fk, Limit: 3, Cursor: page.Next})
	if err != nil || evIDs(page.Items) != "e4,f5" || page.Next != "" {
		t.Fatalf("second page %v %v", page, err)
	}
	got, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: fk, IncludeEvents: true, Recent: 3})
	if err != nil || evIDs(got.Events) != "e3,e4,f5" {
		t.Fatalf("recent 3 of the fork: %v %v", evIDs(got.Events), err)
	}
}

func testBrForkEnds(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 3)
	// A state update without an event is part of the current state: a
	// fork at the end copies it.
	if _, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"extra": raw("x")}}}); err != nil {
		t.Fatal(err)
	}
	zero := withSession(key, "zero")
	if f := e.fork(key, 0, zero.Session); f.EventCount != 0 {
		t.Fatalf("fork at 0: %+v", f)
	}
	if got := e.brIDs(zero); got != "" {
		t.Fatalf("fork at 0 has events %s", got)
	}
	e.wantSessionState(zero, 0)
	end := withSession(key, "end")
	e.fork(key, 3, end.Session)
	e.wantSessionState(end, 3)
	if st := e.asGet(end).State.Session; string(st["extra"]) != `"x"` {
		t.Fatalf("fork at the end lost the current state: %s", mustJSON(st))
	}
	if got := e.brIDs(end); got != upTo(3) {
		t.Fatalf("fork at the end: %s", got)
	}
	// A generated id.
	f := e.fork(key, 1, "")
	if f.Key.Session == "" || f.Key.App != key.App || f.Key.User != key.User {
		t.Fatalf("generated fork key %+v", f.Key)
	}
}

func testBrForkBadInput(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 3)
	e.asCreate(withSession(key, "taken"), store.ScopedState{})
	for _, tc := range []struct {
		req  store.ForkRequest
		want error
	}{
		{store.ForkRequest{Key: key, At: 4, Session: "x"}, store.ErrInvalidInput},
		{store.ForkRequest{Key: key, At: -1, Session: "x"}, store.ErrInvalidInput},
		{store.ForkRequest{Key: key, At: 1, Session: "bad\x00id"}, store.ErrInvalidInput},
		{store.ForkRequest{Key: withSession(key, "missing"), At: 0, Session: "x"}, store.ErrNotFound},
		{store.ForkRequest{Key: key, At: 1, Session: "taken"}, store.ErrConflict},
	} {
		_, err := e.as().Fork(e.ctx, tc.req)
		wantErr(t, err, tc.want)
	}
	page, err := e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: key.App})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("refused forks left sessions: %+v %v", page.Items, err)
	}
	if got := e.brIDs(key); got != upTo(3) {
		t.Fatalf("parent events %s", got)
	}
}

func testBrForkOfFork(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 6)
	f1 := withSession(key, "f1")
	e.fork(key, 4, f1.Session)
	e.brAppend(f1, "a5", 105)
	e.brAppend(f1, "a6", 106)
	// Inside f1's own events, and inside what f1 inherits.
	f2 := withSession(key, "f2")
	e.fork(f1, 5, f2.Session)
	f3 := withSession(key, "f3")
	e.fork(f1, 2, f3.Session)
	e.brAppend(f2, "b6", 206)
	for _, tc := range []struct {
		key  store.SessionKey
		ids  string
		n    int
		size int64
	}{
		{key, upTo(6), 6, 6},
		{f1, upTo(4) + ",a5,a6", 106, 6},
		{f2, upTo(4) + ",a5,b6", 206, 6},
		{f3, upTo(2), 2, 2},
	} {
		if got := e.brIDs(tc.key); got != tc.ids {
			t.Fatalf("%s events %s, want %s", tc.key.Session, got, tc.ids)
		}
		e.wantSessionState(tc.key, tc.n)
		if c := e.asGet(tc.key).EventCount; c != tc.size {
			t.Fatalf("%s event count %d, want %d", tc.key.Session, c, tc.size)
		}
	}
}

func testBrIsolation(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 2)
	fk := withSession(key, "fork")
	e.fork(key, 2, fk.Session)
	const n = 20
	var wg sync.WaitGroup
	for _, k := range []store.SessionKey{key, fk} {
		wg.Go(func() {
			for i := range n {
				if _, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: k,
					Event: store.AgentEvent{ID: fmt.Sprintf("%s-%d", k.Session, i), Data: raw(i)}}); err != nil {
					t.Errorf("append to %s: %v", k.Session, err)
				}
			}
		})
	}
	wg.Wait()
	for _, k := range []store.SessionKey{key, fk} {
		evs := e.asGet(k).Events
		if len(evs) != 2+n {
			t.Fatalf("%s has %d events, want %d", k.Session, len(evs), 2+n)
		}
		for i, ev := range evs[2:] {
			if ev.ID != fmt.Sprintf("%s-%d", k.Session, i) || ev.Seq != int64(i+3) {
				t.Fatalf("%s event %d is %s (seq %d): the other branch's append leaked in", k.Session, i+3, ev.ID, ev.Seq)
			}
		}
	}
}

func testBrParentDeleted(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 5)
	f1, f2 := withSession(key, "f1"), withSession(key, "f2")
	e.fork(key, 3, f1.Session)
	e.fork(key, 5, f2.Session)
	if err := e.as().DeleteSession(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	_, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, e.as().DeleteSession(e.ctx, key), store.ErrNotFound)
	page, err := e.as().ListSessions(e.ctx, store.ListAgentSessionsRequest{App: key.App})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range page.Items {
		listed = append(listed, s.Key.Session)
	}
	if strings.Join(listed, ",") != "f1,f2" {
		t.Fatalf("listed %v, want the forks only", listed)
	}
	if got := e.brIDs(f1); got != upTo(3) {
		t.Fatalf("f1 after its parent's deletion: %s", got)
	}
	e.wantSessionState(f1, 3)
	// The key is free: a new session under it starts empty and does not
	// disturb the forks.
	e.asCreate(key, store.ScopedState{})
	if got := e.brIDs(key); got != "" {
		t.Fatalf("re-created session has events %s", got)
	}
	e.brAppend(key, "new", 1)
	if err := e.as().DeleteSession(e.ctx, f1); err != nil {
		t.Fatal(err)
	}
	if got := e.brIDs(f2); got != upTo(5) {
		t.Fatalf("f2 after its parent's and sibling's deletion: %s", got)
	}
	nodes, err := e.as().History(e.ctx, f2)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Status != store.NodeDeleted || nodes[1].Key != f2 || !nodes[1].Current {
		t.Fatalf("history of f2: %+v, want the deleted parent and f2", nodes)
	}
	if err := e.as().DeleteSession(e.ctx, f2); err != nil {
		t.Fatal(err)
	}
	if got := e.brIDs(key); got != "new" {
		t.Fatalf("re-created session: %s", got)
	}
}

func testBrRewind(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 6)
	v := e.asGet(key).Version
	s := e.rewind(key, 3)
	if s.EventCount != 3 || s.Version != v+1 {
		t.Fatalf("rewound %+v, want 3 events and version %d", s, v+1)
	}
	if got := e.brIDs(key); got != upTo(3) {
		t.Fatalf("events after rewind %s", got)
	}
	e.wantSessionState(key, 3)
	runs, err := e.as().Superseded(e.ctx, key)
	if err != nil || len(runs) != 1 || evIDs(runs[0].Events) != "e4,e5,e6" || runs[0].Events[0].Seq != 4 {
		t.Fatalf("superseded %+v %v", runs, err)
	}
	// The next append follows the kept position; an id of a superseded
	// event is free again.
	if r := e.brAppend(key, "e4", 40); r.Event.Seq != 4 || r.Replayed {
		t.Fatalf("append after rewind %+v", r)
	}
	e.wantSessionState(key, 40)
	// Conditional, and bad input.
	_, err = e.as().Rewind(e.ctx, store.RewindRequest{Key: key, To: 1, ExpectedVersion: 1})
	wantErr(t, err, store.ErrStaleSession)
	_, err = e.as().Rewind(e.ctx, store.RewindRequest{Key: key, To: 5})
	wantErr(t, err, store.ErrInvalidInput)
	_, err = e.as().Rewind(e.ctx, store.RewindRequest{Key: key, To: -1})
	wantErr(t, err, store.ErrInvalidInput)
	_, err = e.as().Rewind(e.ctx, store.RewindRequest{Key: withSession(key, "missing"), To: 0})
	wantErr(t, err, store.ErrNotFound)
	if got := e.brIDs(key); got != upTo(4) {
		t.Fatalf("refused rewinds changed the events: %s", got)
	}
	// To the end: nothing to supersede.
	if s := e.rewind(key, 4); s.EventCount != 4 {
		t.Fatalf("rewind to the end %+v", s)
	}
	if runs, _ := e.as().Superseded(e.ctx, key); len(runs) != 1 {
		t.Fatalf("rewind to the end superseded something: %+v", runs)
	}
}

func testBrRewindToCreation(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 4)
	// State set without events is rewound too: the state at 0 is the
	// creation state.
	if _, err := e.as().UpdateState(e.ctx, store.UpdateStateRequest{Key: key,
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"created": raw(false), "extra": raw(1)}}}); err != nil {
		t.Fatal(err)
	}
	e.rewind(key, 0)
	if got := e.brIDs(key); got != "" {
		t.Fatalf("events after rewind to 0: %s", got)
	}
	st := e.asGet(key).State.Session
	if len(st) != 2 || string(st["n"]) != "0" || string(st["created"]) != "true" {
		t.Fatalf("state after rewind to 0: %s, want the creation state", mustJSON(st))
	}
	e.brAppend(key, "x1", 7)
	e.rewind(key, 0)
	runs, err := e.as().Superseded(e.ctx, key)
	if err != nil || len(runs) != 2 || evIDs(runs[0].Events) != upTo(4) || evIDs(runs[1].Events) != "x1" {
		t.Fatalf("superseded runs %+v %v", runs, err)
	}
	e.wantSessionState(key, 0)
}

func testBrRewindKeepsForks(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 8)
	fk := withSession(key, "fork")
	e.fork(key, 6, fk.Session)
	early := withSession(key, "early")
	e.fork(key, 1, early.Session)
	e.rewind(key, 2)
	e.brAppend(key, "p3", 33)
	if got := e.brIDs(fk); got != upTo(6) {
		t.Fatalf("fork after its parent's rewind: %s", got)
	}
	if got := e.brIDs(early); got != upTo(1) {
		t.Fatalf("early fork after its parent's rewind: %s", got)
	}
	if got := e.brIDs(key); got != upTo(2)+",p3" {
		t.Fatalf("parent after rewind and append: %s", got)
	}
	// Rewinding again, below the first rewind, still leaves the fork
	// alone; a fork of the rewound parent sees the new history.
	e.rewind(key, 1)
	if got := e.brIDs(fk); got != upTo(6) {
		t.Fatalf("fork after a second rewind: %s", got)
	}
	f2 := withSession(key, "f2")
	e.brAppend(key, "q2", 22)
	e.fork(key, 2, f2.Session)
	if got := e.brIDs(f2); got != "e1,q2" {
		t.Fatalf("fork of the rewound parent: %s", got)
	}
	e.wantSessionState(f2, 22)
	// Deleting the rewound parent keeps both forks readable.
	if err := e.as().DeleteSession(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	if got := e.brIDs(fk); got != upTo(6) {
		t.Fatalf("fork after its parent's deletion: %s", got)
	}
	if got := e.brIDs(f2); got != "e1,q2" {
		t.Fatalf("f2 after its parent's deletion: %s", got)
	}
}

func testBrRewindBelowFork(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 6)
	fk := withSession(key, "fork")
	e.fork(key, 4, fk.Session)
	e.brAppend(fk, "a5", 105)
	e.brAppend(fk, "a6", 106)
	sub := withSession(key, "sub")
	e.fork(fk, 5, sub.Session) // reads a5 from the fork
	e.rewind(fk, 2)            // below the fork point
	if got := e.brIDs(fk); got != upTo(2) {
		t.Fatalf("fork rewound below its fork point: %s", got)
	}
	e.wantSessionState(fk, 2)
	if got := e.brIDs(sub); got != upTo(4)+",a5" {
		t.Fatalf("fork of the rewound fork: %s", got)
	}
	e.wantSessionState(sub, 105)
	if got := e.brIDs(key); got != upTo(6) {
		t.Fatalf("the root: %s", got)
	}
	// The run is every event after the rewind point: the inherited ones
	// (e3, e4) too, not only the fork's own.
	runs, err := e.as().Superseded(e.ctx, fk)
	if err != nil || len(runs) != 1 || evIDs(runs[0].Events) != "e3,e4,a5,a6" {
		t.Fatalf("superseded %+v %v", runs, err)
	}
	e.brAppend(fk, "c3", 303)
	if got := e.brIDs(fk); got != upTo(2)+",c3" {
		t.Fatalf("fork after append: %s", got)
	}
	// A fork with no events of its own, rewound below its fork point:
	// its superseded run holds the inherited events it gave up.
	bare := withSession(key, "bare")
	e.fork(key, 3, bare.Session)
	if s := e.rewind(bare, 1); s.EventCount != 1 {
		t.Fatalf("bare fork rewound to 1: %+v", s)
	}
	runs, err = e.as().Superseded(e.ctx, bare)
	if err != nil || len(runs) != 1 || evIDs(runs[0].Events) != "e2,e3" {
		t.Fatalf("superseded of the bare fork %+v %v", runs, err)
	}
	// A second rewind of the fork, below the first: two runs, each what
	// its rewind gave up.
	e.brAppend(bare, "b2", 202)
	e.brAppend(bare, "b3", 203)
	e.rewind(bare, 0)
	runs, err = e.as().Superseded(e.ctx, bare)
	if err != nil || len(runs) != 2 || evIDs(runs[0].Events) != "e2,e3" || evIDs(runs[1].Events) != "e1,b2,b3" {
		t.Fatalf("superseded of the bare fork after a second rewind %+v %v", runs, err)
	}
}

func testBrCompaction(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 10)
	res, err := e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 8},
		Summary: store.AgentEvent{ID: "sum1", Data: raw("summary of 1..8")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Event.Seq != 11 || res.Event.Compaction == nil || *res.Event.Compaction != (store.CompactionRange{From: 1, To: 8}) {
		t.Fatalf("compaction record %+v", res.Event)
	}
	e.brAppend(key, "e12", 12)
	// The originals stay in the full history.
	if got := e.brIDs(key); got != upTo(10)+",sum1,e12" {
		t.Fatalf("full history %s", got)
	}
	read := func(k store.SessionKey, recent int) []store.AgentEvent {
		t.Helper()
		s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true, FromLatestSummary: true, Recent: recent})
		if err != nil {
			t.Fatal(err)
		}
		return s.Events
	}
	evs := read(key, 0)
	if evIDs(evs) != "sum1,e9,e10,e12" || evs[0].Compaction == nil {
		t.Fatalf("summary and tail: %s", evIDs(evs))
	}
	if got := evIDs(read(key, 2)); got != "sum1,e10,e12" {
		t.Fatalf("summary and the last 2: %s", got)
	}
	// A later record is the latest; a fork sees its parent's.
	if _, err := e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 11},
		Summary: store.AgentEvent{ID: "sum2", Data: raw("summary of 1..11")}}); err != nil {
		t.Fatal(err)
	}
	if got := evIDs(read(key, 0)); got != "sum2,e12" {
		t.Fatalf("after a second compaction: %s", got)
	}
	fk := withSession(key, "fork")
	e.fork(key, 11, fk.Session)
	e.brAppend(fk, "f12", 1)
	if got := evIDs(read(fk, 0)); got != "sum1,e9,e10,f12" {
		t.Fatalf("fork's summary and tail: %s", got)
	}
	// Without a record the read is the whole history.
	plain := withSession(key, "plain")
	e.brSession(plain, 2)
	if got := evIDs(read(plain, 0)); got != upTo(2) {
		t.Fatalf("no compaction: %s", got)
	}
	// A range past the history is refused and writes nothing.
	v := e.asGet(key).Version
	_, err = e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 14},
		Summary: store.AgentEvent{ID: "bad", Data: raw("x")}})
	wantErr(t, err, store.ErrInvalidInput)
	_, err = e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 3, To: 2},
		Summary: store.AgentEvent{ID: "bad", Data: raw("x")}})
	wantErr(t, err, store.ErrInvalidInput)
	if s := e.asGet(key); s.Version != v || s.EventCount != 13 {
		t.Fatalf("refused compaction wrote: %+v", s)
	}
}

func testBrCompactionOnlyByCompact(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 3)
	// An append that carries a compaction range is refused.
	_, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: key,
		Event: store.AgentEvent{ID: "fake", Data: raw("x"), Compaction: &store.CompactionRange{From: 1, To: 3}}})
	wantErr(t, err, store.ErrInvalidInput)
	// An append whose data looks like a compaction is an ordinary event.
	look := raw(map[string]any{"actions": map[string]any{"compaction": map[string]any{"from": 1, "to": 3,
		"startTimestamp": 0, "endTimestamp": 1e12}}, "compaction": map[string]any{"from": 1, "to": 3}})
	r := e.asAppend(key, store.AgentEvent{ID: "lookalike", Data: look}, store.ScopedState{}, 0)
	if r.Event.Compaction != nil {
		t.Fatalf("ordinary append became a compaction record: %+v", r.Event)
	}
	s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := evIDs(s.Events); got != upTo(3)+",lookalike" {
		t.Fatalf("summary read honoured a look-alike: %s", got)
	}
	for _, ev := range s.Events {
		if ev.Compaction != nil {
			t.Fatalf("event %s reads back as a compaction record", ev.ID)
		}
	}
}

// testBrCompactionMultiProcess compacts a session again and again while
// another OS process appends to it: every append stays, after the ranges
// compacted before it, and the summary read ends with all of them.
func testBrCompactionMultiProcess(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 5)
	n := 120
	if raceEnabled {
		n = 40
	}
	cmd, stdout := e.spawn("agent-append", key.App, key.User, key.Session, "w", strconv.Itoa(n))
	var appended int
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var r struct{ Appended int }
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				appended = r.Appended
			}
		}
	}()
	compactions := 0
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		s := e.asGet(key)
		last := s.Events[len(s.Events)-1].Seq
		// Summarise everything read so far; appends of the other process
		// land while this is being decided.
		if _, err := e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: last},
			Summary: store.AgentEvent{ID: "sum-" + strconv.Itoa(compactions), Data: raw(last)}}); err != nil {
			t.Fatalf("compact: %v", err)
		}
		compactions++
		time.Sleep(time.Millisecond) // let the other process append between compactions
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if appended != n {
		t.Fatalf("helper reports %d appends, want %d", appended, n)
	}
	full := e.asGet(key).Events
	if len(full) != 5+n+compactions {
		t.Fatalf("%d events, want %d originals, %d appended and %d records", len(full), 5, n, compactions)
	}
	var seen []string
	for i, ev := range full {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if c := ev.Compaction; c != nil && (c.From != 1 || c.To >= ev.Seq) {
			t.Fatalf("record %s covers %+v at seq %d", ev.ID, *c, ev.Seq)
		}
		if strings.HasPrefix(ev.ID, "w-u") {
			seen = append(seen, ev.ID)
		}
	}
	for i := range n {
		if !slices.Contains(seen, fmt.Sprintf("w-u%d", i)) {
			t.Fatalf("append w-u%d lost (seen %d)", i, len(seen))
		}
	}
	// The summary read: the latest record, then every event after its
	// range, the other process's included.
	s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := s.Events[0]
	if sum.Compaction == nil || sum.ID != "sum-"+strconv.Itoa(compactions-1) {
		t.Fatalf("summary read starts with %+v", sum)
	}
	var want []string
	for _, ev := range full {
		if ev.Seq > sum.Compaction.To && ev.Seq != sum.Seq {
			want = append(want, ev.ID)
		}
	}
	if got := evIDs(s.Events[1:]); got != strings.Join(want, ",") {
		t.Fatalf("tail %s, want %s", got, strings.Join(want, ","))
	}
	t.Logf("%d compactions while %d events were appended", compactions, n)
}

func testBrAfterNanos(t *testing.T, e *env) {
	key := asKey()
	e.asCreate(key, store.ScopedState{})
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	for i := range 5 {
		e.asAppend(key, store.AgentEvent{ID: "n" + strconv.Itoa(i), Timestamp: base.Add(time.Duration(i) * 300 * time.Nanosecond),
			Data: raw(i)}, store.ScopedState{}, 0)
	}
	fk := withSession(key, "fork")
	e.fork(key, 5, fk.Session)
	for _, k := range []store.SessionKey{key, fk} {
		for i := range 5 {
			at := base.Add(time.Duration(i) * 300 * time.Nanosecond)
			for _, tc := range []struct {
				after time.Time
				from  int
			}{{at, i}, {at.Add(time.Nanosecond), i + 1}, {at.Add(-time.Nanosecond), i}} {
				s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: true, After: tc.after})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for j := tc.from; j < 5; j++ {
					want = append(want, "n"+strconv.Itoa(j))
				}
				if got := evIDs(s.Events); got != strings.Join(want, ",") {
					t.Fatalf("%s after %v: %s, want %s", k.Session, tc.after, got, strings.Join(want, ","))
				}
			}
		}
		evs := e.asGet(k).Events
		for i, ev := range evs {
			if !ev.Timestamp.Equal(base.Add(time.Duration(i) * 300 * time.Nanosecond)) {
				t.Fatalf("event %d timestamp %v", i, ev.Timestamp)
			}
		}
	}
}

func testBrHistory(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 5)
	f1, f2 := withSession(key, "f1"), withSession(key, "f2")
	e.fork(key, 3, f1.Session)
	e.brAppend(f1, "a4", 4)
	e.fork(f1, 4, f2.Session)
	e.rewind(key, 4)
	if _, err := e.as().Compact(e.ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 2},
		Summary: store.AgentEvent{ID: "s", Data: raw("s")}}); err != nil {
		t.Fatal(err)
	}
	nodes, err := e.as().History(e.ctx, f1)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]store.LineageNode{}
	var desc []string
	for _, n := range nodes {
		byID[n.ID] = n
		parent := "-"
		if n.Parent != 0 {
			p, ok := byID[n.Parent]
			if !ok {
				t.Fatalf("node %+v listed before its parent", n)
			}
			parent = p.Key.Session + "/" + p.Status
		}
		desc = append(desc, fmt.Sprintf("%s/%s<%s@%d n=%d cur=%v c=%d", n.Key.Session, n.Status, parent, n.ForkSeq,
			n.EventCount, n.Current, len(n.Compactions)))
	}
	want := []string{
		"session-1/live<-@0 n=5 cur=false c=1",
		"f1/live<session-1/live@3 n=4 cur=true c=0",
		"f2/live<f1/live@4 n=4 cur=false c=0",
		"session-1/superseded<session-1/live@4 n=5 cur=false c=0",
	}
	if strings.Join(desc, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(desc, "\n"), strings.Join(want, "\n"))
	}
	if c := nodes[0].Compactions[5]; c != (store.CompactionRange{From: 1, To: 2}) {
		t.Fatalf("compactions %+v", nodes[0].Compactions)
	}
	_, err = e.as().History(e.ctx, withSession(key, "missing"))
	wantErr(t, err, store.ErrNotFound)
}

func testBrFeed(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 3)
	fk := withSession(key, "fork")
	e.fork(key, 2, fk.Session)
	e.brAppend(fk, "f3", 3)
	w := watch(t, func(ctx context.Context) iter.Seq2[store.Batch[store.AgentEvent], error] {
		return e.st.Feed().Events(ctx, store.EventFeed{Key: fk, Limit: 2})
	})
	got := w.take(3, 2)
	if evIDs(got) != "e1,e2,f3" {
		t.Fatalf("fork's feed %s", evIDs(got))
	}
	e.brAppend(fk, "f4", 4)
	e.brAppend(key, "e4", 4) // the parent's: not in the fork's stream
	if ev := w.take(1, 2)[0]; ev.ID != "f4" || ev.Seq != 4 {
		t.Fatalf("next delivered %+v", ev)
	}
	w.quiet(30 * time.Millisecond)
	w.stop()
}

// testBrConcurrent rewinds and forks a session while goroutines append to
// it: every acknowledged append ends up in the history or in a superseded
// run, exactly once; positions stay gapless; every fork reads a prefix of
// what the session held.
func testBrConcurrent(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 5)
	writers, n := 4, 30
	if raceEnabled {
		n = 10
	}
	var wg sync.WaitGroup
	acked := make([][]string, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := e.as().AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: id, Data: raw(i)}}); err != nil {
					t.Errorf("append %s: %v", id, err)
					return
				}
				acked[w] = append(acked[w], id)
			}
		})
	}
	var forks []store.SessionKey
	wg.Go(func() {
		for i := range 8 {
			s, err := e.as().GetSession(e.ctx, store.GetAgentSessionRequest{Key: key})
			if err != nil {
				t.Errorf("get: %v", err)
				return
			}
			fk := withSession(key, "fork-"+strconv.Itoa(i))
			if _, err := e.as().Fork(e.ctx, store.ForkRequest{Key: key, At: s.EventCount / 2, Session: fk.Session}); err != nil {
				t.Errorf("fork: %v", err)
				return
			}
			forks = append(forks, fk)
			if _, err := e.as().Rewind(e.ctx, store.RewindRequest{Key: key, To: s.EventCount / 2}); err != nil && !errors.Is(err, store.ErrInvalidInput) {
				t.Errorf("rewind: %v", err)
				return
			}
		}
	})
	wg.Wait()
	s := e.asGet(key)
	if int64(len(s.Events)) != s.EventCount {
		t.Fatalf("%d events read, event count %d", len(s.Events), s.EventCount)
	}
	where := map[string]int{}
	for i, ev := range s.Events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		where[ev.ID]++
	}
	runs, err := e.as().Superseded(e.ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, ev := range r.Events {
			where[ev.ID]++
		}
	}
	for _, ids := range acked {
		for _, id := range ids {
			if where[id] != 1 {
				t.Fatalf("acknowledged append %s found %d times in the history and the superseded runs", id, where[id])
			}
		}
	}
	for _, fk := range forks {
		f := e.asGet(fk)
		if int64(len(f.Events)) != f.EventCount {
			t.Fatalf("fork %s: %d events read, event count %d", fk.Session, len(f.Events), f.EventCount)
		}
		for i, ev := range f.Events {
			if ev.Seq != int64(i+1) {
				t.Fatalf("fork %s event %d has seq %d", fk.Session, i, ev.Seq)
			}
		}
	}
}

// testBrEventDataOnly reads a fork (its own events and its parent's up to
// the fork point) with and without EventDataOnly, in every window: the
// same documents in the same order, and nothing else in the data-only
// events.
func testBrEventDataOnly(t *testing.T, e *env) {
	key := asKey()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	e.asCreate(key, store.ScopedState{})
	appendAt := func(k store.SessionKey, i int) {
		t.Helper()
		id := "e" + strconv.Itoa(i)
		e.asAppend(k, store.AgentEvent{ID: id, InvocationID: "inv", Timestamp: base.Add(time.Duration(i) * time.Second),
			Data: raw(map[string]any{"id": id})}, store.ScopedState{}, 0)
	}
	for i := 1; i <= 6; i++ {
		appendAt(key, i)
	}
	fk := withSession(key, "fork")
	e.fork(key, 4, fk.Session)
	for i := 7; i <= 9; i++ {
		appendAt(fk, i)
	}
	compacted := withSession(key, "compacted")
	e.asCreate(compacted, store.ScopedState{})
	for i := 1; i <= 5; i++ {
		appendAt(compacted, i)
	}
	if _, err := e.as().Compact(e.ctx, store.CompactRequest{Key: compacted, Range: store.CompactionRange{From: 1, To: 3},
		Summary: store.AgentEvent{ID: "sum", Data: raw("summary of 1..3")}}); err != nil {
		t.Fatal(err)
	}
	appendAt(compacted, 7)
	for _, k := range []store.SessionKey{key, fk, compacted} {
		for _, req := range []store.GetAgentSessionRequest{
			{}, {Recent: 3}, {Recent: 6}, {After: base.Add(3 * time.Second)}, {Recent: 2, After: base.Add(2 * time.Second)},
			{After: base.Add(time.Hour)}, {FromLatestSummary: true}, {FromLatestSummary: true, Recent: 1},
		} {
			req.Key, req.IncludeEvents = k, true
			whole, err := e.as().GetSession(e.ctx, req)
			if err != nil {
				t.Fatalf("GetSession(%s, %+v): %v", k.Session, req, err)
			}
			req.EventDataOnly = true
			only, err := e.as().GetSession(e.ctx, req)
			if err != nil {
				t.Fatalf("GetSession(%s, %+v): %v", k.Session, req, err)
			}
			if len(only.Events) != len(whole.Events) || len(whole.Events) == 0 && req.After.IsZero() {
				t.Fatalf("%s %+v: %d events data-only, %d whole", k.Session, req, len(only.Events), len(whole.Events))
			}
			if only.Events == nil {
				t.Fatalf("%s %+v: nil events, want an empty slice", k.Session, req)
			}
			for i, ev := range only.Events {
				if string(ev.Data) != string(whole.Events[i].Data) {
					t.Fatalf("%s %+v: event %d data %s, want %s", k.Session, req, i, ev.Data, whole.Events[i].Data)
				}
				if ev.Seq != 0 || ev.ID != "" || ev.InvocationID != "" || !ev.Timestamp.IsZero() || ev.Compaction != nil {
					t.Fatalf("%s %+v: data-only event %d carries more than its data: %+v", k.Session, req, i, ev)
				}
			}
			if only.Version != whole.Version || only.EventCount != whole.EventCount {
				t.Fatalf("%s: data-only session %+v, whole %+v", k.Session, only, whole)
			}
		}
	}
}
