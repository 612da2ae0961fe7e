package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// testASListScopes: ListApps names every application with a session, app
// state or user state, and ListUsers every user of an application with a
// session or user state, each once, in byte order, on pages of any size
// without gaps or repeats.
func testASListScopes(t *testing.T, e *env) {
	as := e.as()
	one := json.RawMessage(`1`)
	// Sessions in "b" and "a/x" (ids are opaque: a slash is data); app
	// state only in "c"; user state only in "d" (user "z") and in "b"
	// (user "y", who has no session).
	for _, k := range []store.SessionKey{
		{App: "b", User: "u2", Session: "s1"}, {App: "b", User: "u1", Session: "s1"},
		{App: "b", User: "u1", Session: "s2"}, {App: "a/x", User: "u1", Session: "s1"},
	} {
		if _, err := as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []store.UpdateStateRequest{
		{Key: store.SessionKey{App: "c"}, Delta: store.ScopedState{App: map[string]json.RawMessage{"k": one}}},
		{Key: store.SessionKey{App: "d", User: "z"}, Delta: store.ScopedState{User: map[string]json.RawMessage{"k": one}}},
		{Key: store.SessionKey{App: "b", User: "y"}, Delta: store.ScopedState{User: map[string]json.RawMessage{"k": one}}},
	} {
		if _, err := as.UpdateState(e.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	wantApps := []string{"a/x", "b", "c", "d"}
	wantUsers := map[string][]string{"a/x": {"u1"}, "b": {"u1", "u2", "y"}, "c": {}, "d": {"z"}, "nope": {}}
	for limit := 1; limit <= 5; limit++ {
		var apps []string
		cursor := ""
		for range 10 {
			page, err := as.ListApps(e.ctx, store.ListAppsRequest{Cursor: cursor, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page.Items))
			}
			apps = append(apps, page.Items...)
			if cursor = page.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(apps, wantApps) {
			t.Errorf("limit %d: apps %q, want %q", limit, apps, wantApps)
		}
		for app, want := range wantUsers {
			users := []string{}
			cursor := ""
			for range 10 {
				page, err := as.ListUsers(e.ctx, store.ListUsersRequest{App: app, Cursor: cursor, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				users = append(users, page.Items...)
				if cursor = page.Next; cursor == "" {
					break
				}
			}
			if !slices.Equal(users, want) {
				t.Errorf("limit %d: users of %q: %q, want %q", limit, app, users, want)
			}
		}
	}
	// A deleted session's user stays listed only while it has user state.
	if err := as.DeleteSession(e.ctx, store.SessionKey{App: "b", User: "u2", Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	page, err := as.ListUsers(e.ctx, store.ListUsersRequest{App: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"u1", "y"}; !slices.Equal(page.Items, want) || page.Next != "" {
		t.Errorf("users of b after a delete: %q (next %q), want %q", page.Items, page.Next, want)
	}
	for _, bad := range []error{
		func() error { _, err := as.ListUsers(e.ctx, store.ListUsersRequest{}); return err }(),
		func() error { _, err := as.ListApps(e.ctx, store.ListAppsRequest{Limit: -1}); return err }(),
		func() error { _, err := as.ListUsers(e.ctx, store.ListUsersRequest{App: "b", Limit: -1}); return err }(),
	} {
		if !errors.Is(bad, store.ErrInvalidInput) {
			t.Errorf("bad request: %v, want ErrInvalidInput", bad)
		}
	}
}
