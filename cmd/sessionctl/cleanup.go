package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// cleanupJSON is the JSON document of cleanup.
type cleanupJSON struct {
	Removed    int64 `json:"removed"`
	*WALResult       // SQLite only
}

func runCleanup(ctx context.Context, g *globals, args []string) error {
	sp := specs.Cleanup
	fs := g.newFlags(sp)
	vacuum := fs.Bool("vacuum", false, "also rewrite the database file without free pages")
	dryRun := fs.Bool("dry-run", false, "list what would be removed, change nothing")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *dryRun {
		if *vacuum {
			return g.usageErr(sp.Name, "--vacuum does not go with --dry-run")
		}
		return g.result(sp.Name, g.cleanupDryRun(ctx, *asJSON))
	}
	if *vacuum && g.isPG() {
		return g.fail(sp.Name, errNotOnPostgres("--vacuum", "autovacuum reclaims space (or run VACUUM yourself)"))
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	if err := g.checkBeforeRewrite(ctx); err != nil {
		st.Close()
		return g.fail(sp.Name, err)
	}
	// One sweep with the rule "ended governed sessions, at once" in
	// place of the stored policies (held sessions are kept).
	rep, err := st.Retention().Sweep(ctx, store.SweepOptions{Holder: "sessionctl-cleanup",
		Policies: []store.Policy{{Kind: store.PolicyGovernedEnded}}})
	k, _ := rep.Kind(store.PolicyGovernedEnded)
	n := k.Sessions
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return g.fail(sp.Name, err)
	}
	doc := cleanupJSON{Removed: n}
	if !g.isPG() {
		wal, err := checkpoint(ctx, g.db, *vacuum)
		if err != nil {
			return g.fail(sp.Name, err)
		}
		doc.WALResult = &wal
	}
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, doc))
	}
	fmt.Fprintf(g.stdout, "removed %d closed or expired governed %s\n", n, clitext.Plural(int(n), "session", "sessions"))
	if doc.WALResult != nil {
		render.WAL(g.stdout, *doc.WALResult)
	}
	return nil
}

// cleanupDryRunJSON is the JSON document of cleanup --dry-run.
type cleanupDryRunJSON struct {
	WouldRemove int64                     `json:"would_remove"`
	Sessions    []archive.GovernedSession `json:"sessions"`
}

// cleanupDryRun lists the governed sessions cleanup would remove: closed,
// and expired (past their time limit, marked or not), as of now.
func (g *globals) cleanupDryRun(ctx context.Context, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		var list []store.Session
		for _, status := range []store.Status{store.StatusClosed, store.StatusExpired} {
			for s, err := range store.AllGoverned(ctx, st.Governance(), store.ListFilter{Status: status}) {
				if err != nil {
					return err
				}
				list = append(list, s)
			}
		}
		slices.SortFunc(list, func(a, b store.Session) int { return strings.Compare(a.ID, b.ID) })
		now := g.clock()
		doc := cleanupDryRunJSON{WouldRemove: int64(len(list)), Sessions: views(list, archive.NewGovernedSession)}
		if asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		fmt.Fprintf(g.stdout, "would remove %d closed or expired governed %s\n", len(list), clitext.Plural(len(list), "session", "sessions"))
		if len(list) == 0 {
			return nil
		}
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "ID\tAGENT\tSTATUS\tCALLS\tEXPIRES")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\n", humanize.Escape(s.ID), humanize.Escape(s.AgentID), s.EffectiveStatus(now), s.CallsMade, s.CallBudget, tablefmt.Time(s.ExpiresAt))
		}
		return tw.Flush()
	})
}
