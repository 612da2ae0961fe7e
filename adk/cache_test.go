package adk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func getSession(t *testing.T, svc *adk.Service, app, user, id string, recent int) session.Session {
	t.Helper()
	got, err := svc.Get(context.Background(), &session.GetRequest{AppName: app, UserID: user, SessionID: id, NumRecentEvents: recent})
	if err != nil {
		t.Fatal(err)
	}
	return got.Session
}

func textEvent(id, text string, delta map[string]any) *session.Event {
	ev := session.NewEvent(context.Background(), "inv")
	ev.ID, ev.Author = id, "model"
	ev.Content = genai.NewContentFromText(text, genai.RoleModel)
	for k, v := range delta {
		ev.Actions.StateDelta[k] = v
	}
	return ev
}

// TestReadCacheServesUnchangedReads: a repeated Get of an unchanged
// session returns the events decoded the first time (the same pointers:
// the cache served it), and a List likewise; after any commit, by this
// service or by another store on the file, the next read is fresh.
func TestReadCacheServesUnchangedReads(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	other, err := adk.Open(ctx, path) // another store: another connection, as another process
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := svc.AppendEvent(ctx, created.Session, textEvent(fmt.Sprint("e", i), "hello", map[string]any{"n": float64(i)})); err != nil {
			t.Fatal(err)
		}
	}
	first := getSession(t, svc, "app", "u", "s", 0)
	second := getSession(t, svc, "app", "u", "s", 0)
	if second.Events().Len() != 3 || first.Events().At(2) != second.Events().At(2) {
		t.Fatal("an unchanged session was decoded again: the cache did not serve it")
	}
	recent := getSession(t, svc, "app", "u", "s", 2)
	if recent.Events().Len() != 2 || recent.Events().At(1).ID != "e2" {
		t.Fatalf("recent 2 from a cached store: %d events", recent.Events().Len())
	}

	// Another store appends: the next Get sees it.
	h := getSession(t, other, "app", "u", "s", 1)
	if err := other.AppendEvent(ctx, h, textEvent("x1", "from the other store", map[string]any{"n": 9.0})); err != nil {
		t.Fatal(err)
	}
	third := getSession(t, svc, "app", "u", "s", 0)
	if third.Events().Len() != 4 || third.Events().At(3).ID != "x1" {
		t.Fatalf("after another store's append: %d events", third.Events().Len())
	}
	if v, _ := third.State().Get("n"); v != 9.0 {
		t.Fatalf("state after another store's append: n = %v", v)
	}

	// Deleted and created again by the other store, with an event of the
	// same id and other content: the next Get reads the new session.
	if err := other.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after another store's delete: %v", err)
	}
	again, err := other.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.AppendEvent(ctx, again.Session, textEvent("e0", "new content", nil)); err != nil {
		t.Fatal(err)
	}
	fresh := getSession(t, svc, "app", "u", "s", 0)
	if fresh.Events().Len() != 1 || fresh.Events().At(0).Content.Parts[0].Text != "new content" {
		t.Fatal("a session created again was read from the cache")
	}

	// Lists: served again while unchanged, fresh after a create elsewhere.
	list := func(s *adk.Service) []session.Session {
		t.Helper()
		got, err := s.List(ctx, &session.ListRequest{AppName: "app", UserID: "u"})
		if err != nil {
			t.Fatal(err)
		}
		return got.Sessions
	}
	if n := len(list(svc)); n != 1 {
		t.Fatalf("listed %d sessions, want 1", n)
	}
	if _, err := other.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "t", State: map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	got := list(svc)
	if len(got) != 2 {
		t.Fatalf("after another store's create: listed %d sessions, want 2", len(got))
	}
	if v, _ := got[1].State().Get("k"); v != "v" {
		t.Fatalf("listed state k = %v", v)
	}
}

// TestReadCacheHandlesAreIndependent: handles served from the cache do not
// see each other's state writes or appends, and the cache does not either.
func TestReadCacheHandlesAreIndependent(t *testing.T) {
	ctx := context.Background()
	svc, _ := openService(t)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, created.Session, textEvent("e0", "hi", nil)); err != nil {
		t.Fatal(err)
	}
	a := getSession(t, svc, "app", "u", "s", 0)
	b := getSession(t, svc, "app", "u", "s", 0)
	if err := a.State().Set("k", "changed"); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.State().Get("k"); v != "v" {
		t.Fatalf("a write to one handle's state shows in another: %v", v)
	}
	if v, _ := getSession(t, svc, "app", "u", "s", 0).State().Get("k"); v != "v" {
		t.Fatalf("a write to a handle's state shows in the cache: %v", v)
	}
	if err := svc.AppendEvent(ctx, a, textEvent("e1", "more", map[string]any{"k2": 1.0})); err != nil {
		t.Fatal(err)
	}
	if n := b.Events().Len(); n != 1 {
		t.Fatalf("an append through one handle shows in another: %d events", n)
	}
	if _, err := b.State().Get("k2"); err == nil {
		t.Fatal("an append's delta through one handle shows in another's state")
	}
	c := getSession(t, svc, "app", "u", "s", 0)
	if c.Events().Len() != 2 {
		t.Fatalf("after the append: %d events", c.Events().Len())
	}
}

