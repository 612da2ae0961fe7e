package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// PolicySetting says what a policy is set to, for people: "after 30
// days", "keep the last 100", "at most 2.0 GiB", "on".
func PolicySetting(p store.Policy) string {
	k, _ := store.KindInfo(p.Kind)
	var s string
	switch k.Param {
	case store.ParamMaxAge:
		s = "after " + humanize.Duration(p.MaxAge)
	case store.ParamKeepLast:
		s = fmt.Sprintf("keep the last %d", p.KeepLast)
	case store.ParamMaxBytes:
		s = "at most " + humanize.Bytes(p.MaxBytes)
	default:
		s = "on"
	}
	if p.ReadsCount {
		s += ", reads count"
	}
	return s
}

// Retention writes what retention show prints: the policies, the holds
// (Holds) and, withSweeps, the last sweeps.
func Retention(w io.Writer, policies []store.Policy, holds []store.Hold, sweeps []store.SweepRecord, withSweeps bool) error {
	if len(policies) == 0 {
		fmt.Fprintln(w, "no retention policy is set: sweeps remove nothing (see sessionctl retention --help)")
	} else {
		tw := tablefmt.NewWriter(w)
		fmt.Fprintln(tw, "POLICY\tFACET\tSETTING\tSET AT")
		for _, p := range policies {
			k, _ := store.KindInfo(p.Kind)
			f := k.Facet
			if f == "" {
				f = "(all)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Kind, f, PolicySetting(p), tablefmt.Time(p.UpdatedAt))
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if err := Holds(w, holds); err != nil {
		return err
	}
	if withSweeps {
		fmt.Fprintf(w, "\nlast sweeps: %d\n", len(sweeps))
		if len(sweeps) > 0 {
			tw := tablefmt.NewWriter(w)
			fmt.Fprintln(tw, "STARTED\tHOLDER\tSESSIONS\tROWS\tBATCHES\tFREED\tERROR")
			for _, s := range sweeps {
				n, rows := s.Report.Total()
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", tablefmt.Time(s.Report.StartedAt), esc(s.Holder), n, rows,
					s.Report.Batches, humanize.Bytes(s.Report.BytesFreed), esc(s.Error))
			}
			tw.Flush()
		}
	}
	return nil
}

// Holds writes how many holds there are, then (when there are any) a
// table of them.
func Holds(w io.Writer, holds []store.Hold) error {
	fmt.Fprintf(w, "%d %s\n", len(holds), clitext.Plural(len(holds), "hold", "holds"))
	if len(holds) == 0 {
		return nil
	}
	tw := tablefmt.NewWriter(w)
	fmt.Fprintln(tw, "FACET\tSESSION\tSINCE\tREASON")
	for _, h := range holds {
		id := h.ID
		if h.Facet == store.HoldAgentSessions {
			id = h.App + "/" + h.UserID + "/" + h.ID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Facet, esc(id), tablefmt.Time(h.CreatedAt), esc(h.Reason))
	}
	return tw.Flush()
}

// Sweep writes a sweep's report: one row per facet and policy, then
// what was (or would be) removed and the space given back.
func Sweep(w io.Writer, rep store.SweepReport) {
	verb := "removed"
	if rep.DryRun {
		verb = "would remove"
	}
	tw := tablefmt.NewWriter(w)
	fmt.Fprintf(tw, "FACET\tPOLICY\t%s\tROWS\tHELD\n", strings.ToUpper(verb))
	any := false
	for _, f := range rep.Facets {
		if len(f.Kinds) == 0 {
			why := "no policy set"
			if f.Note != "" {
				why = f.Note
			}
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(%s)\n", f.Facet, why)
			continue
		}
		for _, k := range f.Kinds {
			any = true
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", f.Facet, k.Kind, k.Sessions, k.Rows, k.Held)
		}
	}
	if rep.Budget != nil {
		any = true
		fmt.Fprintf(tw, "(all)\t%s\t%d\t%d\t-\n", store.PolicySizeBudget, rep.Budget.Sessions, rep.Budget.Rows)
	}
	tw.Flush()
	if !any {
		fmt.Fprintln(w, "no retention policy is set (see sessionctl retention --help)")
	}
	n, rows := rep.Total()
	if rep.DryRun {
		fmt.Fprintf(w, "%s %d %s (%d %s); data: %s\n", verb, n, clitext.Plural(int(n), "session", "sessions"), rows,
			clitext.Plural(int(rows), "row", "rows"), humanize.Bytes(rep.SizeBefore))
		return
	}
	fmt.Fprintf(w, "%s %d %s (%d %s) in %d %s\n", verb, n, clitext.Plural(int(n), "session", "sessions"), rows,
		clitext.Plural(int(rows), "row", "rows"), rep.Batches, clitext.Plural(rep.Batches, "transaction", "transactions"))
	fmt.Fprintf(w, "data: %s -> %s; given back to the file system: %s; still free inside: %s\n",
		humanize.Bytes(rep.SizeBefore), humanize.Bytes(rep.SizeAfter), humanize.Bytes(rep.BytesFreed), humanize.Bytes(rep.Reclaimable))
}
