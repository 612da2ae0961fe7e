package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/humanize"
)

// importJSON is the JSON document of import.
type importJSON struct {
	Files int `json:"files"`
	facetCounts
	Skipped int64 `json:"skipped"`
	DryRun  bool  `json:"dry_run"`
}

func runImport(ctx context.Context, g *globals, args []string) error {
	sp := specs.Import
	fs := g.newFlags(sp)
	skip := fs.Bool("skip-existing", false, "leave sessions whose id exists untouched instead of failing")
	dryRun := fs.Bool("dry-run", false, "parse and validate every file, write nothing")
	asJSON := fs.Bool("json", false, "print the summary as JSON")
	pos, err := g.parseArgs(fs, sp, args, 1, -1)
	if err != nil {
		return err
	}
	// A dry run checks the files against the store when there is one
	// (conflicts included), and creates nothing; an import creates the
	// store, and removes it again when nothing could be imported.
	var st cliStore
	undo := func() {}
	if *dryRun {
		var none *errNoStore
		var nofile *errNoDatabase
		switch err := g.mustExist(ctx); {
		case err == nil:
			if st, err = g.openExisting(ctx); err != nil {
				return g.fail(sp.Name, err)
			}
			defer st.Close()
			st = untenanted(st)
		case errors.As(err, &none) || errors.As(err, &nofile):
			// No store: the files alone are checked.
		default:
			return g.fail(sp.Name, err)
		}
	} else {
		if st, undo, err = g.openOrCreateUndo(ctx); err != nil {
			return g.fail(sp.Name, err)
		}
		defer st.Close()
		st = untenanted(st) // the import names the tenant itself (--tenant)
	}
	ring, err := g.openKeyRing(!*dryRun)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	p := g.startProgress(true)
	doc := importJSON{DryRun: *dryRun}
	for i, name := range pos {
		label := humanize.Escape(filepath.Base(name)) // the line is short; the user gave the path
		if name == "-" {
			label = "stdin"
		}
		if len(pos) > 1 {
			label = fmt.Sprintf("%d/%d %s", i+1, len(pos), label)
		}
		if *dryRun {
			label = "checking " + label
		} else {
			label = "importing " + label
		}
		// Throttled like every update: many small files must not redraw
		// the line for each.
		p.Update(func() string { return label })
		opts := archive.ImportOptions{SkipExisting: *skip, DryRun: *dryRun, Progress: importStatus(p, label), Keys: ring, Tenant: g.tenant}
		var res archive.ImportResult
		if name == "-" {
			p.Show("reading stdin")
			res, err = archive.Import(ctx, st, g.stdin, opts)
		} else {
			res, err = archive.ImportFile(ctx, st, name, opts)
		}
		if err != nil {
			if doc.Files == 0 {
				undo() // nothing imported: a store this import created goes
			}
			if doc.Files > 0 {
				err = fmt.Errorf("%w (the %d %s before it %s imported)", err, doc.Files, clitext.Plural(doc.Files, "file", "files"), clitext.Plural(doc.Files, "was", "were"))
			}
			return g.fail(sp.Name, fmt.Errorf("%s: %w", name, err))
		}
		doc.Add(res.Counts)
		doc.Skipped += res.Skipped
		doc.Files++
	}
	p.Clear()
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, doc))
	}
	verb := "imported"
	if *dryRun {
		verb = "checked (dry run, nothing written)"
	}
	fmt.Fprintf(g.stdout, "%s %s from %d %s", verb, countsText(doc.facetCounts),
		doc.Files, clitext.Plural(doc.Files, "file", "files"))
	if doc.Skipped > 0 {
		fmt.Fprintf(g.stdout, ", %d existing skipped", doc.Skipped)
	}
	fmt.Fprintln(g.stdout)
	return nil
}

// importStatus returns the status line's report of one file's import: the
// records imported so far (every facet's, skipped ones aside) and the
// bytes read of the file.
func importStatus(p *statusline.Line, label string) func(archive.ImportProgress) {
	if p == nil {
		return nil
	}
	return func(x archive.ImportProgress) {
		p.Update(func() string {
			n := x.Counts.Total()
			return fmt.Sprintf("%s: %d %s, %s read", label, n, clitext.Plural(int(n), "record", "records"), statusline.OfTotal(x.Read, x.Size))
		})
	}
}
