package store

import (
	"context"
	"iter"
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
