package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"
)

// AllApps iterates over every application of the agent-session facet
// (ListApps), in byte order, one page at a time. An error ends the
// iteration after it is yielded.
func AllApps(ctx context.Context, as AgentSessions) iter.Seq2[string, error] {
	return pages(func(cursor string) (Page[string], error) {
		return as.ListApps(ctx, ListAppsRequest{Cursor: cursor, Limit: MaxPageSize})
	})
}

// AllUsers iterates over every user of app (ListUsers), in byte order,
// one page at a time. An error ends the iteration after it is yielded.
func AllUsers(ctx context.Context, as AgentSessions, app string) iter.Seq2[string, error] {
	return pages(func(cursor string) (Page[string], error) {
		return as.ListUsers(ctx, ListUsersRequest{App: app, Cursor: cursor, Limit: MaxPageSize})
	})
}

// AllAgentSessions iterates over every session of every application, in
// key order (ListApps, then ListSessions), one page at a time. Listed
// sessions carry their state but no events. An error ends the iteration
// after it is yielded.
func AllAgentSessions(ctx context.Context, as AgentSessions) iter.Seq2[AgentSession, error] {
	return func(yield func(AgentSession, error) bool) {
		for app, err := range AllApps(ctx, as) {
			if err != nil {
				yield(AgentSession{}, err)
				return
			}
			for s, err := range pages(func(cursor string) (Page[AgentSession], error) {
				return as.ListSessions(ctx, ListAgentSessionsRequest{App: app, Cursor: cursor, Limit: MaxPageSize})
			}) {
				if !yield(s, err) || err != nil {
					return
				}
			}
		}
	}
}

// AllGoverned iterates over the governed sessions f selects (f.After and
// f.Limit aside: every page, MaxPageSize at a time), in id order. An
// error ends the iteration after it is yielded.
func AllGoverned(ctx context.Context, g Governance, f ListFilter) iter.Seq2[Session, error] {
	return pages(func(cursor string) (Page[Session], error) {
		f.After, f.Limit = cursor, MaxPageSize
		return g.List(ctx, f)
	})
}

// AllUploads iterates over the upload entries of runtime session id
// (ListUploads), in the order ListUploads pages them, one page at a time.
// An error ends the iteration after it is yielded.
func AllUploads(ctx context.Context, rt Runtime, id string) iter.Seq2[Upload, error] {
	return pages(func(cursor string) (Page[Upload], error) {
		return rt.ListUploads(ctx, ListUploadsRequest{SessionID: id, After: cursor, Limit: MaxPageSize})
	})
}

