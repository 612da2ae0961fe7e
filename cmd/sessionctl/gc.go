package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/facet"

	"github.com/agentstore/sessionstore/store"
)

// gcSpec is gc's spec, with the facets gc leaves alone: the reason of
// each, from its maintenance entry, in registry order.
func gcSpec() spec {
	var leftAlone []string
	for _, f := range facet.All() {
		if ops := maintenance[f.Name]; ops != nil && ops.gcNone != "" {
			leftAlone = append(leftAlone, ops.gcNone)
		}
	}
	return specs.GC(leftAlone)
}

// gcJSON is the JSON document of gc.
type gcJSON struct {
	DryRun               bool   `json:"dry_run"`
	UpdatedBefore        string `json:"updated_before,omitempty"`
	DeletedConversations int64  `json:"deleted_conversations"`
	KeepLast             *int   `json:"keep_last"`
	TrimmedConversations int64  `json:"trimmed_conversations"`
	RemovedMessages      int64  `json:"removed_messages"`
	// IdleAgentSessions counts the agent sessions not updated since
	// UpdatedBefore; gc keeps them.
	IdleAgentSessions int64 `json:"idle_agent_sessions"`
	*WALResult
}

// gcRequest is what one gc run asks of every facet.
type gcRequest struct {
	cutoff   time.Time // zero: no --older-than
	keepLast int       // -1: no --keep-last
	dryRun   bool
}

func runGC(ctx context.Context, g *globals, args []string) error {
	sp := gcSpec()
	fs := g.newFlags(sp)
	olderThan := cliflags.DurationFlag(fs, "older-than", 0, "delete conversations not updated for `DURATION` (e.g. 30d)")
	keepLast := fs.Int("keep-last", -1, "keep only the last `N` messages of each conversation")
	dryRun := fs.Bool("dry-run", false, "count what would be removed, change nothing")
	vacuum := fs.Bool("vacuum", false, "also rewrite the database file without free pages")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if cliflags.IsSet(fs, "older-than") {
		if err := cliflags.CheckDuration("older-than", *olderThan, cliflags.DurationPrecision); err != nil {
			return g.usageErr(sp.Name, "%v", err)
		}
	}
	switch {
	case *keepLast < 0 && cliflags.IsSet(fs, "keep-last"):
		return g.usageErr(sp.Name, "--keep-last must not be negative")
	case *olderThan == 0 && *keepLast < 0:
		return g.usageErr(sp.Name, "give --older-than, --keep-last or both")
	}
	if *vacuum && g.isPG() {
		return g.fail(sp.Name, errNotOnPostgres("--vacuum", "autovacuum reclaims space (or run VACUUM yourself)"))
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	p := g.startProgress(true)
	if !*dryRun {
		p.Show("gc: checking the database before changing it")
		if err := g.checkBeforeRewrite(ctx); err != nil {
			st.Close()
			return g.fail(sp.Name, err)
		}
	}
	all, err := registeredFacets()
	if err != nil {
		st.Close()
		return g.fail(sp.Name, err)
	}
	doc := gcJSON{DryRun: *dryRun}
	req := gcRequest{keepLast: *keepLast, dryRun: *dryRun}
	if *olderThan > 0 {
		req.cutoff = g.clock().Add(-*olderThan)
		doc.UpdatedBefore = jsonout.Time(req.cutoff)
	}
	if *keepLast >= 0 {
		doc.KeepLast = keepLast
	}
	for _, f := range all {
		if f.ops.gc == nil {
			continue // left alone; gcNone says why
		}
		if err = f.ops.gc(ctx, g, st, req, &doc); err != nil {
			err = fmt.Errorf("%s: %w", f.Title, err)
			break
		}
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return g.fail(sp.Name, err)
	}
	if !*dryRun && !g.isPG() {
		if *vacuum {
			p.Show("gc: rewriting the database file (vacuum), then checkpointing the WAL")
		} else {
			p.Show("gc: checkpointing the WAL")
		}
		wal, err := checkpoint(ctx, g.db, *vacuum)
		if err != nil {
			return g.fail(sp.Name, err)
		}
		doc.WALResult = &wal
	}
	p.Clear()
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, doc))
	}
	w := g.stdout
	for _, f := range all {
		if f.ops.gcLines != nil {
			for _, line := range f.ops.gcLines(req, &doc) {
				fmt.Fprintln(w, line)
			}
		}
	}
	if doc.WALResult != nil {
		render.WAL(w, *doc.WALResult)
	}
	return nil
}

// gcConversations deletes and trims conversations through one sweep
// (store.Retention.Sweep) with gc's rules in place of the stored
// policies, or with req.dryRun counts what it would remove. Holds are
// respected.
func gcConversations(ctx context.Context, g *globals, st cliStore, req gcRequest, doc *gcJSON) error {
	var policies []store.Policy
	if !req.cutoff.IsZero() {
		// Sweep removes what was last updated at or before now-max_age;
		// gc's cutoff is exclusive.
		policies = append(policies, store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: g.clock().Sub(req.cutoff).Truncate(time.Millisecond) + time.Millisecond})
	}
	if req.keepLast >= 0 {
		policies = append(policies, store.Policy{Kind: store.PolicyMessagesKeepLast, KeepLast: int64(req.keepLast)})
	}
	progress := func(k store.KindSweep) {
		switch {
		case req.dryRun:
			g.status.Update(func() string {
				return fmt.Sprintf("gc: counting conversations (dry run): %s %d found", k.Kind, k.Sessions)
			})
		case k.Kind == store.PolicyConversationsIdle:
			g.status.Update(func() string {
				return fmt.Sprintf("gc: deleting conversations not updated since %s: %d deleted", tablefmt.Time(req.cutoff), k.Sessions)
			})
		default:
			g.status.Update(func() string {
				return fmt.Sprintf("gc: trimming every conversation to its last %d %s: %d trimmed", req.keepLast,
					clitext.Plural(req.keepLast, "message", "messages"), k.Sessions)
			})
		}
	}
	rep, err := st.Retention().Sweep(ctx, store.SweepOptions{DryRun: req.dryRun, Policies: policies,
		Holder: "sessionctl-gc", Progress: progress})
	if err != nil {
		return err
	}
	if k, ok := rep.Kind(store.PolicyConversationsIdle); ok {
		doc.DeletedConversations = k.Sessions
	}
	if k, ok := rep.Kind(store.PolicyMessagesKeepLast); ok {
		doc.TrimmedConversations, doc.RemovedMessages = k.Sessions, k.Rows
	}
	return nil
}

// gcConversationsLines are gc's lines about conversations.
func gcConversationsLines(req gcRequest, doc *gcJSON) []string {
	verb, trimVerb := "deleted", "removed"
	if req.dryRun {
		verb, trimVerb = "would delete", "would remove"
	}
	var lines []string
	if !req.cutoff.IsZero() {
		lines = append(lines, fmt.Sprintf("%s %d %s not updated since %s", verb, doc.DeletedConversations,
			clitext.Plural(int(doc.DeletedConversations), "conversation", "conversations"), tablefmt.Time(req.cutoff)))
	}
	if req.keepLast >= 0 {
		lines = append(lines, fmt.Sprintf("%s %d %s from %d %s (keeping the last %d of each)", trimVerb, doc.RemovedMessages,
			clitext.Plural(int(doc.RemovedMessages), "message", "messages"), doc.TrimmedConversations,
			clitext.Plural(int(doc.TrimmedConversations), "conversation", "conversations"), req.keepLast))
	}
	return lines
}
