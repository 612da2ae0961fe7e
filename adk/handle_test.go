package adk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/store"
)

func mustGet(t *testing.T, svc *adk.Service, app, user, id string) session.Session {
	t.Helper()
	got, err := svc.Get(context.Background(), &session.GetRequest{AppName: app, UserID: user, SessionID: id})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return got.Session
}

func eventIDs(s session.Session) string {
	var ids []string
	for ev := range s.Events().All() {
		ids = append(ids, ev.ID)
	}
	return strings.Join(ids, ",")
}

func delta(kv ...any) session.EventActions {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return session.EventActions{StateDelta: m}
}

// TestStaleHandleIsRefused: a second writer whose handle was overtaken is
// refused with a typed error, writes nothing, and gets through after
// Refresh.
func TestStaleHandleIsRefused(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	runner := mustGet(t, svc, "app", "u", "s")
	second := mustGet(t, svc, "app", "u", "s")
	secondState := second.State() // a view taken before the refresh

	if err := svc.AppendEvent(ctx, runner, &session.Event{ID: "r1", Author: "agent", Actions: delta("turn", "runner")}); err != nil {
		t.Fatal(err)
	}
	err := svc.AppendEvent(ctx, second, &session.Event{ID: "x1", Author: "side", Actions: delta("turn", "side", "app:flag", true)})
	wantIs(t, err, adk.ErrStaleSession)
	wantIs(t, err, store.ErrConflict)
	var stale *store.StaleSessionError
	if !errors.As(err, &stale) || stale.Expected != 1 || stale.Current != 2 {
		t.Fatalf("stale details: %+v", stale)
	}
	if second.Events().Len() != 0 {
		t.Fatalf("the refused append changed the handle")
	}
	stored := mustGet(t, svc, "app", "u", "s")
	if eventIDs(stored) != "r1" {
		t.Fatalf("log after a refused append: %s", eventIDs(stored))
	}
	if _, err := stored.State().Get("app:flag"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Fatalf("the refused append's delta was applied")
	}

	// The documented way out.
	if err := svc.Refresh(ctx, second); err != nil {
		t.Fatal(err)
	}
	if eventIDs(second) != "r1" {
		t.Fatalf("refreshed handle events %q", eventIDs(second))
	}
	if v, _ := secondState.Get("turn"); v != "runner" {
		t.Fatalf("a state view taken before Refresh reads %v, want the fresh value", v)
	}
	if err := svc.AppendEvent(ctx, second, &session.Event{ID: "x1", Author: "side", Actions: delta("turn", "side")}); err != nil {
		t.Fatalf("append after refresh: %v", err)
	}
	// Now the runner's handle is the stale one.
	err = svc.AppendEvent(ctx, runner, &session.Event{ID: "r2", Author: "agent"})
	wantIs(t, err, adk.ErrStaleSession)
	if got := eventIDs(mustGet(t, svc, "app", "u", "s")); got != "r1,x1" {
		t.Fatalf("final log %q", got)
	}
	if err := svc.Refresh(ctx, &fakeSession{}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Refresh of a foreign session: %v", err)
	}
}

// TestHandleTracksAppends: the handle returned by Create/Get holds what
// was appended through it; temp: keys are visible in the handle but never
// stored.
func TestHandleTracksAppends(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s",
		State: map[string]any{"k": "v0", "temp:t": "never", "user:name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	h := created.Session
	if _, err := h.State().Get("temp:t"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Fatalf("temp: key given to Create is in the session")
	}
	before := h.Events()
	ev := &session.Event{ID: "e1", Author: "user", Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Actions: delta("k", "v1", "temp:scratch", float64(7), "app:shared", "yes")}
	if err := svc.AppendEvent(ctx, h, ev); err != nil {
		t.Fatal(err)
	}
	if before.Len() != 0 {
		t.Fatalf("an Events view taken before the append changed")
	}
	if h.Events().Len() != 1 || h.Events().At(0).ID != "e1" {
		t.Fatalf("handle events %q", eventIDs(h))
	}
	if _, ok := h.Events().At(0).Actions.StateDelta["temp:scratch"]; ok {
		t.Fatalf("the handle's copy of the event keeps its temp: key")
	}
	if _, ok := ev.Actions.StateDelta["temp:scratch"]; !ok {
		t.Fatalf("AppendEvent removed the temp: key from the caller's event")
	}
	for k, want := range map[string]any{"k": "v1", "temp:scratch": float64(7), "app:shared": "yes", "user:name": "Ada"} {
		if got, err := h.State().Get(k); err != nil || got != want {
			t.Fatalf("handle state %q = %v (%v), want %v", k, got, err, want)
		}
	}
	if h.(*adk.Session).Version() != 2 || h.LastUpdateTime().IsZero() {
		t.Fatalf("handle version %d, updated %v", h.(*adk.Session).Version(), h.LastUpdateTime())
	}
	stored := mustGet(t, svc, "app", "u", "s")
	if _, err := stored.State().Get("temp:scratch"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Fatalf("temp: key was persisted")
	}
	if _, ok := stored.Events().At(0).Actions.StateDelta["temp:scratch"]; ok {
		t.Fatalf("the stored event keeps its temp: key")
	}
	if !stored.LastUpdateTime().Equal(h.LastUpdateTime()) {
		t.Fatalf("stored update time %v, handle %v", stored.LastUpdateTime(), h.LastUpdateTime())
	}
	// Partial events change nothing.
	if err := svc.AppendEvent(ctx, h, &session.Event{ID: "p", LLMResponse: model.LLMResponse{Partial: true}, Actions: delta("k", "partial")}); err != nil {
		t.Fatal(err)
	}
	if h.Events().Len() != 1 || mustGet(t, svc, "app", "u", "s").Events().Len() != 1 {
		t.Fatalf("a partial event was recorded")
	}
	if v, _ := h.State().Get("k"); v != "v1" {
		t.Fatalf("a partial event changed the state")
	}
}

// TestAppendIsIdempotent: re-appending an event that is already stored
// (same id, same content) succeeds without writing; the same id with other
// content is a conflict.
func TestAppendIsIdempotent(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ev := &session.Event{ID: "once", Author: "user", Actions: delta("n", float64(1))}
	for range 3 {
		if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
			t.Fatalf("re-append: %v", err)
		}
	}
	foreign := &fakeSession{app: "app", user: "u", id: "s"}
	if err := svc.AppendEvent(ctx, foreign, ev); err != nil {
		t.Fatalf("re-append through a foreign handle: %v", err)
	}
	if got := eventIDs(mustGet(t, svc, "app", "u", "s")); got != "once" {
		t.Fatalf("log %q", got)
	}
	if created.Session.Events().Len() != 1 {
		t.Fatalf("handle has %d events", created.Session.Events().Len())
	}
	other := &session.Event{ID: "once", Author: "someone else", Timestamp: ev.Timestamp}
	wantIs(t, svc.AppendEvent(ctx, created.Session, other), store.ErrConflict)
}

