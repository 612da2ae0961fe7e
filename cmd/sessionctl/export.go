package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/agentstore/sessionstore/store"
)

// exportFormat names sessionctl's export document; exportVersion is its
// version. Version 2 added the agent_sessions section, version 3 the
// audit section; a reader takes every version up to its own and refuses
// newer ones.
const (
	exportFormat  = "sessionctl-export"
	exportVersion = 3
)

// exportDoc is an export file: every facet of the exported sessions, one
// section per facet of the registry (see facetOps.section).
type exportDoc struct {
	Format        string       `json:"format"`
	Version       int          `json:"version"`
	ExportedAt    string       `json:"exported_at"`
	Governed      []govView    `json:"governed_sessions"`
	Runtime       []rtExport   `json:"runtime_sessions"`
	Conversations []convExport `json:"conversations"`
	// AgentSessions is nil in version-1 documents.
	AgentSessions *agentExport `json:"agent_sessions,omitempty"`
	// Spend is the governed sessions' spend limits and reservations, and
	// their agents' limits (nil before version 3; govexport.go).
	Spend *store.SpendRecords `json:"spend,omitempty"`
	// Audit is nil before version 3 (audit.go).
	Audit *auditExport `json:"audit,omitempty"`
}

var exportSpec = spec{
	name: "export",
	args: "[ID...]",
	about: `Exports sessions as one JSON document (format "sessionctl-export", version 3):
every facet of the given ids, or everything. Governed sessions keep their
counters, rate window, status and times, with their spend limits and
reservations and their agents' limits (the "spend" section); runtime sessions come with their
overrides and uploads (content in base64); conversations with their
messages, cost records, artifacts, trace events, run records and
verification reports (never an LLM API key: the store does not keep one);
agent sessions with their event logs and session state, and the app and
user state they share once per application and per user (event data and
state values are JSON text in strings, so that they come back byte for
byte); the audit trail as whole hash chains with their heads (with ids,
the chains of the agents of the selected governed sessions). An ID
selects the governed session, runtime session and
conversation of that id and the agent sessions of that session id in
any application and user. "sessionctl import" reads the file back (and
files of versions 1 and 2). Writes to stdout unless --output is given.`,
	examples: []string{
		"sessionctl export > all.json",
		"sessionctl export task-7 task-8 --output two.json",
	},
}

// exportRun is one export in progress: what the facets' export functions
// read and fill in.
type exportRun struct {
	g   *globals
	st  cliStore
	ids []string // nil: everything
	// found marks the ids that some facet had.
	found  map[string]bool
	doc    *exportDoc
	counts facetCounts
}

// wants reports whether id is selected.
func (x *exportRun) wants(id string) bool {
	return x.ids == nil || slices.Contains(x.ids, id)
}

func runExport(ctx context.Context, g *globals, args []string) int {
	sp := exportSpec
	fs := g.newFlags(sp)
	output := fs.String("output", "", "write to `FILE` instead of stdout (must not exist)")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	for _, id := range pos {
		if err := store.ValidateID("id", id); err != nil {
			return g.usageErr(sp.name, "%v", err)
		}
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()

	all, err := registeredFacets()
	if err != nil {
		return g.fail(sp.name, err)
	}
	doc := exportDoc{Format: exportFormat, Version: exportVersion, ExportedAt: jsonTime(g.clock())}
	x := &exportRun{g: g, st: st, found: map[string]bool{}, doc: &doc}
	if len(pos) > 0 {
		x.ids = pos
	}
	for _, f := range all {
		if err := f.ops.export(ctx, x); err != nil {
			return g.fail(sp.name, fmt.Errorf("%s: %w", f.Title, err))
		}
	}
	for _, id := range pos {
		if !x.found[id] {
			return g.fail(sp.name, fmt.Errorf("session %s: %w", id, store.ErrNotFound))
		}
	}

	var w io.Writer = g.stdout
	if *output != "" {
		f, err := os.OpenFile(*output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return g.fail(sp.name, err)
		}
		w = f
		defer f.Close()
	}
	if err := writeJSON(w, doc); err != nil {
		return g.fail(sp.name, err)
	}
	if f, ok := w.(*os.File); ok && *output != "" {
		if err := f.Sync(); err != nil {
			return g.fail(sp.name, err)
		}
		fmt.Fprintf(g.stderr, "exported %s to %s\n", countsText(x.counts), *output)
	}
	return exitOK
}
