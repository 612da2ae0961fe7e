package adk

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestIncrementalCacheStaysInBudget: sessions kept and extended by
// appends and continued gets never hold more events (decoded, or the
// documents of appends not yet decoded) in all than ReadCacheEvents; a
// session that outgrows it is read whole again, and
// every read is still the whole log.
func TestIncrementalCacheStaysInBudget(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const budget = 12
	svc := NewWithOptions(st, Options{ReadCacheEvents: budget})
	check := func() {
		t.Helper()
		c := svc.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		sum := 0
		for _, e := range c.gets {
			sum += len(e.events) + len(e.pending) // appends are kept undecoded until a Get
		}
		if sum != c.events || c.events > budget {
			t.Fatalf("the cache holds %d events (counted %d), budget %d", sum, c.events, budget)
		}
	}
	for _, id := range []string{"a", "b"} {
		created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		h := created.Session
		for i := range 20 {
			if err := svc.AppendEvent(ctx, h, &session.Event{ID: fmt.Sprint("e", i), Author: "model"}); err != nil {
				t.Fatal(err)
			}
			check()
			got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: id})
			if err != nil {
				t.Fatal(err)
			}
			if n := got.Session.Events().Len(); n != i+1 {
				t.Fatalf("session %s: read %d events after %d appends", id, n, i+1)
			}
			check()
			h = got.Session
		}
	}
}

// TestKeptSessionGrowsInPlace: extending a kept session by the service's
// own appends and continued gets writes the new events after the old
// ones in the same array (no event pointer is copied), while handles
// read earlier keep their own length and a handle's append never writes
// into the kept array.
func TestKeptSessionGrowsInPlace(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := New(st)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	k := getKey{key: created.Session.(*Session).key}
	first := func() **session.Event {
		t.Helper()
		e := svc.cache.get(k)
		if e == nil || len(e.events) == 0 {
			t.Fatal("no session kept")
		}
		return &e.buf[0]
	}
	h := created.Session
	var array **session.Event
	var handles []session.Session
	for i := range 12 {
		if err := svc.AppendEvent(ctx, h, &session.Event{ID: fmt.Sprint("e", i), Author: "model"}); err != nil {
			t.Fatal(err)
		}
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		h = got.Session
		snap, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, snap.Session) // nothing is appended through these
		if array == nil {
			array = first()
		} else if first() != array {
			t.Fatalf("after %d appends the kept events moved to another array", i+1)
		}
	}
	for i, hh := range handles {
		if n := hh.Events().Len(); n != i+1 {
			t.Fatalf("handle %d holds %d events", i, n)
		}
	}
	// An append through an old handle (refused: stale) and through the
	// newest one: the kept array is written by the cache only.
	if err := svc.AppendEvent(ctx, handles[3], &session.Event{ID: "stale", Author: "model"}); err == nil {
		t.Fatal("an append through a stale handle succeeded")
	}
	handles[3] = nil // refused, but it may hold the event now
	if err := svc.AppendEvent(ctx, h, &session.Event{ID: "last", Author: "model"}); err != nil {
		t.Fatal(err)
	}
	if n := h.Events().Len(); n != 13 || h.Events().At(12).ID != "last" {
		t.Fatalf("the handle holds %d events", n)
	}
	// The append is kept as its document until a Get uses the entry.
	e := svc.cache.get(k)
	if len(e.events) != 12 || len(e.pending) != 1 {
		t.Fatalf("the kept session holds %d events and %d documents, want 12 and the append's", len(e.events), len(e.pending))
	}
	if e = svc.cache.settle(k, e); e != svc.cache.get(k) {
		t.Fatal("the settled session did not take the entry's place")
	}
	if len(e.events) != 13 || e.events[12] == h.Events().At(12) || e.events[12].ID != "last" {
		t.Fatal("the kept session holds the handle's event object, or not the append")
	}
	for i, hh := range handles {
		if hh == nil {
			continue
		}
		if n := hh.Events().Len(); n != i+1 || hh.Events().At(i).ID != fmt.Sprint("e", i) {
			t.Fatalf("handle %d changed: %d events", i, n)
		}
	}
}

// TestAppendsAreDecodedByTheNextGet: the service's appends extend its
// kept session with their documents and decode nothing; the next Get
// decodes them once, keeps the result in the entry's place, and reads
// what a service without a cache reads.
func TestAppendsAreDecodedByTheNextGet(t *testing.T) {
	ctx := context.Background()
	path := sqltest.FreshPath(t, "sessions.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := New(st)
	uncached := NewWithOptions(st, Options{ReadCacheEvents: -1})
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	k := getKey{key: store.SessionKey{App: "app", User: "u", Session: "s"}}
	h := created.Session
	for round, appends := range []int{5, 2} {
		for i := range appends {
			ev := session.NewEvent(ctx, "inv")
			ev.Author = "model"
			ev.Content = genai.NewContentFromText(fmt.Sprint("round ", round, " reply ", i), genai.RoleModel)
			ev.Actions.StateDelta["n"] = float64(i)
			if err := svc.AppendEvent(ctx, h, ev); err != nil {
				t.Fatal(err)
			}
		}
		e := svc.cache.get(k)
		if e == nil || len(e.pending) != appends {
			t.Fatalf("round %d: the kept session holds %v documents, want the %d appends'", round, e, appends)
		}
		decoded := len(e.events)
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if e := svc.cache.get(k); len(e.pending) != 0 || len(e.events) != decoded+appends {
			t.Fatalf("round %d: after the get the kept session holds %d events and %d documents, want %d and none",
				round, len(e.events), len(e.pending), decoded+appends)
		}
		want, err := uncached.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		ge, we := got.Session.Events(), want.Session.Events()
		if ge.Len() != we.Len() {
			t.Fatalf("round %d: %d events, a read without a cache has %d", round, ge.Len(), we.Len())
		}
		for i := range ge.Len() {
			if !reflect.DeepEqual(*ge.At(i), *we.At(i)) {
				t.Fatalf("round %d: event %d is %+v, a read without a cache has %+v", round, i, *ge.At(i), *we.At(i))
			}
		}
		h = got.Session
	}
}
