package adk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// countingStore is a store whose agent-session reads count the events
// the store hands over: the rows a Get reads from the event log.
type countingStore struct {
	store.Store
	stamper store.ChangeStamper
	mu      sync.Mutex
	read    []int // events returned by each GetSession
}

func (c *countingStore) ChangeStamp(ctx context.Context) (uint64, error) {
	return c.stamper.ChangeStamp(ctx)
}

func (c *countingStore) AgentSessions() store.AgentSessions {
	return countingSessions{AgentSessions: c.Store.AgentSessions(), c: c}
}

// reads returns the events each GetSession returned since the last call.
func (c *countingStore) reads() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.read
	c.read = nil
	return r
}

type countingSessions struct {
	store.AgentSessions
	c *countingStore
}

func (s countingSessions) GetSession(ctx context.Context, req store.GetAgentSessionRequest) (store.AgentSession, error) {
	got, err := s.AgentSessions.GetSession(ctx, req)
	s.c.mu.Lock()
	s.c.read = append(s.c.read, len(got.Events))
	s.c.mu.Unlock()
	return got, err
}

// openCounting opens a service on a fresh file through a countingStore,
// and returns the file's path.
func openCounting(t *testing.T) (*adk.Service, *countingStore, string) {
	t.Helper()
	svc, path := openService(t) // a migrated file, closed at test end
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := &countingStore{Store: st, stamper: st}
	_ = svc
	return adk.New(c), c, path
}

// openUncached opens a service on path without a read cache: what a
// fresh process reads.
func openUncached(t *testing.T, path string) *adk.Service {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return adk.NewWithOptions(st, adk.Options{ReadCacheEvents: -1})
}

// sameSession fails unless got and want hold the same session: id,
// version, update time, merged state and events (deep-equal).
func sameSession(t *testing.T, what string, got, want session.Session) {
	t.Helper()
	g, w := got.(*adk.Session), want.(*adk.Session)
	if g.ID() != w.ID() || g.Version() != w.Version() || !g.LastUpdateTime().Equal(w.LastUpdateTime()) {
		t.Fatalf("%s: session %s v%d at %v, a fresh read has %s v%d at %v", what,
			g.ID(), g.Version(), g.LastUpdateTime(), w.ID(), w.Version(), w.LastUpdateTime())
	}
	gs, ws := maps.Collect(got.State().All()), maps.Collect(want.State().All())
	if !reflect.DeepEqual(gs, ws) {
		t.Fatalf("%s: state %v, a fresh read has %v", what, gs, ws)
	}
	ge, we := got.Events(), want.Events()
	if ge.Len() != we.Len() {
		t.Fatalf("%s: %d events, a fresh read has %d", what, ge.Len(), we.Len())
	}
	for i := range ge.Len() {
		if !reflect.DeepEqual(*ge.At(i), *we.At(i)) {
			gj, _ := json.Marshal(ge.At(i))
			wj, _ := json.Marshal(we.At(i))
			t.Fatalf("%s: event %d is\n%s\na fresh read has\n%s", what, i, gj, wj)
		}
	}
}

// checkAgainstFresh gets app/u/id through svc and through fresh and
// fails unless both are the same; it returns svc's.
func checkAgainstFresh(t *testing.T, what string, svc, fresh *adk.Service, id string) session.Session {
	t.Helper()
	got := getSession(t, svc, "app", "u", id, 0)
	sameSession(t, what, got, getSession(t, fresh, "app", "u", id, 0))
	return got
}

