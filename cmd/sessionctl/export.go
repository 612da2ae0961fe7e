package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/statusline"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/termout"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

var exportSpec = spec{
	Name: "export",
	Args: "[ID...]",
	About: fmt.Sprintf(`Exports sessions as one JSON document (format %q, version
%d): every facet of the given ids, or everything. Governed sessions keep their
counters, rate window, status and times, with their spend limits and
reservations and their agents' limits (the "spend" section); runtime
sessions come with their overrides and uploads (content in base64);
conversations with their messages, cost records, artifacts, trace events,
run records and verification reports (never an LLM API key: the store does
not keep one); agent sessions with their event logs and session state, and
the app and user state they share once per application and per user (event
data and state values are JSON text in strings, so that they come back byte
for byte); the audit trail as whole hash chains with their heads (with ids,
the chains of the agents of the selected governed sessions). An ID selects
the governed session, runtime session and conversation of that id and the
agent sessions of that session id in any application and user.
"sessionctl import" reads the file back (and files of every earlier
version); a Go program does both with package archive.

Everything is read from one snapshot of the database, so a file taken while
the store is in use is the state of one instant and always imports. Writes
to stdout unless --output is given; --output FILE is written to a temporary
file beside it (mode 0600) and put in place once complete. The document is
written one item at a time, so export's memory does not grow with the
database. When stderr is a terminal (and the document does not go to a
terminal), a status line shows the section being written and the items and
bytes written so far.

The document holds the default tenant's rows and then every other
tenant's, each restored to its tenant by import (tenants since format
version 6).
--tenant T exports tenant T's rows alone (governed sessions with their
spend, agent sessions and audit chains: the facets scoped by tenants so
far), which import restores to T, or to the tenant its own --tenant names;
--default-tenant-only exports the default tenant's rows alone.`, archive.Format, archive.Version),
	Examples: []string{
		"sessionctl export > all.json",
		"sessionctl export task-7 task-8 --output two.json",
	},
}

func runExport(ctx context.Context, g *globals, args []string) error {
	sp := exportSpec
	fs := g.newFlags(sp)
	output := fs.String("output", "", "write to `FILE` instead of stdout (must not exist)")
	defaultOnly := fs.Bool("default-tenant-only", false, "export the default tenant's rows alone (other tenants' are left out)")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	for _, id := range pos {
		if err := store.ValidateID("id", id); err != nil {
			return g.usageErr(sp.Name, "%v", err)
		}
	}
	if cliflags.IsSet(fs, "output") && *output == "" {
		return g.usageErr(sp.Name, "--output must not be empty")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {

		// The status line would tangle with a document written to a terminal.
		p := g.startProgress(*output != "" || !g.stdoutIsTerminal())
		if len(pos) > 0 {
			p.Show("exporting: checking the ids")
		}
		opts := archive.ExportOptions{IDs: pos, Now: g.clock(), Progress: exportStatus(p), Keys: g.keyRing(), DefaultTenantOnly: *defaultOnly,
			Tenant: g.tenant}
		st = untenanted(st)
		if *output == "" {
			if _, err := archive.Export(ctx, st, termout.Raw(g.stdout), opts); err != nil {
				return err
			}
			p.Clear()
			return nil
		}
		counts, err := archive.ExportFile(ctx, st, *output, opts)
		if err != nil {
			return err
		}
		p.Clear()
		fmt.Fprintf(g.stderr, "exported %s to %s\n", countsText(counts), humanize.Escape(*output))
		return nil
	}))
}

// exportStatus returns the status line's report of an export: the section
// being written, its items and the bytes of the document written so far.
func exportStatus(p *statusline.Line) func(archive.ExportProgress) {
	if p == nil {
		return nil
	}
	return func(x archive.ExportProgress) {
		text := func() string {
			if x.Section == "" {
				return fmt.Sprintf("exporting the end of the document: %s written", humanize.Bytes(x.Bytes))
			}
			return fmt.Sprintf("exporting %s: %d done, %s written", x.Section, x.Done, humanize.Bytes(x.Bytes))
		}
		if x.Done == 0 { // a new section: at once
			p.Show("%s", text())
			return
		}
		p.Update(text)
	}
}