func init() {
	helperRoles["cacheappender"] = cacheAppenderRole
}

// cacheAppenderRole: args are the session id and n. It appends n events
// to app/u/<id> (which must exist) and reports {"appended":n}.
func cacheAppenderRole(ctx context.Context, svc *adk.Service, args []string, out io.Writer) error {
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: args[0]})
	if err != nil {
		return err
	}
	for i := range n {
		if err := svc.AppendEvent(ctx, got.Session, textEvent(fmt.Sprint("child-", i), "x", map[string]any{"child": float64(i)})); err != nil {
			return err
		}
	}
	return writeJSON(out, map[string]int{"appended": n})
}

// TestReadCacheSecondProcess: while a second OS process appends to a
// session, this one reads it again and again (from its cache whenever
// nothing changed): every read is a consistent prefix of the log (the
// event count never goes down, the state matches the last event read),
// and the first read after the process is done sees all of its events.
func TestReadCacheSecondProcess(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var report struct{ Appended int }
	wait := spawnHelper(t, path, "cacheappender", &report, "s", strconv.Itoa(n))
	done := make(chan error, 1)
	go func() { done <- wait() }()
	last := 0
	check := func() {
		t.Helper()
		s := getSession(t, svc, "app", "u", "s", 0)
		k := s.Events().Len()
		if k < last {
			t.Fatalf("read %d events after %d", k, last)
		}
		last = k
		if k > 0 {
			if v, _ := s.State().Get("child"); v != float64(k-1) {
				t.Fatalf("%d events read with state child = %v", k, v)
			}
		}
	}
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
			check()
		}
	}
	check()
	if last != n || report.Appended != n {
		t.Fatalf("after the second process: %d events read, %d appended, want %d", last, report.Appended, n)
	}
}

// TestGetReportsCorruptEvent: a long log (decoded by several goroutines)
// with two stored events that do not decode as ADK events fails the Get
// with store.ErrCorrupt naming the earlier one, and returns no session.
func TestGetReportsCorruptEvent(t *testing.T) {
	ctx := context.Background()
	// synchronous=NORMAL: 200 appends, and durability is not the point.
	svc, err := adk.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	key := store.SessionKey{App: "app", User: "u", Session: "s"}
	as := svc.Store().AgentSessions()
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 200; i++ {
		data := []byte(`{"author":"model","actions":{}}`)
		if i == 60 || i == 140 { // in the first and the second half
			data = []byte(`{"content":5}`)
		}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: fmt.Sprint("e", i), Data: data}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if !errors.Is(err, store.ErrCorrupt) || got != nil {
		t.Fatalf("Get of a log with undecodable events: %v, %v", got, err)
	}
	if !strings.Contains(err.Error(), "event 60 ") {
		t.Fatalf("error names another event than the first bad one: %v", err)
	}
	if recent := getSession(t, svc, "app", "u", "s", 50); recent.Events().Len() != 50 {
		t.Fatalf("the last 50 (all sound): %d events", recent.Events().Len())
	}
}

// TestReadCacheUnderContention: eight goroutines read one session again
// and again (through the cache whenever nothing changed) while another
// store on the file appends to it: every read is a consistent prefix of
// the log (its count never goes down for a reader, the state matches the
// count, the events are in order), and once the appends are done every
// reader sees all of them.
func TestReadCacheUnderContention(t *testing.T) {
	ctx := context.Background()
	svc, path := openService(t)
	writer, err := adk.Open(ctx, path, sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	created, err := writer.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	const n, readers = 40, 8
	done := make(chan struct{})
	var wg sync.WaitGroup
	check := func(last *int) error {
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			return err
		}
		evs := got.Session.Events()
		k := evs.Len()
		if k < *last {
			return fmt.Errorf("read %d events after %d", k, *last)
		}
		*last = k
		for i := range k {
			if id := evs.At(i).ID; id != fmt.Sprint("e", i) {
				return fmt.Errorf("event %d is %s", i, id)
			}
		}
		if k > 0 {
			if v, _ := got.Session.State().Get("n"); v != float64(k-1) {
				return fmt.Errorf("%d events read with state n = %v", k, v)
			}
		}
		return nil
	}
	for range readers {
		wg.Go(func() {
			last := 0
			for {
				select {
				case <-done:
					if err := check(&last); err != nil {
						t.Error(err)
					} else if last != n {
						t.Errorf("after the appends a reader sees %d events, want %d", last, n)
					}
					return
				default:
				}
				if err := check(&last); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range n {
		if err := writer.AppendEvent(ctx, created.Session, textEvent(fmt.Sprint("e", i), "x", map[string]any{"n": float64(i)})); err != nil {
			t.Error(err) // the readers still stop (and report the shortfall)
			break
		}
	}
	close(done)
	wg.Wait()
}