// pages iterates over the items of a paged listing: list returns the page
// after cursor ("" for the first).
func pages[T any](list func(cursor string) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for {
			page, err := list(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if !yield(item, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			cursor = page.Next
		}
	}
}

// AgentSessionsPageRequest selects one page of agent sessions across
// applications (ListAgentSessionsPage): the listing ListSessions gives
// one application at a time, continued over every application in byte
// order.
type AgentSessionsPageRequest struct {
	// App, when not empty, restricts the listing to one application.
	App string
	// User, when not empty, restricts it to one user of each application.
	User string
	// UpdatedBefore, when not zero, keeps only the sessions last updated
	// before it (idle ones).
	UpdatedBefore time.Time
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// appsCursor is the cursor of ListAgentSessionsPage: the application and
// ListSessions' cursor within it (empty: its first session).
type appsCursor struct {
	App   string `json:"app"`
	After string `json:"after,omitempty"`
}

// Normalize validates r (the ids, the limit, and a cursor that is one of
// this listing, of App when App is set) and applies the default limit.
func (r AgentSessionsPageRequest) Normalize() (AgentSessionsPageRequest, error) {
	_, err := r.normalize()
	if err != nil {
		return r, err
	}
	if r.Limit == 0 {
		r.Limit = DefaultPageSize
	}
	return r, nil
}

// normalize is Normalize that also returns the decoded cursor.
func (r AgentSessionsPageRequest) normalize() (appsCursor, error) {
	var c appsCursor
	for _, f := range []struct{ field, v string }{{"app", r.App}, {"user", r.User}} {
		if f.v != "" {
			if err := ValidateID(f.field, f.v); err != nil {
				return c, err
			}
		}
	}
	if r.Limit < 0 || r.Limit > MaxPageSize {
		return c, Invalid("limit", fmt.Sprintf("must be between 0 and %d", MaxPageSize))
	}
	if r.Cursor == "" {
		return c, nil
	}
	notOurs := Invalid("cursor", "not a cursor of this listing")
	if json.Unmarshal([]byte(r.Cursor), &c) != nil || c.App == "" || (r.App != "" && c.App != r.App) {
		return c, notOurs
	}
	if c.After != "" {
		if _, err := DecodeSessionCursor(c.After); err != nil {
			return c, notOurs
		}
	}
	return c, nil
}

// ListAgentSessionsPage returns one page of the agent sessions req
// selects, in (application, user, session) order, and in Next the cursor
// of the page after it (empty after the last). Listed sessions carry
// their state but no events. A cursor whose application has no sessions
// left continues with the next application.
func ListAgentSessionsPage(ctx context.Context, as AgentSessions, req AgentSessionsPageRequest) (Page[AgentSession], error) {
	cur, err := req.normalize()
	if err != nil {
		return Page[AgentSession]{}, err
	}
	if req.Limit == 0 {
		req.Limit = DefaultPageSize
	}
	apps := []string{req.App}
	if req.App == "" {
		apps = nil
		for app, err := range AllApps(ctx, as) {
			if err != nil {
				return Page[AgentSession]{}, err
			}
			apps = append(apps, app)
		}
	}
	if cur.App != "" {
		i, _ := slices.BinarySearch(apps, cur.App)
		apps = apps[i:]
		if len(apps) == 0 || apps[0] != cur.App {
			cur.After = "" // the cursor's application is gone: continue with the next
		}
	}
	out := Page[AgentSession]{Items: []AgentSession{}}
	cursor := cur.After
	for i := 0; i < len(apps); {
		page, err := as.ListSessions(ctx, ListAgentSessionsRequest{App: apps[i], User: req.User,
			Cursor: cursor, Limit: req.Limit - len(out.Items)})
		if err != nil {
			return Page[AgentSession]{}, err
		}
		for _, s := range page.Items {
			if req.UpdatedBefore.IsZero() || s.UpdatedAt.Before(req.UpdatedBefore) {
				out.Items = append(out.Items, s)
			}
		}
		if cursor = page.Next; cursor == "" {
			i++ // this application is done
		}
		if len(out.Items) >= req.Limit {
			if i < len(apps) {
				b, _ := json.Marshal(appsCursor{App: apps[i], After: cursor}) // two strings always marshal
				out.Next = string(b)
			}
			break
		}
	}
	return out, nil
}

// RuntimeSessionsPageRequest selects one page of runtime sessions
// (ListRuntimeSessionsPage).
type RuntimeSessionsPageRequest struct {
	// Owner, when not empty, keeps only the sessions it owns.
	Owner string
	// After is the Next of the previous page; empty for the first page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// ListRuntimeSessionsPage returns one page of runtime sessions in id
// order, each read whole (Runtime.Get; ListIDs gives only ids), and in
// Next the id to continue after, empty when no id follows. A session
// removed between the listing of its id and its reading is skipped. The
// store has no index by owner: with Owner, the ids are read until the
// page is full, and Next may be set when none of the rest is Owner's.
func ListRuntimeSessionsPage(ctx context.Context, rt Runtime, req RuntimeSessionsPageRequest) (Page[RuntimeSession], error) {
	if req.Owner != "" {
		if err := ValidateID("owner", req.Owner); err != nil {
			return Page[RuntimeSession]{}, err
		}
	}
	if req.Limit < 0 || req.Limit > MaxPageSize {
		return Page[RuntimeSession]{}, Invalid("limit", fmt.Sprintf("must be between 0 and %d", MaxPageSize))
	}
	if req.Limit == 0 {
		req.Limit = DefaultPageSize
	}
	out := Page[RuntimeSession]{Items: []RuntimeSession{}}
	ids := ListIDsRequest{After: req.After, Limit: MaxPageSize}
	for {
		page, err := rt.ListIDs(ctx, ids)
		if err != nil {
			return Page[RuntimeSession]{}, err
		}
		for i, id := range page.Items {
			s, err := rt.Get(ctx, id)
			if errors.Is(err, ErrNotFound) {
				continue // removed since it was listed
			}
			if err != nil {
				return Page[RuntimeSession]{}, err
			}
			if req.Owner != "" && s.OwnerID != req.Owner {
				continue
			}
			out.Items = append(out.Items, s)
			if len(out.Items) == req.Limit {
				if i < len(page.Items)-1 || page.Next != "" {
					out.Next = id
				}
				return out, nil
			}
		}
		if page.Next == "" {
			return out, nil
		}
		ids.After = page.Next
	}
}
