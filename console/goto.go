package console

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// goPage is /go: what an id names, in every facet.
type goPage struct {
	ID      string  `json:"id"`
	Matches []match `json:"matches"`
	// Partial is true when the agent sessions were not all searched (see
	// goAgentScan).
	Partial bool `json:"partial,omitempty"`
}

type match struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
}

// goAgentScan bounds the (application, user) scopes one go-to searches
// for an agent session id: the agent-session facet keys a session by
// application, user and id, and has no lookup by the id alone.
const goAgentScan = 2000

// goTo finds an id in every facet: one match redirects to it, several are
// listed, none is a 404 page.
func (c *console) goTo(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	p := &goPage{ID: id, Matches: []match{}}
	if id != "" && store.ValidateID("id", id) == nil {
		if err := c.findID(ctx, id, p); err != nil {
			return err
		}
	}
	status := http.StatusOK
	switch {
	case len(p.Matches) == 1 && r.URL.Query().Get("format") != "json":
		http.Redirect(w, r, p.Matches[0].URL, http.StatusSeeOther)
		return nil
	case len(p.Matches) == 0:
		status = http.StatusNotFound
	}
	c.render(w, r, status, "go", "Go to "+echo(id), "", p)
	return nil
}

// findID adds to p every page that id names: a governed session, a
// conversation, a runtime session, an agent application or agent
// sessions of that id (under any application and user), and an agent's
// audit chain.
func (c *console) findID(ctx context.Context, id string, p *goPage) error {
	add := func(kind, url string) { p.Matches = append(p.Matches, match{kind, url}) }
	if _, err := c.st.Governance().Get(ctx, id); err == nil {
		add("governed session", c.link("governed", id))
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if ok, err := c.st.Conversations().Exists(ctx, id); err != nil {
		return err
	} else if ok {
		add("conversation", c.link("conversations", id))
	}
	if _, err := c.st.Runtime().Get(ctx, id); err == nil {
		add("runtime session", c.link("runtime", id))
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	heads, err := c.st.Audit().Heads(ctx)
	if err != nil {
		return err
	}
	for _, h := range heads {
		if h.AgentID == id {
			add("audit chain of the agent", withQuery(c.link("audit"), "agent", id))
			break
		}
	}
	return c.findAgentSessions(ctx, id, p)
}

// findAgentSessions adds the application named id, and every agent
// session with the id under any application and user, searching at most
// goAgentScan scopes.
func (c *console) findAgentSessions(ctx context.Context, id string, p *goPage) error {
	as := c.st.AgentSessions()
	scopes := 0
	for app, err := range store.AllApps(ctx, as) {
		if err != nil {
			return err
		}
		if app == id {
			p.Matches = append(p.Matches, match{"agent application", withQuery(c.link("agents"), "app", app)})
		}
		for user, err := range store.AllUsers(ctx, as, app) {
			if err != nil {
				return err
			}
			if scopes++; scopes > goAgentScan {
				p.Partial = true
				return nil
			}
			key := store.SessionKey{App: app, User: user, Session: id}
			_, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
			switch {
			case err == nil:
				p.Matches = append(p.Matches, match{"agent session of " + app + " / " + user,
					withQuery(c.link("agents", "session"), "app", app, "user", user, "session", id)})
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
	}
	return nil
}