// TestGetAfterAppendsReadsOnlyNewEvents: in a runner's turn (a Get, then
// appends through its handle, then the next turn's Get) the Get after the
// service's own appends reads no event from the store, and after another
// store's appends only those; each read equals a fresh service's.
func TestGetAfterAppendsReadsOnlyNewEvents(t *testing.T) {
	ctx := context.Background()
	svc, c, path := openCounting(t)
	fresh := openUncached(t, path)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := svc.AppendEvent(ctx, created.Session, textEvent(fmt.Sprint("e", i), "hello", map[string]any{"n": float64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	c.reads()
	for turn := range 5 {
		h := checkAgainstFresh(t, fmt.Sprint("turn ", turn), svc, fresh, "s")
		if r := c.reads(); len(r) != 1 || r[0] != 0 {
			t.Fatalf("turn %d: the get after the service's own appends read %v events from the store, want [0]", turn, r)
		}
		for j := range 2 {
			if err := svc.AppendEvent(ctx, h, textEvent(fmt.Sprintf("t%d-%d", turn, j), "reply", map[string]any{"turn": float64(turn)})); err != nil {
				t.Fatal(err)
			}
		}
	}
	other, err := adk.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	oh := getSession(t, other, "app", "u", "s", 0)
	for i := range 3 {
		if err := other.AppendEvent(ctx, oh, textEvent(fmt.Sprint("o", i), "elsewhere", map[string]any{"o": float64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	c.reads()
	checkAgainstFresh(t, "after another store's appends", svc, fresh, "s")
	if r := c.reads(); len(r) != 1 || r[0] != 3 {
		t.Fatalf("the get after another store's 3 appends read %v events from the store, want [3]", r)
	}
}

// TestIncrementalGetIsExact: a session the service holds, changed by
// another store on the file in every way there is, reads exactly as a
// fresh service without a cache reads it.
func TestIncrementalGetIsExact(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	other, err := adk.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	testIncrementalExact(t, svc, other, openUncached(t, path))
}

// testIncrementalExact is TestIncrementalGetIsExact on three services of
// one database: svc (with its cache) is checked against fresh (without)
// while other changes the session.
func testIncrementalExact(t *testing.T, svc, other, fresh *adk.Service) {
	ctx := context.Background()
	oas := other.Store().AgentSessions()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	appendFrom := func(s *adk.Service, h session.Session, prefix string, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := s.AppendEvent(ctx, h, textEvent(fmt.Sprint(prefix, i), prefix+" text", map[string]any{"n": float64(i), "app:a": prefix})); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendTo := func(s *adk.Service, h session.Session, prefix string, n int) {
		t.Helper()
		appendFrom(s, h, prefix, 0, n)
	}
	appendTo(svc, created.Session, "e", 6)
	checkAgainstFresh(t, "own appends", svc, fresh, "s")

	appendTo(other, getSession(t, other, "app", "u", "s", 0), "x", 2)
	h := checkAgainstFresh(t, "another store's appends", svc, fresh, "s")

	// Rewound by the other store and grown back past the length held,
	// with the same event ids and other content.
	if _, err := oas.Rewind(ctx, store.RewindRequest{Key: key, To: 3}); err != nil {
		t.Fatal(err)
	}
	appendFrom(other, getSession(t, other, "app", "u", "s", 0), "e", 3, 7) // e3.. again, other content
	h2 := checkAgainstFresh(t, "rewound and grown back past the length held", svc, fresh, "s")
	if err := svc.AppendEvent(ctx, h, textEvent("late", "behind", nil)); !errors.Is(err, adk.ErrStaleSession) {
		t.Fatalf("append through a handle read before the rewind: %v", err)
	}
	if _, err := oas.Rewind(ctx, store.RewindRequest{Key: key, To: 5}); err != nil {
		t.Fatal(err)
	}
	checkAgainstFresh(t, "rewound", svc, fresh, "s")
	if err := svc.AppendEvent(ctx, h2, textEvent("late", "behind", nil)); !errors.Is(err, adk.ErrStaleSession) {
		t.Fatalf("append through a handle read before the second rewind: %v", err)
	}
	appendFrom(other, getSession(t, other, "app", "u", "s", 0), "e", 5, 2)
	h = checkAgainstFresh(t, "rewound and grown back", svc, fresh, "s")
	appendTo(svc, h, "own", 2)
	checkAgainstFresh(t, "own appends after the rewind", svc, fresh, "s")

	// Rewound to nothing, then the first event again.
	if _, err := oas.Rewind(ctx, store.RewindRequest{Key: key, To: 0}); err != nil {
		t.Fatal(err)
	}
	appendTo(other, getSession(t, other, "app", "u", "s", 0), "e", 1)
	checkAgainstFresh(t, "rewound to nothing", svc, fresh, "s")

	// State changed without an event: session, user and app scopes.
	if _, err := oas.UpdateState(ctx, store.UpdateStateRequest{Key: key, Delta: store.ScopedState{
		Session: map[string]json.RawMessage{"k": json.RawMessage(`"changed"`)},
		User:    map[string]json.RawMessage{"u": json.RawMessage(`1`)},
		App:     map[string]json.RawMessage{"a": json.RawMessage(`"other app value"`)},
	}}); err != nil {
		t.Fatal(err)
	}
	h = checkAgainstFresh(t, "state changed", svc, fresh, "s")

	// A compaction record (an append of the store's own).
	if _, err := oas.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 1},
		Summary: store.AgentEvent{ID: "summary", Data: json.RawMessage(`{"author":"model","actions":{}}`)}}); err != nil {
		t.Fatal(err)
	}
	checkAgainstFresh(t, "compacted", svc, fresh, "s")

	// Deleted and created again with events of the same ids, three times,
	// with the service's own appends in between.
	for round := range 3 {
		appendTo(svc, getSession(t, svc, "app", "u", "s", 0), "mine", 2)
		if err := other.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
			t.Fatal(err)
		}
		again, err := other.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"round": float64(round)}})
		if err != nil {
			t.Fatal(err)
		}
		appendTo(other, again.Session, "e", 3+round)
		checkAgainstFresh(t, fmt.Sprint("created again, round ", round), svc, fresh, "s")
	}

	// Concurrent appends from goroutines of both services, and reads in
	// between: every read is a prefix of the log; the last, all of it.
	var wg sync.WaitGroup
	for w := range 4 {
		s := svc
		if w%2 == 1 {
			s = other
		}
		wg.Go(func() {
			// Stale refusals refresh the handle (a continued Get) and retry.
			if _, err := appendShared(ctx, s, "app", "u", "s", "w"+strconv.Itoa(w), 15); err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		})
	}
	wg.Wait()
	checkAgainstFresh(t, "after concurrent appends", svc, fresh, "s")
	checkAgainstFresh(t, "after concurrent appends, the other store", other, fresh, "s")
}

// TestIncrementalGetHandlesAreIndependent: the session kept from a
// service's own appends is the stored event decoded, not the caller's
// event (changing that afterwards changes no later read), and handles
// continued from one another do not share appends or state writes.
func TestIncrementalGetHandlesAreIndependent(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	fresh := openUncached(t, path)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	ev := textEvent("e0", "original", map[string]any{"n": 1.0})
	if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
		t.Fatal(err)
	}
	ev.Content.Parts[0].Text = "changed by the caller"
	ev.Actions.StateDelta["n"] = "changed by the caller"
	a := checkAgainstFresh(t, "after the caller changed its event", svc, fresh, "s")
	if got := a.Events().At(0).Content.Parts[0].Text; got != "original" {
		t.Fatalf("the read returns the caller's event: %q", got)
	}
	if err := svc.AppendEvent(ctx, a, textEvent("e1", "through a", nil)); err != nil {
		t.Fatal(err)
	}
	b := checkAgainstFresh(t, "after an append through a", svc, fresh, "s")
	if err := b.State().Set("k", "written to b"); err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, b, textEvent("e2", "through b", map[string]any{"b": true})); err != nil {
		t.Fatal(err)
	}
	if n := a.Events().Len(); n != 2 {
		t.Fatalf("an append through b shows in a: %d events", n)
	}
	if _, err := a.State().Get("b"); err == nil {
		t.Fatal("b's delta shows in a's state")
	}
	c := checkAgainstFresh(t, "after b's append", svc, fresh, "s")
	if v, _ := c.State().Get("k"); v != "v" {
		t.Fatalf("a write to b's state shows in a later read: %v", v)
	}
	if c.Events().At(2) == b.Events().At(2) {
		t.Fatal("a later read returns b's own event object")
	}
}

