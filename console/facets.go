package console

import (
	"net/http"

	"github.com/agentstore/sessionstore/facet"
)

// The console's pages per facet. Every facet of the registry (facet.All)
// has an entry in facetViews: its routes are registered from there, and
// the navigation lists the facets in the registry's order from there, so
// a page of a facet exists only through this table. A facet added to the
// registry without an entry here fails the console's tests
// (TestEveryFacetHasAPage), and is left out of the navigation until it
// has one.

// pageHandler serves one page; its error is answered by console.fail.
type pageHandler func(http.ResponseWriter, *http.Request) error

// route is one page of a facet: a ServeMux pattern below the prefix
// (without the method) and its handler.
type route struct {
	Pattern string
	Handler pageHandler
}

// facetView is how the console shows one facet.
type facetView struct {
	// Facet is the registry's name of the facet.
	Facet facet.Name
	// Nav is the facet's entry of the navigation: its label, and the key
	// a page's layout.Nav names it by.
	Nav, Label string
	// Home is the facet's first page (the navigation links it), below
	// the prefix.
	Home string
	// Routes are every page of the facet, its home page among them.
	Routes []route
}

// facetViews returns the console's pages of every facet it can show.
func (c *console) facetViews() map[facet.Name]facetView {
	return map[facet.Name]facetView{
		facet.Governance: {Nav: "governed", Label: "Governed", Home: "/governed", Routes: []route{
			{"/governed", c.governedList},
			{"/governed/{id}", c.governedDetail},
			{"/live/governed/{id}", c.liveGoverned},
		}},
		facet.Runtime: {Nav: "runtime", Label: "Runtime", Home: "/runtime", Routes: []route{
			{"/runtime", c.runtimeList},
			{"/runtime/{id}", c.runtimeDetail},
			{"/runtime/{id}/uploads/{ref}", c.uploadDownload},
		}},
		facet.Conversations: {Nav: "conversations", Label: "Conversations", Home: "/conversations", Routes: []route{
			{"/conversations", c.conversationList},
			{"/conversations/{id}", c.conversationDetail},
			{"/conversations/{id}/messages/{seq}", c.messageDetail},
			{"/conversations/{id}/messages.json", c.messagesDownload},
			{"/live/conversations/{id}/messages", c.liveMessages},
		}},
		facet.AgentSessions: {Nav: "agents", Label: "Agent sessions", Home: "/agents", Routes: []route{
			{"/agents", c.agentList},
			{"/agents/session", c.agentDetail},
			{"/live/agents/events", c.liveEvents},
		}},
		facet.Audit: {Nav: "audit", Label: "Audit", Home: "/audit", Routes: []route{
			{"/audit", c.auditPage},
		}},
	}
}

// navItem is one link of the navigation.
type navItem struct {
	Key, Label, URL string
}

// navigation returns the navigation: the overview, then the home page of
// every facet with a view, in the registry's order.
func (c *console) navigation() []navItem {
	views := c.facetViews()
	if c.tenant {
		nav := []navItem{{"overview", "Overview", c.prefix + "/"}}
		for _, name := range tenantFacets {
			v := views[name]
			nav = append(nav, navItem{v.Nav, v.Label, c.prefix + v.Home})
		}
		return nav
	}
	nav := []navItem{{"overview", "Overview", c.prefix + "/"}}
	for _, f := range facet.All() {
		if v, ok := views[f.Name]; ok {
			nav = append(nav, navItem{v.Nav, v.Label, c.prefix + v.Home})
		}
	}
	nav = append(nav, navItem{"retention", "Retention", c.prefix + "/retention"})
	return nav
}
