package main

// Retention on the command line: "sessionctl retention" shows and sets
// the policies stored in the database, "sessionctl sweep" applies them
// (or, with --dry-run, says what it would remove, per facet), and
// "sessionctl hold" keeps sessions whatever the policies say. Everything
// is a call of store.Retention.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/suggest"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// retentionJSON is the JSON document of retention show.
type retentionJSON struct {
	Policies []view.Policy       `json:"policies"`
	Holds    []store.Hold        `json:"holds"`
	Sweeps   []store.SweepRecord `json:"sweeps"`
}

func runRetention(ctx context.Context, g *globals, args []string) error {
	sp := specs.Retention
	sub, args := sp.Action(args)
	if sub == "set" {
		// "-5h" is a value, not a flag: say what is wrong with it.
		for _, a := range args {
			if len(a) > 1 && a[0] == '-' && (a[1] >= '0' && a[1] <= '9' || a[1] == '.') {
				return g.usageErr(sp.Name+" set", "%s: a negative value is refused (give a duration such as 30d, a count or a size)", humanize.Escape(a))
			}
		}
	}
	fs := g.newFlags(sp)
	readsCount := fs.Bool("reads-count", false, "set: reads recorded by the application extend a session's life")
	last := fs.Int("sweeps", 5, "show: the last `N` sweeps")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseAction(fs, sp, sub, args)
	if err != nil {
		return err
	}
	name := sp.Name + " " + sub
	switch sub {
	case "show":
		if err := g.wantArgs(sp, pos, 0, 0); err != nil {
			return err
		}
		if *last < 0 {
			return g.usageErr(name, "--sweeps must not be negative")
		}
		return g.result(name, g.retentionShow(ctx, *last, *asJSON))
	case "remove":
		if len(pos) != 1 {
			return g.usageErr(name, "give one policy kind")
		}
		return g.result(name, g.withStore(ctx, func(st cliStore) error {
			ok, err := st.Retention().RemovePolicy(ctx, store.PolicyKind(pos[0]))
			if err != nil {
				return err
			}
			doc := map[string]bool{"removed": ok}
			if !ok {
				return g.say(*asJSON, doc, "no %s policy was set\n", humanize.Escape(pos[0]))
			}
			return g.say(*asJSON, doc, "removed the %s policy\n", pos[0])
		}))
	}
	if len(pos) < 1 || len(pos) > 2 {
		return g.usageErr(name, "give a policy kind and its value")
	}
	p, err := parsePolicy(pos, *readsCount)
	if err != nil {
		return g.usageErr(name, "%v", err)
	}
	// A policy for a store that does not exist is a mistyped --db: it
	// must not make an empty one.
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		if err := st.Retention().SetPolicy(ctx, p); err != nil {
			return err
		}
		return g.result(name, g.say(*asJSON, view.NewPolicy(p), "set %s: %s\n", p.Kind, render.PolicySetting(p)))
	}))
}

// parsePolicy reads "KIND [VALUE]".
func parsePolicy(pos []string, readsCount bool) (store.Policy, error) {
	p := store.Policy{Kind: store.PolicyKind(pos[0]), ReadsCount: readsCount}
	k, ok := store.KindInfo(p.Kind)
	if !ok {
		return p, fmt.Errorf("unknown policy kind %q", humanize.Escape(pos[0]))
	}
	if (k.Param == store.ParamNone) != (len(pos) == 1) {
		if k.Param == store.ParamNone {
			return p, fmt.Errorf("%s takes no value", k.Kind)
		}
		return p, fmt.Errorf("%s takes a value: %s", k.Kind, paramWords[k.Param])
	}
	var err error
	switch k.Param {
	case store.ParamMaxAge:
		p.MaxAge, err = humanize.ParseDuration(pos[1])
	case store.ParamKeepLast:
		p.KeepLast, err = strconv.ParseInt(pos[1], 10, 64)
	case store.ParamMaxBytes:
		p.MaxBytes, err = humanize.ParseBytes(pos[1])
	}
	if err != nil {
		return p, fmt.Errorf("%s: %q is not %s", k.Kind, humanize.Escape(pos[1]), paramWords[k.Param])
	}
	return p, policyErr(p.Validate(), pos)
}

// paramWords say what value a policy kind takes, as the user types it.
var paramWords = map[store.Parameter]string{
	store.ParamMaxAge:   humanize.DurationExample,
	store.ParamKeepLast: "a number of messages such as 100",
	store.ParamMaxBytes: "a size such as 2GiB",
}

// policyErr words the store's refusal of a policy in the terms the user
// typed: the value they gave, or --reads-count, not the store's field
// names (max_age, keep_last, max_bytes, reads_count).
func policyErr(err error, pos []string) error {
	var ie *store.InvalidInputError
	if !errors.As(err, &ie) {
		return err
	}
	switch ie.Field {
	case "reads_count":
		return fmt.Errorf("--reads-count: %s", ie.Reason)
	case "max_age", "keep_last", "max_bytes":
		if len(pos) > 1 {
			return fmt.Errorf("%s %s: %s", pos[0], humanize.Escape(pos[1]), ie.Reason)
		}
	}
	return err
}

