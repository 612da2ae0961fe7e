package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var showSpec = spec{
	name: "show",
	args: "ID",
	about: `Shows every facet the store holds for one session id: the governed
session's counters and limits.`,
	examples: []string{
		"sessionctl show 3f2a9c1e-...",
		"sessionctl show task-7 --json | jq .governed.calls_made",
	},
}

// showJSON is the JSON document of show: one member per facet, null when
// the session has no such facet.
type showJSON struct {
	ID       string   `json:"id"`
	Governed *govView `json:"governed"`
}

func runShow(ctx context.Context, g *globals, args []string) int {
	sp := showSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 1, 1); bad {
		return code
	}
	id := pos[0]
	if err := store.ValidateID("id", id); err != nil {
		return g.usageErr(sp.name, "%v", err)
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()

	doc, gov, err := loadFacets(ctx, st, id)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	w := g.stdout
	fmt.Fprintf(w, "session %s\n", id)
	if gov != nil {
		fmt.Fprintln(w, "\ngoverned:")
		if err := govDetails(w, *gov); err != nil {
			return g.fail(sp.name, err)
		}
	}
	return exitOK
}

// loadFacets reads every facet of id; a session with none of them is
// store.ErrNotFound.
func loadFacets(ctx context.Context, st *sqlstore.Store, id string) (showJSON, *store.Session, error) {
	doc := showJSON{ID: id}
	var gov *store.Session
	s, err := st.Governance().Get(ctx, id)
	switch {
	case err == nil:
		gov = &s
		v := newGovView(s)
		doc.Governed = &v
	case !errors.Is(err, store.ErrNotFound):
		return doc, nil, err
	}
	if doc.Governed == nil {
		return doc, nil, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return doc, gov, nil
}
