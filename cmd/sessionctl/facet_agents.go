package main

// Agent sessions (store.AgentSessions) in stats, and what gc does with
// them (it reports idle sessions and keeps them).

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/store"
)

var agentOps = facetOps{
	one: "agent session", many: "agent sessions",
	count:     func(c *facetCounts) *int64 { return &c.AgentSessions },
	stats:     statsAgentSessions,
	statsRows: statsAgentSessionsRows,
	gc:        gcAgentSessions,
	gcLines:   gcAgentSessionsLines,
}

// agentCounts summarizes the agent sessions and their state.
type agentCounts struct {
	Total            int64 `json:"total"`
	Apps             int64 `json:"apps"`
	Users            int64 `json:"users"`
	Events           int64 `json:"events"`
	AppStateKeys     int64 `json:"app_state_keys"`
	UserStateKeys    int64 `json:"user_state_keys"`
	SessionStateKeys int64 `json:"session_state_keys"`
}

func statsAgentSessions(c store.Counts, doc *statsJSON) {
	a := c.AgentSessions
	doc.AgentSessions = agentCounts{Total: a.Total, Apps: a.Apps, Users: a.Users, Events: a.Events,
		AppStateKeys: a.AppStateKeys, UserStateKeys: a.UserStateKeys, SessionStateKeys: a.SessionStateKeys}
}

func statsAgentSessionsRows(doc *statsJSON) [][2]string {
	c := doc.AgentSessions
	return [][2]string{
		{"agent sessions", fmt.Sprintf("%d in %d %s, %d %s; %d %s", c.Total, c.Apps, clitext.Plural(int(c.Apps), "app", "apps"),
			c.Users, clitext.Plural(int(c.Users), "user", "users"), c.Events, clitext.Plural(int(c.Events), "event", "events"))},
		{"agent state", fmt.Sprintf("%d app, %d user, %d session %s", c.AppStateKeys, c.UserStateKeys, c.SessionStateKeys,
			clitext.Plural(int(c.SessionStateKeys), "key", "keys"))},
	}
}

// gcAgentSessions counts the agent sessions not updated since the cutoff.
// gc keeps them: the store has no delete-by-age for agent sessions, and
// deleting what a listing found would not be one decision (an append
// between the listing and the delete would be lost with the session).
func gcAgentSessions(ctx context.Context, g *globals, st cliStore, req gcRequest, doc *gcJSON) error {
	if req.cutoff.IsZero() {
		return nil
	}
	var seen int64
	p := g.status
	p.Show("gc: counting idle agent sessions")
	for s, err := range store.AllAgentSessions(ctx, st.AgentSessions()) {
		if err != nil {
			return err
		}
		seen++
		if s.UpdatedAt.Before(req.cutoff) {
			doc.IdleAgentSessions++
		}
		p.Update(func() string {
			return fmt.Sprintf("gc: counting idle agent sessions: %d read, %d idle", seen, doc.IdleAgentSessions)
		})
	}
	return nil
}

func gcAgentSessionsLines(req gcRequest, doc *gcJSON) []string {
	if req.cutoff.IsZero() || doc.IdleAgentSessions == 0 {
		return nil
	}
	n := doc.IdleAgentSessions
	return []string{fmt.Sprintf("kept %d agent %s not updated since %s (gc does not delete agent sessions)",
		n, clitext.Plural(int(n), "session", "sessions"), tablefmt.Time(req.cutoff))}
}
