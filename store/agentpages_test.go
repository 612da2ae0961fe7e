package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestListAgentSessionsPage: pages across applications list every session
// once, in (app, user, session) order, whatever the page size; App, User
// and UpdatedBefore select; a cursor of another application, or not a
// cursor, is refused; a cursor whose application is gone continues with
// the next one.
func TestListAgentSessionsPage(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlstore.WithClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	as := st.AgentSessions()
	var all []string
	for _, k := range []store.SessionKey{{App: "a", User: "u1", Session: "s1"}, {App: "a", User: "u2", Session: "s1"},
		{App: "b", User: "u1", Session: "s1"}, {App: "b", User: "u1", Session: "s2"}, {App: "c", User: "u2", Session: "s1"}} {
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
			t.Fatal(err)
		}
		all = append(all, k.App+"/"+k.User+"/"+k.Session)
		now = now.Add(time.Minute)
	}
	read := func(req store.AgentSessionsPageRequest) ([]string, int) {
		t.Helper()
		var got []string
		pages := 0
		for {
			p, err := store.ListAgentSessionsPage(ctx, as, req)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, s := range p.Items {
				got = append(got, s.Key.App+"/"+s.Key.User+"/"+s.Key.Session)
			}
			if p.Next == "" {
				return got, pages
			}
			req.Cursor = p.Next
		}
	}
	for limit := 1; limit <= 6; limit++ {
		got, pages := read(store.AgentSessionsPageRequest{Limit: limit})
		if !slices.Equal(got, all) {
			t.Fatalf("limit %d: %q, want %q", limit, got, all)
		}
		if want := (len(all) + limit - 1) / limit; pages != want && pages != want+1 {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	if got, _ := read(store.AgentSessionsPageRequest{App: "b", Limit: 1}); !slices.Equal(got, all[2:4]) {
		t.Errorf("app b: %q", got)
	}
	if got, _ := read(store.AgentSessionsPageRequest{User: "u2", Limit: 1}); !slices.Equal(got, []string{all[1], all[4]}) {
		t.Errorf("user u2: %q", got)
	}
	// The first three were last updated before the fourth was created.
	if got, _ := read(store.AgentSessionsPageRequest{UpdatedBefore: time.Date(2026, 1, 2, 3, 7, 5, 0, time.UTC), Limit: 2}); !slices.Equal(got, all[:3]) {
		t.Errorf("updated before the fourth: %q", got)
	}

	first, err := store.ListAgentSessionsPage(ctx, as, store.AgentSessionsPageRequest{Limit: 3})
	if err != nil || first.Next == "" {
		t.Fatalf("first page: %v %v", first, err)
	}
	for _, bad := range []store.AgentSessionsPageRequest{
		{App: "c", Cursor: first.Next},
		{Cursor: "nope"},
		{Cursor: `{"app":""}`},
		{Cursor: `{"app":"a","after":"x"}`},
		{Limit: store.MaxPageSize + 1},
		{App: "bad\x00app"},
	} {
		if _, err := store.ListAgentSessionsPage(ctx, as, bad); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%+v: %v, want ErrInvalidInput", bad, err)
		}
		if _, err := bad.Normalize(); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Normalize %+v: %v, want ErrInvalidInput", bad, err)
		}
	}
	// Application b is gone: a cursor within it continues with c.
	for _, s := range []string{"s1", "s2"} {
		if err := as.DeleteSession(ctx, store.SessionKey{App: "b", User: "u1", Session: s}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := read(store.AgentSessionsPageRequest{Cursor: first.Next, Limit: 5})
	if !slices.Equal(got, all[4:]) {
		t.Errorf("after the gone application: %q, want %q", got, all[4:])
	}
}

// TestListRuntimeSessionsPage: pages of runtime sessions read every
// session once, in id order, whatever the page size, with or without an
// owner (whose pages are filled by reading on); a bad owner or limit is
// refused.
func TestListRuntimeSessionsPage(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt := st.Runtime()
	var all, mine []string
	for i := range 7 {
		id := fmt.Sprintf("r%d", i)
		owner := ""
		if i%3 == 0 {
			owner = "me"
			mine = append(mine, id)
		}
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat, OwnerID: owner}); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	read := func(req store.RuntimeSessionsPageRequest) []string {
		t.Helper()
		var got []string
		for {
			p, err := store.ListRuntimeSessionsPage(ctx, rt, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Items) > req.Limit {
				t.Fatalf("%d items in a page of %d", len(p.Items), req.Limit)
			}
			for _, s := range p.Items {
				got = append(got, s.ID)
			}
			if p.Next == "" {
				return got
			}
			req.After = p.Next
		}
	}
	for limit := 1; limit <= 8; limit++ {
		if got := read(store.RuntimeSessionsPageRequest{Limit: limit}); !slices.Equal(got, all) {
			t.Errorf("limit %d: %q, want %q", limit, got, all)
		}
		if got := read(store.RuntimeSessionsPageRequest{Owner: "me", Limit: limit}); !slices.Equal(got, mine) {
			t.Errorf("owner me, limit %d: %q, want %q", limit, got, mine)
		}
	}
	last, err := store.ListRuntimeSessionsPage(ctx, rt, store.RuntimeSessionsPageRequest{Limit: 7})
	if err != nil || len(last.Items) != 7 || last.Next != "" {
		t.Errorf("one page of all: %d items, next %q, %v", len(last.Items), last.Next, err)
	}
	for _, bad := range []store.RuntimeSessionsPageRequest{{Owner: "bad\x00"}, {Limit: -1}, {Limit: store.MaxPageSize + 1}, {After: "\x01"}} {
		if _, err := store.ListRuntimeSessionsPage(ctx, rt, bad); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%+v: %v, want ErrInvalidInput", bad, err)
		}
	}
}

// TestAllUploads: every upload entry of the session, and only its.
func TestAllUploads(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rt := st.Runtime()
	for _, id := range []string{"r1", "r2"} {
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"u1", "u2", "u3"}
	for _, ref := range want {
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "r1", RefID: ref, WorkspacePath: "/w/" + ref, Content: []byte(ref)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "r2", RefID: "other", WorkspacePath: "/w/x", Content: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for u, err := range store.AllUploads(ctx, rt, "r1") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u.RefID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("uploads of r1: %q, want %q", got, want)
	}
	var errs []error
	for _, err := range store.AllUploads(ctx, rt, "") {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], store.ErrInvalidInput) {
		t.Errorf("no session id: %v, want one ErrInvalidInput", errs)
	}
}