func (g *globals) retentionShow(ctx context.Context, last int, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		r := st.Retention()
		var doc retentionJSON
		policies, err := r.Policies(ctx)
		if err != nil {
			return err
		}
		doc.Policies = view.Policies(policies)
		if doc.Holds, err = r.Holds(ctx); err != nil {
			return err
		}
		doc.Sweeps = []store.SweepRecord{}
		if last > 0 {
			if doc.Sweeps, err = r.Sweeps(ctx, last); err != nil {
				return err
			}
		}
		if asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		return render.Retention(g.stdout, policies, doc.Holds, doc.Sweeps, last > 0)
	})
}

func runSweep(ctx context.Context, g *globals, args []string) error {
	sp := specs.Sweep
	fs := g.newFlags(sp)
	dryRun := fs.Bool("dry-run", false, "say what would be removed, change nothing")
	batch := fs.Int("batch-rows", store.DefaultSweepBatchRows, "rows per transaction, `N`")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *batch < 1 {
		return g.usageErr(sp.Name, "--batch-rows must be at least 1")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		p := g.startProgress(true)
		verb := "sweeping"
		if *dryRun {
			verb = "counting (dry run)"
		}
		rep, err := st.Retention().Sweep(ctx, store.SweepOptions{DryRun: *dryRun, BatchRows: *batch, Holder: "sessionctl",
			Progress: func(k store.KindSweep) {
				p.Update(func() string {
					return fmt.Sprintf("sweep: %s %s: %d %s", verb, k.Kind, k.Sessions, clitext.Plural(int(k.Sessions), "session", "sessions"))
				})
			}})
		p.Clear()
		if err != nil {
			return err
		}
		if *asJSON {
			return g.jsonOr(sp.Name, rep)
		}
		render.Sweep(g.stdout, rep)
		return nil
	}))
}

func runHold(ctx context.Context, g *globals, args []string) error {
	sp := specs.Hold
	sub, args := sp.Action(args)
	fs := g.newFlags(sp)
	reason := fs.String("reason", "", "hold FACET ID...: why the sessions are held, `TEXT`")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseAction(fs, sp, sub, args)
	if err != nil {
		return err
	}
	name := sp.Name
	if sub != "add" {
		name += " " + sub
	}
	if sub == "list" {
		if len(pos) != 0 {
			return g.usageErr(name, "list takes no arguments")
		}
		return g.result(name, g.withStore(ctx, func(st cliStore) error {
			holds, err := st.Retention().Holds(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return jsonout.Write(g.stdout, map[string][]store.Hold{"holds": holds})
			}
			return render.Holds(g.stdout, holds)
		}))
	}
	refs, err := parseRefs(pos)
	if err != nil {
		return g.usageErr(name, "%v", err)
	}
	return g.result(name, g.withStore(ctx, func(st cliStore) error {
		// JSON: the sessions held, or released and not held, as lists.
		done, notHeld := []store.SessionRef{}, []store.SessionRef{}
		for _, ref := range refs {
			ok := true
			if sub == "release" {
				ok, err = st.Retention().Release(ctx, ref)
			} else {
				err = st.Retention().Hold(ctx, ref, *reason)
			}
			if err != nil {
				return err
			}
			switch {
			case ok:
				done = append(done, ref)
			default:
				notHeld = append(notHeld, ref)
			}
			switch {
			case *asJSON:
			case sub == "add":
				fmt.Fprintf(g.stdout, "held %s\n", humanize.Escape(ref.String()))
			case ok:
				fmt.Fprintf(g.stdout, "released %s\n", humanize.Escape(ref.String()))
			default:
				fmt.Fprintf(g.stdout, "%s was not held\n", humanize.Escape(ref.String()))
			}
		}
		switch {
		case !*asJSON:
			return nil
		case sub == "release":
			return g.jsonOr(name, map[string][]store.SessionRef{"released": done, "not_held": notHeld})
		}
		return g.jsonOr(name, map[string][]store.SessionRef{"held": done})
	}))
}

// parseRefs reads "FACET ID..." or "agent_sessions APP USER SESSION".
func parseRefs(pos []string) ([]store.SessionRef, error) {
	if len(pos) > 0 && !slices.Contains(specs.HoldFacets, pos[0]) {
		return nil, fmt.Errorf("%q is not a facet (one of %s)%s", pos[0], strings.Join(specs.HoldFacets, ", "), suggest.DidYouMean(pos[0], specs.HoldFacets))
	}
	if len(pos) < 2 {
		return nil, fmt.Errorf("give a facet and a session")
	}
	if pos[0] == store.HoldAgentSessions {
		if len(pos) != 4 {
			return nil, fmt.Errorf("an agent session is named by its app, user and session id")
		}
		ref := store.SessionRef{Facet: pos[0], App: pos[1], UserID: pos[2], ID: pos[3]}
		return []store.SessionRef{ref}, ref.Validate()
	}
	var refs []store.SessionRef
	for _, id := range pos[1:] {
		ref := store.SessionRef{Facet: pos[0], ID: id}
		if err := ref.Validate(); err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}
