package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

var listSpec = spec{
	name: "list",
	about: `Lists governed sessions ordered by id, one page at a time. The status filter
uses the effective status: an active session past its time limit lists as
expired. When more sessions follow, the cursor for the next page is printed
(on stderr for tables, as "next" in JSON); pass it to --after, or use --all.`,
	examples: []string{
		"sessionctl list --agent agent-42 --status active",
		"sessionctl list --limit 100 --after 3f2a... --json",
	},
}

// listJSON is the JSON document of list.
type listJSON struct {
	Items []govView `json:"items"`
	Next  string    `json:"next"`
}

func runList(ctx context.Context, g *globals, args []string) int {
	sp := listSpec
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "only sessions of agent `ID`")
	status := fs.String("status", "", "only sessions with `STATUS`: active, closed or expired")
	limit := fs.Int("limit", 50, "at most `N` sessions per page (1 to 1000)")
	after := fs.String("after", "", "start after session `ID` (the cursor of the previous page)")
	all := fs.Bool("all", false, "list every page")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	if *status != "" && !store.Status(*status).Valid() {
		return g.usageErr(sp.name, "--status must be active, closed or expired, not %q", *status)
	}
	if *limit < 1 || *limit > store.MaxPageSize {
		return g.usageErr(sp.name, "--limit must be between 1 and %d", store.MaxPageSize)
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()

	f := store.ListFilter{AgentID: *agent, Status: store.Status(*status), After: *after, Limit: *limit}
	var items []store.Session
	next := ""
	for {
		page, err := st.Governance().List(ctx, f)
		if err != nil {
			return g.fail(sp.name, err)
		}
		items = append(items, page.Items...)
		next = page.Next
		if !*all || next == "" {
			break
		}
		f.After = next
	}

	if *asJSON {
		doc := listJSON{Items: make([]govView, 0, len(items)), Next: next}
		for _, s := range items {
			doc.Items = append(doc.Items, newGovView(s))
		}
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	if len(items) == 0 {
		fmt.Fprintln(g.stdout, "no governed sessions")
		return exitOK
	}
	if err := govTable(g.stdout, items); err != nil {
		return g.fail(sp.name, err)
	}
	if next != "" {
		fmt.Fprintf(g.stderr, "more sessions follow: add --after %s for the next page\n", next)
	}
	return exitOK
}
