package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

func runExport(ctx context.Context, g *globals, args []string) error {
	sp := specs.Export
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