func init() {
	helperRoles["changer"] = changerRole
}

// changerRole: args are a change (append, rewind, recreate, state) and
// the session id of app/u. It makes that change and reports {"done":1}.
func changerRole(ctx context.Context, svc *adk.Service, args []string, out io.Writer) error {
	key := store.SessionKey{App: "app", User: "u", Session: args[1]}
	as := svc.Store().AgentSessions()
	appendN := func(prefix string, n int) error {
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: args[1]})
		if err != nil {
			return err
		}
		for i := range n {
			if err := svc.AppendEvent(ctx, got.Session, textEvent(fmt.Sprint(prefix, i), "from a process", map[string]any{"p": float64(i)})); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch args[0] {
	case "append":
		err = appendN("p-"+strconv.Itoa(os.Getpid())+"-", 4)
	case "rewind":
		if _, err = as.Rewind(ctx, store.RewindRequest{Key: key, To: 2}); err == nil {
			err = appendN("r", 6)
		}
	case "recreate":
		if err = svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: args[1]}); err == nil {
			if _, err = svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: args[1]}); err == nil {
				err = appendN("e", 3)
			}
		}
	case "state":
		_, err = as.UpdateState(ctx, store.UpdateStateRequest{Key: key, Delta: store.ScopedState{
			Session: map[string]json.RawMessage{"k": json.RawMessage(`"from a process"`)}}})
	default:
		err = fmt.Errorf("unknown change %q", args[0])
	}
	if err != nil {
		return err
	}
	return writeJSON(out, map[string]int{"done": 1})
}

// TestIncrementalGetSecondProcess: a session this process holds, changed
// by a second OS process (appends, a rewind grown back past the length
// held, a delete and create with the same ids, a state change), reads
// exactly as a fresh service reads it.
func TestIncrementalGetSecondProcess(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	fresh := openUncached(t, path)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := svc.AppendEvent(ctx, created.Session, textEvent(fmt.Sprint("e", i), "here", nil)); err != nil {
			t.Fatal(err)
		}
	}
	for _, change := range []string{"append", "rewind", "append", "recreate", "state", "append"} {
		h := checkAgainstFresh(t, "before "+change, svc, fresh, "s")
		if err := svc.AppendEvent(ctx, h, textEvent("own-"+change+strconv.Itoa(h.Events().Len()), "here", nil)); err != nil {
			t.Fatal(err)
		}
		var report struct{ Done int }
		if err := spawnHelper(t, path, "changer", &report, change, "s")(); err != nil {
			t.Fatal(err)
		}
		checkAgainstFresh(t, "after a process's "+change, svc, fresh, "s")
	}
}
