package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// ---- the search page ------------------------------------------------------

// searchPage is /search: the hits of a query (store.Searcher), each with
// its snippet and a link to the hit in its conversation or agent session.
// Text of the store is data: the template escapes every piece of it, and
// matches are marked by splitting the snippet, never by inserting markup
// into it.
type searchPage struct {
	Query  string             `json:"query"`
	Filter searchFilter       `json:"filter"`
	Result store.SearchResult `json:"result"`
	// Searched is false when no query was given (the page shows the form
	// only) or the store has no search index.
	Searched bool               `json:"searched"`
	Hits     []searchHitView    `json:"-"`
	NextURL  string             `json:"-"`
	Kinds    []store.SearchKind `json:"-"`
}

// searchFilter is the page's filter, as given.
type searchFilter struct {
	Kind    string `json:"kind,omitempty"`
	App     string `json:"app,omitempty"`
	User    string `json:"user,omitempty"`
	Session string `json:"session,omitempty"`
	Order   string `json:"order,omitempty"`
}

// searchHitView is a hit as the page shows it.
type searchHitView struct {
	store.SearchHit
	// URL links the hit in its conversation or agent session.
	URL string
	// Pieces are the snippet's text cut at its matches.
	Pieces []store.SnippetPiece
}

func (c *console) searchPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := pageLimit(r, store.DefaultSearchLimit, store.MaxSearchLimit)
	if err != nil {
		return err
	}
	p := &searchPage{Query: q.Get("q"), Kinds: store.SearchKinds(), Result: store.SearchResult{Hits: []store.SearchHit{}}}
	p.Filter = searchFilter{Kind: q.Get("kind"), App: q.Get("app"), User: q.Get("user"), Session: q.Get("session"), Order: q.Get("order")}
	if strings.TrimSpace(p.Query) != "" && c.search != nil {
		sq := store.SearchQuery{Query: p.Query, App: p.Filter.App, User: p.Filter.User, Session: p.Filter.Session,
			Order: store.SearchOrder(p.Filter.Order), Limit: limit, Cursor: q.Get("after")}
		if p.Filter.Kind != "" {
			sq.Kinds = []store.SearchKind{store.SearchKind(p.Filter.Kind)}
		}
		res, err := c.search(r.Context(), sq)
		if err != nil {
			return err
		}
		if res.Hits == nil {
			res.Hits = []store.SearchHit{}
		}
		p.Result, p.Searched = res, true
		for _, h := range res.Hits {
			p.Hits = append(p.Hits, searchHitView{SearchHit: h, URL: c.hitURL(h), Pieces: h.Snippet.Pieces()})
		}
		if res.Next != "" {
			p.NextURL = withQuery(c.link("search"), "q", p.Query, "kind", p.Filter.Kind, "app", p.Filter.App, "user", p.Filter.User,
				"session", p.Filter.Session, "order", p.Filter.Order, "limit", q.Get("limit"), "after", res.Next)
		}
	}
	c.render(w, r, http.StatusOK, "search", "Search", "search", p)
	return nil
}

// hitURL links a hit: a message to its page, an event to its agent
// session (at the event), anything else of a conversation to the
// conversation.
func (c *console) hitURL(h store.SearchHit) string {
	switch h.Kind {
	case store.SearchMessage:
		return c.link("conversations", h.SessionID, "messages", strconv.FormatInt(h.Seq, 10))
	case store.SearchEvent:
		return withQuery(c.link("agents", "session"), "app", h.App, "user", h.User, "session", h.SessionID) + "#e" + strconv.FormatInt(h.Seq, 10)
	}
	return c.link("conversations", h.SessionID)
}
