package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt string    `json:"exported_at"`
	Governed   []govView `json:"governed_sessions"`
	// Spend is the governed sessions' spend limits and reservations, and
	// their agents' limits (nil before version 3; govexport.go).
	Spend         *store.SpendRecords `json:"spend,omitempty"`
	Runtime       []rtExport          `json:"runtime_sessions"`
	Conversations []convExport        `json:"conversations"`
	// AgentSessions is nil in version-1 documents.
	AgentSessions *agentExport `json:"agent_sessions,omitempty"`
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
files of versions 1 and 2). Writes to stdout unless --output is given; --output FILE
is written to a temporary file beside it and put in place once complete.
The document is written one item at a time, so export's memory does not
grow with the database. When stderr is a terminal (and the document does
not go to a terminal), a status line shows the section being written and
the items and bytes written so far.`,
	examples: []string{
		"sessionctl export > all.json",
		"sessionctl export task-7 task-8 --output two.json",
	},
}

// exportRun is one export in progress: what the facets' export functions
// read and write to.
type exportRun struct {
	g   *globals
	st  cliStore
	ids []string // nil: everything
	out *jsonOut
	// found marks the ids that some facet had.
	found  map[string]bool
	counts facetCounts
	// p is the status line (nil: none), section the title of the facet
	// being written, done its counter in counts, and written the bytes of
	// the document so far.
	p       *progress
	section string
	done    *int64
	written *countingWriter
	// text is status, as a value: the facets' export functions, which
	// the maintenance table holds, report through tick, and a direct
	// reference from tick to status (and so to countsText, which reads
	// that table) would be an initialization cycle.
	text func() string
}

// tick reports one more item written on the status line.
func (x *exportRun) tick() {
	if x.p != nil {
		x.p.update(x.text)
	}
}

// status is the status line's text: the section being written, its items
// and the bytes of the document written so far.
func (x *exportRun) status() string {
	n := x.written.n + int64(x.out.w.Buffered()) // the document so far
	if x.done == nil {
		return fmt.Sprintf("exporting %s: %s written", x.section, humanBytes(n))
	}
	return fmt.Sprintf("exporting %s: %d done, %s written", x.section, *x.done, humanBytes(n))
}

// wants reports whether id is selected.
func (x *exportRun) wants(id string) bool {
	return x.ids == nil || slices.Contains(x.ids, id)
}

func runExport(ctx context.Context, g *globals, args []string) error {
	sp := exportSpec
	fs := g.newFlags(sp)
	output := fs.String("output", "", "write to `FILE` instead of stdout (must not exist)")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	for _, id := range pos {
		if err := store.ValidateID("id", id); err != nil {
			return g.usageErr(sp.name, "%v", err)
		}
	}
	if isSet(fs, "output") && *output == "" {
		return g.usageErr(sp.name, "--output must not be empty")
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
	x := &exportRun{g: g, st: st, found: map[string]bool{}}
	// The line would tangle with a document written to a terminal.
	x.p = g.startProgress(*output != "" || !g.stdoutIsTerminal())
	x.text = x.status
	if len(pos) > 0 {
		x.p.show("exporting: checking the ids")
		x.ids = pos
		// Every id must name something before anything is written.
		if err := x.checkIDs(ctx); err != nil {
			return g.fail(sp.name, err)
		}
	}
	if *output == "" {
		if err := x.write(ctx, all, rawWriter(g.stdout)); err != nil {
			return g.fail(sp.name, err)
		}
		x.p.clear()
		return nil
	}
	if err := x.writeFile(ctx, all, *output); err != nil {
		return g.fail(sp.name, err)
	}
	x.p.clear()
	fmt.Fprintf(g.stderr, "exported %s to %s\n", countsText(x.counts), esc(*output))
	return nil
}

// write streams the export document to w, facet by facet in registry
// order (the order of exportDoc's sections), one item at a time.
func (x *exportRun) write(ctx context.Context, all []registered, w io.Writer) error {
	x.written = &countingWriter{w: w}
	x.out = newJSONOut(x.written)
	x.out.open("", '{')
	x.out.value("format", exportFormat)
	x.out.value("version", exportVersion)
	x.out.value("exported_at", jsonTime(x.g.clock()))
	for _, f := range all {
		x.section, x.done = f.Title, f.ops.count(&x.counts)
		x.p.show("%s", x.status())
		if err := f.ops.export(ctx, x); err != nil {
			return fmt.Errorf("%s: %w", f.Title, err)
		}
		if x.out.err != nil {
			return x.out.err
		}
	}
	x.out.close('}')
	x.section, x.done = "the end of the document", nil
	x.p.show("%s", x.status())
	return x.out.finish()
}

// writeFile writes the export document to a temporary file beside path,
// syncs it and links it into place (failing if path appeared meanwhile),
// then syncs the directory: path never holds a partial document.
func (x *exportRun) writeFile(ctx context.Context, all []registered, path string) (err error) {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists: remove it or choose another name", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".export-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		f.Close()
		os.Remove(tmp)
	}()
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if err := x.write(ctx, all, f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// checkIDs marks the ids some facet has in x.found and fails on the first
// id no facet has.
func (x *exportRun) checkIDs(ctx context.Context) error {
	for _, id := range x.ids {
		if _, err := x.st.Governance().Get(ctx, id); err == nil {
			x.found[id] = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if _, err := x.st.Runtime().Get(ctx, id); err == nil {
			x.found[id] = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ok, err := x.st.Conversations().Exists(ctx, id)
		if err != nil {
			return err
		}
		x.found[id] = x.found[id] || ok
	}
	missing := slices.ContainsFunc(x.ids, func(id string) bool { return !x.found[id] })
	if missing {
		scopes, err := x.g.agentScopes(ctx)
		if err != nil {
			return err
		}
		err = eachAgentSession(ctx, x.st.AgentSessions(), scopes.apps, func(s store.AgentSession) error {
			if slices.Contains(x.ids, s.Key.Session) {
				x.found[s.Key.Session] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, id := range x.ids {
		if !x.found[id] {
			return fmt.Errorf("session %s: %w", id, store.ErrNotFound)
		}
	}
	return nil
}
