package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentstore/sessionstore/store"
)

// exportFormat names sessionctl's export document; exportVersion is its
// version (a reader refuses newer versions).
const (
	exportFormat  = "sessionctl-export"
	exportVersion = 1
)

// exportDoc is an export file: every facet of the exported sessions.
type exportDoc struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	ExportedAt string    `json:"exported_at"`
	Governed   []govView `json:"governed_sessions"`
}

var exportSpec = spec{
	name: "export",
	args: "[ID...]",
	about: `Exports sessions as one JSON document (format "sessionctl-export", version 1):
the given ids, or every session. Governed sessions keep their counters,
rate window, status and times, so that "sessionctl import" puts them back
exactly. Writes to stdout unless --output is given.`,
	examples: []string{
		"sessionctl export > all.json",
		"sessionctl export task-7 task-8 --output two.json",
	},
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

	doc := exportDoc{Format: exportFormat, Version: exportVersion, ExportedAt: jsonTime(g.clock()), Governed: []govView{}}
	gov := st.Governance()
	if len(pos) == 0 {
		f := store.ListFilter{Limit: store.MaxPageSize}
		for {
			page, err := gov.List(ctx, f)
			if err != nil {
				return g.fail(sp.name, err)
			}
			for _, s := range page.Items {
				doc.Governed = append(doc.Governed, newGovView(s))
			}
			if page.Next == "" {
				break
			}
			f.After = page.Next
		}
	} else {
		for _, id := range pos {
			s, err := gov.Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				return g.fail(sp.name, fmt.Errorf("%s: %w", id, err))
			}
			if err != nil {
				return g.fail(sp.name, err)
			}
			doc.Governed = append(doc.Governed, newGovView(s))
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
		fmt.Fprintf(g.stderr, "exported %d governed %s to %s\n", len(doc.Governed), plural(len(doc.Governed), "session", "sessions"), *output)
	}
	return exitOK
}
