package main

// The audit trail on the command line: "sessionctl audit" lists and
// filters it, "audit verify" checks every chain, "audit checkpoint" and
// "audit prune" are its retention; and the audit facet's maintenance
// (stats; gc leaves it to audit prune; export and import are package
// archive's).

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
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

func runAudit(ctx context.Context, g *globals, args []string) error {
	sp := specs.Audit
	sub, args := sp.Action(args)
	fs := g.newFlags(sp)
	agent := fs.String("agent", "", "only the chain of agent `ID`")
	session := fs.String("session", "", "list: only the events of session `ID`")
	kind := fs.String("kind", "", "list: only events of `KIND` (create, use, reserve, settle, release, close, expire, lapse, cleanup, limits, checkpoint)")
	outcome := fs.String("outcome", "", "list: only events with `OUTCOME` (ok, or a refusal such as budget_exceeded)")
	since := fs.String("since", "", "list: only events at or after `TIME` (RFC 3339)")
	until := fs.String("until", "", "list: only events before `TIME` (RFC 3339)")
	limit := fs.Int("limit", 100, "list: events per page, `N`")
	after := fs.String("after", "", "list: continue after `CURSOR` (printed after a page)")
	all := fs.Bool("all", false, "list: every page")
	before := fs.String("before", "", "prune: cut at the newest checkpoint before `TIME` (RFC 3339)")
	olderThan := cliflags.DurationFlag(fs, "older-than", 0, "prune: cut at the newest checkpoint older than `DURATION` (0s: the newest one)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseAction(fs, sp, sub, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	name := sp.Name + " " + sub
	switch sub {
	case "list":
		f := store.AuditFilter{AgentID: *agent, SessionID: *session, Kind: store.AuditKind(*kind), Outcome: *outcome,
			After: *after, Limit: *limit}
		var err error
		if f.Since, err = optTime("since", *since); err != nil {
			return g.usageErr(name, "%v", err)
		}
		if f.Until, err = optTime("until", *until); err != nil {
			return g.usageErr(name, "%v", err)
		}
		if _, err := f.Normalize(); err != nil {
			return g.usageErr(name, "%v", err)
		}
		return g.auditList(ctx, name, f, *all, *asJSON)
	case "verify":
		return g.auditVerify(ctx, name, *asJSON)
	case "checkpoint":
		if *agent != "" {
			if err := store.ValidateID("agent", *agent); err != nil {
				return g.usageErr(name, "%v", err)
			}
		}
		return g.result(name, g.withStore(ctx, func(st cliStore) error {
			n, err := st.Audit().Checkpoint(ctx, *agent)
			if err != nil {
				return err
			}
			return g.say(*asJSON, map[string]int64{"checkpointed_chains": n}, "checkpointed %d %s\n", n, clitext.Plural(int(n), "chain", "chains"))
		}))
	case "prune":
		cut, err := optTime("before", *before)
		if err != nil {
			return g.usageErr(name, "%v", err)
		}
		// --older-than 0s is "every checkpoint made so far": what
		// checkpoint then prune --older-than 0s is expected to do.
		olderSet := cliflags.IsSet(fs, "older-than")
		switch {
		case olderSet == !cut.IsZero():
			return g.usageErr(name, "give one of --before and --older-than")
		case olderSet:
			cut = g.clock().Add(-*olderThan)
		}
		return g.result(name, g.withStore(ctx, func(st cliStore) error {
			n, err := st.Audit().Prune(ctx, store.AuditPruneRequest{Before: cut, AgentID: *agent})
			if err != nil {
				return err
			}
			return g.say(*asJSON, map[string]any{"before": jsonout.Time(cut), "removed_events": n}, "removed %d %s before the checkpoints made before %s\n", n, clitext.Plural(int(n), "event", "events"), tablefmt.Time(cut))
		}))
	}
	return exitStatus(exitUsage)
}

// jsonOr writes v as JSON (a failure is reported under name).
func (g *globals) jsonOr(name string, v any) error {
	return g.result(name, jsonout.Write(g.stdout, v))
}

// optTime parses an optional RFC 3339 flag value (zero when empty).
func optTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, store.Invalid(field, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return t, nil
}

func (g *globals) auditList(ctx context.Context, name string, f store.AuditFilter, all, asJSON bool) error {
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		events, next, err := readPages(all, f.After, func(after string) (store.Page[store.AuditEvent], error) {
			f.After = after
			return st.Audit().List(ctx, f)
		})
		if err != nil {
			return err
		}
		if asJSON {
			doc := struct {
				Events []view.AuditEvent `json:"events"`
				Next   string            `json:"next,omitempty"`
			}{Events: view.AuditEvents(events), Next: next}
			return g.jsonOr(name, doc)
		}
		return render.AuditEvents(g.stdout, events, next)
	}))
}

func (g *globals) auditVerify(ctx context.Context, name string, asJSON bool) error {
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		rep, err := st.Audit().Verify(ctx)
		if err != nil {
			return err
		}
		var code error // a chain that does not verify: exit 1, the report said why
		if !rep.OK() {
			code = exitStatus(exitError)
		}
		if asJSON {
			if err := jsonout.Write(g.stdout, struct {
				OK bool `json:"ok"`
				store.AuditReport
			}{rep.OK(), rep}); err != nil {
				return err
			}
			return code
		}
		render.AuditReport(g.stdout, rep)
		return code
	}))
}

// Maintenance of the audit facet.
var auditOps = facetOps{
	one: "audit chain", many: "audit chains",
	count:     func(c *facetCounts) *int64 { return &c.Audit },
	stats:     statsAudit,
	statsRows: statsAuditRows,
	gcNone:    "audit chains: cut only at checkpoints, by sessionctl audit checkpoint and audit prune",
}

// auditStats is the audit facet in stats.
type auditStats struct {
	Chains int64 `json:"chains"`
	// Events counts the events ever appended (the heads' sequence
	// numbers), pruned ones included.
	Events int64 `json:"events_appended"`
}

func statsAudit(c store.Counts, doc *statsJSON) {
	doc.Audit = &auditStats{Chains: c.Audit.Chains, Events: c.Audit.EventsAppended}
}

func statsAuditRows(doc *statsJSON) [][2]string {
	if doc.Audit == nil {
		return nil
	}
	return [][2]string{{"audit chains", fmt.Sprintf("%d, %d %s appended", doc.Audit.Chains, doc.Audit.Events, clitext.Plural(int(doc.Audit.Events), "event", "events"))}}
}