// TestBadInput: malformed requests get ErrInvalidInput and write nothing.
func TestBadInput(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	h := created.Session
	bad := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	_, err = svc.Create(ctx, nil)
	bad("nil create", err)
	_, err = svc.Create(ctx, &session.CreateRequest{UserID: "u"})
	bad("create without app", err)
	_, err = svc.Create(ctx, &session.CreateRequest{AppName: "app"})
	bad("create without user", err)
	_, err = svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "c", State: map[string]any{"f": func() {}}})
	bad("create with a func in state", err)
	_, err = svc.Get(ctx, nil)
	bad("nil get", err)
	_, err = svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u"})
	bad("get without session", err)
	_, err = svc.List(ctx, &session.ListRequest{})
	bad("list without app", err)
	bad("delete without session", svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u"}))
	bad("nil session", svc.AppendEvent(ctx, nil, &session.Event{}))
	bad("nil event", svc.AppendEvent(ctx, h, nil))
	bad("channel in delta", svc.AppendEvent(ctx, h, &session.Event{ID: "x", Actions: delta("c", make(chan int))}))
	bad("func in metadata", svc.AppendEvent(ctx, h, &session.Event{ID: "y", LLMResponse: model.LLMResponse{CustomMetadata: map[string]any{"f": func() {}}}}))
	bad("control char in event id", svc.AppendEvent(ctx, h, &session.Event{ID: "a\nb"}))
	bad("huge event", svc.AppendEvent(ctx, h, &session.Event{ID: "z", Author: strings.Repeat("x", store.MaxEventSize)}))

	got := mustGet(t, svc, "app", "u", "s")
	if got.Events().Len() != 0 || h.Events().Len() != 0 {
		t.Fatalf("bad input wrote events")
	}
	if _, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "c"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused create made a session: %v", err)
	}
	// The handle still appends: no bad request moved its version.
	if err := svc.AppendEvent(ctx, h, &session.Event{ID: "good"}); err != nil {
		t.Fatal(err)
	}
}

// TestDeleteAndList covers the ADK-level cascade and listing with merged
// state.
func TestDeleteAndList(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	for _, k := range []struct{ user, id string }{{"u1", "a"}, {"u1", "b"}, {"u2", "c"}} {
		c, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: k.user, SessionID: k.id,
			State: map[string]any{"id": k.id, "user:who": k.user, "app:v": float64(1)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.AppendEvent(ctx, c.Session, &session.Event{ID: "e-" + k.id}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := svc.List(ctx, &session.ListRequest{AppName: "app"})
	if err != nil || len(all.Sessions) != 3 {
		t.Fatalf("List: %d, %v", len(all.Sessions), err)
	}
	for _, s := range all.Sessions {
		if v, _ := s.State().Get("id"); v != s.ID() {
			t.Fatalf("listed %s with state id %v", s.ID(), v)
		}
		if v, _ := s.State().Get("user:who"); v != s.UserID() {
			t.Fatalf("listed %s with user state %v", s.ID(), v)
		}
		if v, _ := s.State().Get("app:v"); v != float64(1) {
			t.Fatalf("listed %s with app state %v", s.ID(), v)
		}
		if s.Events().Len() != 0 {
			t.Fatalf("listed sessions carry events")
		}
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1", SessionID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u1", SessionID: "a"}); err != nil {
		t.Fatalf("deleting a missing session: %v", err)
	}
	again, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Session.Events().Len() != 0 {
		t.Fatalf("recreated session has old events")
	}
	if _, err := again.Session.State().Get("id"); err == nil {
		t.Fatalf("recreated session has old session state")
	}
	if v, _ := again.Session.State().Get("user:who"); v != "u1" {
		t.Fatalf("user state did not outlive the session: %v", v)
	}
	u1, err := svc.List(ctx, &session.ListRequest{AppName: "app", UserID: "u1"})
	if err != nil || len(u1.Sessions) != 2 {
		t.Fatalf("List(u1): %d, %v", len(u1.Sessions), err)
	}
}

// fakeSession is a session.Session of another implementation.
type fakeSession struct{ app, user, id string }

func (f *fakeSession) ID() string                { return f.id }
func (f *fakeSession) AppName() string           { return f.app }
func (f *fakeSession) UserID() string            { return f.user }
func (f *fakeSession) State() session.State      { return nil }
func (f *fakeSession) Events() session.Events    { return nil }
func (f *fakeSession) LastUpdateTime() time.Time { return time.Time{} }
