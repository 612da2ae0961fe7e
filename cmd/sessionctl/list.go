package main

import (
	"context"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// pageJSON is the JSON document of list: a page of views of one facet's
// sessions and the cursor of the next page.
type pageJSON[V any] struct {
	Items []V    `json:"items"`
	Next  string `json:"next"`
}

// The JSON documents of list for governed sessions, conversations and
// runtime sessions.
type (
	listJSON     = pageJSON[archive.GovernedSession]
	convListJSON = pageJSON[view.Conversation]
	rtListJSON   = pageJSON[view.RuntimeSession]
)

// readPages reads a listing from cursor after on: one page, or every page
// with all. It returns the items and the cursor of the page that follows
// ("" at the end).
func readPages[T any](all bool, after string, list func(after string) (store.Page[T], error)) ([]T, string, error) {
	var items []T
	for {
		page, err := list(after)
		if err != nil {
			return nil, "", err
		}
		items = append(items, page.Items...)
		if after = page.Next; !all || after == "" {
			return items, after, nil
		}
	}
}

// views returns f of each item ([] for none, never null in JSON).
func views[T, V any](items []T, f func(T) V) []V {
	out := make([]V, len(items))
	for i, it := range items {
		out[i] = f(it)
	}
	return out
}

func runList(ctx context.Context, g *globals, args []string) error {
	sp := specs.List
	fs := g.newFlags(sp)
	facet := fs.String("facet", "", "`FACET` to list: governed (default), runtime or conversations")
	owner := fs.String("owner", "", "only runtime sessions owned by `ID`")
	agent := fs.String("agent", "", "only governed sessions of agent `ID`")
	parent := fs.String("parent", "", "only conversations whose parent is `ID`")
	status := fs.String("status", "", "only governed sessions with `STATUS`: active, closed or expired")
	limit := fs.Int("limit", 50, "at most `N` sessions per page (1 to 1000)")
	after := fs.String("after", "", "start after session `ID` (the cursor of the previous page)")
	all := fs.Bool("all", false, "list every page")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *facet == "" {
		switch {
		case *parent != "" && *owner != "":
			return g.usageErr(sp.Name, "--parent (conversations) and --owner (runtime sessions) do not go together")
		case *parent != "":
			*facet = specs.FacetConversations
		case *owner != "":
			*facet = specs.FacetRuntime
		default:
			*facet = specs.FacetGoverned
		}
	}
	switch *facet {
	case specs.FacetGoverned, specs.FacetRuntime, specs.FacetConversations:
	default:
		return g.usageErr(sp.Name, "--facet must be governed, runtime or conversations, not %q", *facet)
	}
	if *facet != specs.FacetGoverned && (*agent != "" || *status != "") {
		return g.usageErr(sp.Name, "--agent and --status apply to governed sessions, not %s", *facet)
	}
	if *facet != specs.FacetConversations && *parent != "" {
		return g.usageErr(sp.Name, "--parent applies to conversations, not %s", *facet)
	}
	if *facet != specs.FacetRuntime && *owner != "" {
		return g.usageErr(sp.Name, "--owner applies to runtime sessions, not %s", *facet)
	}
	if *status != "" && !store.Status(*status).Valid() {
		return g.usageErr(sp.Name, "--status must be active, closed or expired, not %q", *status)
	}
	if *limit < 1 || *limit > store.MaxPageSize {
		return g.usageErr(sp.Name, "--limit must be between 1 and %d", store.MaxPageSize)
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		switch *facet {
		case specs.FacetConversations:
			return listConversations(ctx, g, st, store.ConversationFilter{ParentID: *parent, After: *after, Limit: *limit}, *all, *asJSON)
		case specs.FacetRuntime:
			if *owner != "" {
				if err := store.ValidateID("owner", *owner); err != nil {
					return g.usageErr(sp.Name, "%v", err)
				}
			}
			return listRuntime(ctx, g, st, *owner, *after, *limit, *all, *asJSON)
		}

		f := store.ListFilter{AgentID: *agent, Status: store.Status(*status), After: *after, Limit: *limit}
		items, next, err := readPages(*all, f.After, func(after string) (store.Page[store.Session], error) {
			f.After = after
			return st.Governance().List(ctx, f)
		})
		if err != nil {
			return err
		}

		return g.result(sp.Name, render.PrintListing(g.stdout, g.stderr, *asJSON, render.Listing[store.Session]{Doc: listJSON{Items: views(items, archive.NewGovernedSession), Next: next},
			Items: items, None: "no governed sessions", Header: render.GovHeader, Row: render.GovRow, More: "more sessions follow", Next: next}))
	}))
}

func listConversations(ctx context.Context, g *globals, st cliStore, f store.ConversationFilter, all, asJSON bool) error {
	items, next, err := readPages(all, f.After, func(after string) (store.Page[store.ConversationSummary], error) {
		f.After = after
		return st.Conversations().List(ctx, f)
	})
	if err != nil {
		return g.fail("list", err)
	}
	return g.result("list", render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.ConversationSummary]{Doc: convListJSON{Items: views(items, view.NewConversation), Next: next},
		Items: items, None: "no conversations", Header: render.ConvHeader, Row: render.ConvRow, More: "more conversations follow", Next: next}))
}

// listRuntime lists the runtime sessions of owner (all when empty), one
// page (or every page with all).
func listRuntime(ctx context.Context, g *globals, st cliStore, owner, after string, limit int, all, asJSON bool) error {
	items, next, err := readPages(all, after, func(after string) (store.Page[store.RuntimeSession], error) {
		return store.ListRuntimeSessionsPage(ctx, st.Runtime(), store.RuntimeSessionsPageRequest{Owner: owner, After: after, Limit: limit})
	})
	if err != nil {
		return g.fail("list", err)
	}
	return g.result("list", render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[store.RuntimeSession]{Doc: rtListJSON{Items: views(items, view.NewRuntimeSession), Next: next},
		Items: items, None: "no runtime sessions", Header: render.RuntimeHeader, Row: render.RuntimeRow, More: "more runtime sessions may follow", Next: next}))
}
