package sqlcore

import (
	"context"
	"database/sql"

	"github.com/agentstore/sessionstore/store"
)

// The names of the agent-session facet's scopes are listed by skipping
// through the indexes: each statement finds the smallest name after the
// previous one (a MIN over an index range in every table that can hold
// it), so a page of n names costs n lookups whatever the number of
// sessions, events or state keys under each name.
const (
	nextAppSQL = `SELECT min(a) FROM (
		SELECT min(app) AS a FROM agent_sessions WHERE tenant = ?2 AND app > ?1 AND retired = 0
		UNION ALL SELECT min(app) FROM agent_app_state WHERE tenant = ?2 AND app > ?1
		UNION ALL SELECT min(app) FROM agent_user_state WHERE tenant = ?2 AND app > ?1) AS next_app`
	nextUserSQL = `SELECT min(u) FROM (
		SELECT min(user_id) AS u FROM agent_sessions WHERE tenant = ?3 AND app = ?1 AND user_id > ?2 AND retired = 0
		UNION ALL SELECT min(user_id) FROM agent_user_state WHERE tenant = ?3 AND app = ?1 AND user_id > ?2) AS next_user`
)

// ListApps returns a page of application names (see
// store.AgentSessions.ListApps).
func (a *AgentSessions) ListApps(ctx context.Context, req store.ListAppsRequest) (store.Page[string], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[string]{}, err
	}
	return a.skipList(ctx, req.Cursor, req.Limit, nextAppSQL, func(after string) []any { return []any{after, a.s.tenant} })
}

// ListUsers returns a page of one application's user ids (see
// store.AgentSessions.ListUsers).
func (a *AgentSessions) ListUsers(ctx context.Context, req store.ListUsersRequest) (store.Page[string], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[string]{}, err
	}
	return a.skipList(ctx, req.Cursor, req.Limit, nextUserSQL, func(after string) []any { return []any{req.App, after, a.s.tenant} })
}

// skipList reads up to limit names after cursor, one next-name statement
// each, in one read transaction (one snapshot).
func (a *AgentSessions) skipList(ctx context.Context, cursor string, limit int, next string, args func(after string) []any) (store.Page[string], error) {
	page := store.Page[string]{Items: []string{}}
	err := a.s.readTx(ctx, func(r Tx) error {
		page.Items, page.Next = page.Items[:0], ""
		after := cursor
		for len(page.Items) <= limit {
			var name sql.NullString
			if err := r.Scan(next, args(after), &name); err != nil {
				return err
			}
			if !name.Valid {
				return nil
			}
			if len(page.Items) == limit {
				page.Next = after
				return nil
			}
			page.Items = append(page.Items, name.String)
			after = name.String
		}
		return nil
	})
	if err != nil {
		return store.Page[string]{}, err
	}
	return page, nil
}
