package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

var showSpec = spec{
	name: "show",
	args: "ID",
	about: `Shows every facet the store holds for one session id: the governed
session's counters and limits, and its spend limits and its agent's with
what is spent and reserved; the runtime session's agent, workspace,
owner, model overrides, uploads and current turn; and the conversation's
metadata (state, message count, usage, cost). Facets the session does not
have are left out (null in JSON); an id with no facet at all is an error.`,
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
	// Spend is the governed session's spend (spend.go); left out when
	// neither it nor its agent has limits and nothing is reserved.
	Spend        *spendView `json:"spend,omitempty"`
	Runtime      *rtShow    `json:"runtime"`
	Conversation *convView  `json:"conversation"`
}

// rtShow is the runtime facet in show: the session and its upload totals.
type rtShow struct {
	rtView
	Uploads     int64 `json:"uploads"`
	UploadBytes int64 `json:"upload_bytes"`
}

func runShow(ctx context.Context, g *globals, args []string) error {
	sp := showSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	id, st, err := g.openForID(ctx, fs, sp, args, "id")
	if err != nil {
		return err
	}
	defer st.Close()

	doc, f, err := loadFacets(ctx, st, id)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return nil
	}
	w := g.stdout
	fmt.Fprintf(w, "session %s\n", esc(id))
	if f.gov != nil {
		fmt.Fprintln(w, "\ngoverned:")
		if err := govDetails(w, *f.gov); err != nil {
			return g.fail(sp.name, err)
		}
		if doc.Spend != nil {
			fmt.Fprintln(w, "\nspend:")
			if err := spendDetails(w, *doc.Spend); err != nil {
				return g.fail(sp.name, err)
			}
		}
	}
	if f.rt != nil {
		fmt.Fprintln(w, "\nruntime:")
		if err := rtDetails(w, *f.rt, doc.Runtime.Uploads, doc.Runtime.UploadBytes); err != nil {
			return g.fail(sp.name, err)
		}
	}
	if f.conv != nil {
		fmt.Fprintln(w, "\nconversation:")
		if err := convDetails(w, *f.conv); err != nil {
			return g.fail(sp.name, err)
		}
	}
	return nil
}

// facets are the store's records of one session id; nil when absent.
type facets struct {
	gov  *store.Session
	rt   *store.RuntimeSession
	conv *store.ConversationSummary
}

// loadFacets reads every facet of id; a session with none of them is
// store.ErrNotFound.
func loadFacets(ctx context.Context, st cliStore, id string) (showJSON, facets, error) {
	doc := showJSON{ID: id}
	var f facets
	s, err := st.Governance().Get(ctx, id)
	switch {
	case err == nil:
		f.gov = &s
		v := newGovView(s)
		doc.Governed = &v
		if doc.Spend, err = loadSpend(ctx, st, id); err != nil {
			return doc, f, err
		}
	case !errors.Is(err, store.ErrNotFound):
		return doc, f, err
	}
	r, err := st.Runtime().Get(ctx, id)
	switch {
	case err == nil:
		f.rt = &r
		ups, err := allUploads(ctx, st, id)
		if err != nil {
			return doc, f, err
		}
		doc.Runtime = &rtShow{rtView: newRTView(r), Uploads: int64(len(ups))}
		for _, u := range ups {
			doc.Runtime.UploadBytes += u.SizeBytes
		}
	case !errors.Is(err, store.ErrNotFound):
		return doc, f, err
	}
	c, err := st.Conversations().Info(ctx, id)
	switch {
	case err == nil:
		f.conv = &c
		v := newConvView(c)
		doc.Conversation = &v
	case !errors.Is(err, store.ErrNotFound):
		return doc, f, err
	}
	if f.gov == nil && f.rt == nil && f.conv == nil {
		return doc, f, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return doc, f, nil
}
