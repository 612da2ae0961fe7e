package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// testTenantSearch: the default tenant and tenants A and B hold
// conversations and agent sessions with the same words (and the same
// agent-session keys); a tenant's search and history find its own items
// only, by every kind of query (indexed terms, short terms, a scan, by
// facet, by session), and the store's own search finds the default
// tenant's only.
func testTenantSearch(t *testing.T, e *env) {
	key := store.SessionKey{App: "search-app", User: "search-user", Session: "search-session"}
	type side struct {
		name     string
		c        store.Conversations
		as       store.AgentSessions
		search   func(store.SearchQuery) (store.SearchResult, error)
		history  func(store.HistoryRequest) (store.Page[store.HistoryItem], error)
		convID   string
		eventsOf string
	}
	sides := []side{{name: "default", c: e.conv(), as: e.as(),
		search: func(q store.SearchQuery) (store.SearchResult, error) { return e.st.(store.Searcher).Search(e.ctx, q) },
		history: func(r store.HistoryRequest) (store.Page[store.HistoryItem], error) {
			return e.st.(store.Searcher).History(e.ctx, r)
		}}}
	for _, name := range []string{"search-a", "search-b"} {
		ts := e.tenant(t, name)
		sides = append(sides, side{name: name, c: ts.Conversations(), as: ts.AgentSessions(),
			search:  func(q store.SearchQuery) (store.SearchResult, error) { return ts.Search(e.ctx, q) },
			history: func(r store.HistoryRequest) (store.Page[store.HistoryItem], error) { return ts.History(e.ctx, r) }})
	}
	for i := range sides {
		sd := &sides[i]
		sd.convID = "search-conv-" + sd.name
		conv := store.NewConversation(sd.convID)
		conv.Messages = []store.Message{store.UserMessage("the haystack holds a needle of " + sd.name)}
		if _, err := sd.c.Save(e.ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := sd.c.AppendTraces(e.ctx, sd.convID, seedTrace("needle-tool-"+sd.name, true, 0, 1, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := sd.as.CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
		ev := store.AgentEvent{ID: "e1", Data: raw(map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": "a needle event of " + sd.name}}}})}
		if _, err := sd.as.AppendEvent(e.ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		for _, sd := range sides {
			for _, q := range []store.SearchQuery{
				{Query: "needle"},
				{Query: "needle", Facet: "conversations"},
				{Query: "needle", Facet: "agent_sessions", IncludeEvents: true},
				{Query: "needle", Session: sd.convID},
				{Query: "needle", Session: key.Session},
				{Query: "of"}, // a short term: a scan of the newest documents
				{Query: "needle", App: key.App, User: key.User},
			} {
				res, err := sd.search(q)
				if err != nil {
					t.Fatalf("%s, %s: Search(%+v): %v", when, sd.name, q, err)
				}
				if len(res.Hits) == 0 {
					t.Errorf("%s, %s: Search(%+v) finds nothing of its own", when, sd.name, q)
				}
				j, _ := json.Marshal(res)
				for _, other := range sides {
					if other.name != sd.name && strings.Contains(string(j), "of "+other.name) || other.name != sd.name && strings.Contains(string(j), other.convID) {
						t.Errorf("%s, %s: Search(%+v) finds items of %s: %s", when, sd.name, q, other.name, j)
					}
				}
			}
			h, err := sd.history(store.HistoryRequest{App: key.App, User: key.User})
			if err != nil || len(h.Items) != 1 || !strings.Contains(string(h.Items[0].Event.Data), "of "+sd.name) {
				t.Errorf("%s, %s: History = %s, %v; want its one event", when, sd.name, fmt.Sprint(h.Items), err)
			}
		}
	}
	check("as written")
	// A store-wide reindex rewrites every tenant's documents outside any
	// tenant's transaction: each must stay its tenant's (on PostgreSQL the
	// index triggers once filed them under the default tenant).
	if _, err := e.st.(store.Searcher).Reindex(e.ctx, store.ReindexRequest{}); err != nil {
		t.Fatal(err)
	}
	check("after a store-wide reindex")
}
