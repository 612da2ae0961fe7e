package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// showJSON is the JSON document of show: one member per facet, null when
// the session has no such facet.
type showJSON struct {
	ID       string                   `json:"id"`
	Governed *archive.GovernedSession `json:"governed"`
	// Spend is the governed session's spend (spend.go); left out when
	// neither it nor its agent has limits and nothing is reserved.
	Spend        *view.Spend        `json:"spend,omitempty"`
	Runtime      *rtShow            `json:"runtime"`
	Conversation *view.Conversation `json:"conversation"`
	// Unreadable names the facets the session has whose content is
	// encrypted under a key this command was not given, with the error
	// (left out when every facet could be read).
	Unreadable map[string]string `json:"unreadable,omitempty"`
}

// rtShow is the runtime facet in show: the session and its upload totals.
type rtShow struct {
	view.RuntimeSession
	Uploads     int64 `json:"uploads"`
	UploadBytes int64 `json:"upload_bytes"`
}

func runShow(ctx context.Context, g *globals, args []string) error {
	sp := specs.Show
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	id, st, err := g.openForID(ctx, fs, sp, args, "id")
	if err != nil {
		return err
	}
	defer st.Close()

	doc, f, err := loadFacets(ctx, st, id)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	if *asJSON {
		if err := jsonout.Write(g.stdout, doc); err != nil {
			return g.fail(sp.Name, err)
		}
		return g.showSealed(sp.Name, f)
	}
	w := g.stdout
	fmt.Fprintf(w, "session %s\n", humanize.Escape(id))
	if f.gov != nil {
		fmt.Fprintln(w, "\ngoverned:")
		if err := render.GovDetails(w, *f.gov); err != nil {
			return g.fail(sp.Name, err)
		}
		if doc.Spend != nil {
			fmt.Fprintln(w, "\nspend:")
			if err := render.SpendDetails(w, *doc.Spend); err != nil {
				return g.fail(sp.Name, err)
			}
		}
	}
	for _, s := range f.sealed {
		fmt.Fprintf(w, "\n%s:\n  encrypted: %s\n", s.facet, s.err)
	}
	if f.rt != nil {
		fmt.Fprintln(w, "\nruntime:")
		if err := render.RuntimeDetails(w, *f.rt, doc.Runtime.Uploads, doc.Runtime.UploadBytes); err != nil {
			return g.fail(sp.Name, err)
		}
	}
	if f.conv != nil {
		fmt.Fprintln(w, "\nconversation:")
		if err := render.ConvDetails(w, *f.conv); err != nil {
			return g.fail(sp.Name, err)
		}
	}
	return g.showSealed(sp.Name, f)
}

// showSealed is show's error when a facet could not be read for want of
// its key (after the readable ones were printed): the first such error.
func (g *globals) showSealed(name string, f facets) error {
	if len(f.sealed) == 0 {
		return nil
	}
	return g.fail(name, f.sealed[0].err)
}

// sealedFacet is a facet a session has whose content cannot be read
// without its encryption key.
type sealedFacet struct {
	facet string
	err   error
}

// keyMissing reports whether err says that encrypted content was found
// and its key is not available to this command.
func keyMissing(err error) bool {
	return errors.Is(err, store.ErrKeyUnavailable) || errors.Is(err, store.ErrKeyShredded) || errors.Is(err, store.ErrKeyAbsent)
}

// facets are the store's records of one session id; nil when absent.
type facets struct {
	gov  *store.Session
	rt   *store.RuntimeSession
	conv *store.ConversationSummary
	// sealed are the facets that exist but are encrypted under a key
	// not given (show prints the others).
	sealed []sealedFacet
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
		v := archive.NewGovernedSession(s)
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
		doc.Runtime = &rtShow{RuntimeSession: view.NewRuntimeSession(r), Uploads: int64(len(ups))}
		for _, u := range ups {
			doc.Runtime.UploadBytes += u.SizeBytes
		}
	case keyMissing(err):
		f.seal(&doc, "runtime", err)
	case !errors.Is(err, store.ErrNotFound):
		return doc, f, err
	}
	c, err := st.Conversations().Info(ctx, id)
	switch {
	case err == nil:
		f.conv = &c
		v := view.NewConversation(c)
		doc.Conversation = &v
	case keyMissing(err):
		f.seal(&doc, "conversation", err)
	case !errors.Is(err, store.ErrNotFound):
		return doc, f, err
	}
	if f.gov == nil && f.rt == nil && f.conv == nil && len(f.sealed) == 0 {
		return doc, f, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return doc, f, nil
}

// seal notes that facet exists but could not be read for want of its key.
func (f *facets) seal(doc *showJSON, facet string, err error) {
	f.sealed = append(f.sealed, sealedFacet{facet, err})
	if doc.Unreadable == nil {
		doc.Unreadable = map[string]string{}
	}
	doc.Unreadable[facet] = err.Error()
}
