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
	Format        string       `json:"format"`
	Version       int          `json:"version"`
	ExportedAt    string       `json:"exported_at"`
	Governed      []govView    `json:"governed_sessions"`
	Runtime       []rtExport   `json:"runtime_sessions"`
	Conversations []convExport `json:"conversations"`
}

var exportSpec = spec{
	name: "export",
	args: "[ID...]",
	about: `Exports sessions as one JSON document (format "sessionctl-export", version 1):
every facet of the given ids, or every session. Governed sessions keep their
counters, rate window, status and times; runtime sessions come with their
overrides and uploads (content in base64); conversations with their
messages, cost records, artifacts, trace events, run records and
verification reports (never an LLM API key: the store does not keep one).
"sessionctl import" reads the file back. Writes to stdout unless --output
is given.`,
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

	doc := exportDoc{Format: exportFormat, Version: exportVersion, ExportedAt: jsonTime(g.clock()),
		Governed: []govView{}, Runtime: []rtExport{}, Conversations: []convExport{}}
	gov, conv := st.Governance(), st.Conversations()
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
		req := store.ListIDsRequest{Limit: store.MaxPageSize}
		for {
			page, err := st.Runtime().ListIDs(ctx, req)
			if err != nil {
				return g.fail(sp.name, err)
			}
			for _, id := range page.Items {
				x, err := exportRuntime(ctx, st, id)
				if errors.Is(err, store.ErrNotFound) {
					continue // removed since it was listed
				}
				if err != nil {
					return g.fail(sp.name, err)
				}
				doc.Runtime = append(doc.Runtime, x)
			}
			if page.Next == "" {
				break
			}
			req.After = page.Next
		}
		cf := store.ConversationFilter{Limit: store.MaxPageSize}
		for {
			page, err := conv.List(ctx, cf)
			if err != nil {
				return g.fail(sp.name, err)
			}
			for _, c := range page.Items {
				x, err := exportConversation(ctx, conv, c.ID)
				if errors.Is(err, store.ErrNotFound) {
					continue // deleted since it was listed
				}
				if err != nil {
					return g.fail(sp.name, err)
				}
				doc.Conversations = append(doc.Conversations, x)
			}
			if page.Next == "" {
				break
			}
			cf.After = page.Next
		}
	} else {
		for _, id := range pos {
			found := false
			s, err := gov.Get(ctx, id)
			if err == nil {
				found = true
				doc.Governed = append(doc.Governed, newGovView(s))
			} else if !errors.Is(err, store.ErrNotFound) {
				return g.fail(sp.name, err)
			}
			r, err := exportRuntime(ctx, st, id)
			if err == nil {
				found = true
				doc.Runtime = append(doc.Runtime, r)
			} else if !errors.Is(err, store.ErrNotFound) {
				return g.fail(sp.name, err)
			}
			x, err := exportConversation(ctx, conv, id)
			if err == nil {
				found = true
				doc.Conversations = append(doc.Conversations, x)
			} else if !errors.Is(err, store.ErrNotFound) {
				return g.fail(sp.name, err)
			}
			if !found {
				return g.fail(sp.name, fmt.Errorf("session %s: %w", id, store.ErrNotFound))
			}
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
		fmt.Fprintf(g.stderr, "exported %s to %s\n",
			countsText(int64(len(doc.Governed)), int64(len(doc.Runtime)), int64(len(doc.Conversations))), *output)
	}
	return exitOK
}
