package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
)

func runCreate(ctx context.Context, g *globals, args []string) error {
	sp := specs.Create
	fs := g.newFlags(sp)
	var tools, creds cliflags.NameList
	var chain cliflags.StringList
	id := fs.String("id", "", "session `ID` (default: a random UUID)")
	agent := fs.String("agent", "", "the agent `ID` the session is bound to (required)")
	fs.Var(&tools, "tool", "authorized tool `NAME`, repeatable or comma-separated; \"*\" for any tool")
	fs.Var(&creds, "credential", "authorized credential `NAME`, repeatable (none: deny all)")
	fs.Var(&chain, "delegation", "delegation chain entry `ID`, outermost first, repeatable")
	budget := fs.Int64("budget", -1, "number of tool calls allowed, `N` >= 0 (required)")
	rateLimit := fs.Int64("rate-limit", 0, "at most `N` calls per rate window (0: unlimited)")
	rateWindow := cliflags.DurationFlag(fs, "rate-window", store.DefaultRateWindow, "rate window `DURATION` (whole milliseconds, at least 1ms)")
	timeLimit := cliflags.DurationFlag(fs, "time-limit", time.Hour, "the session expires after `DURATION` (whole milliseconds, at least 1s)")
	intent := fs.String("intent", "", "declared intent `TEXT`")
	sensitivity := fs.String("sensitivity", string(store.SensitivityInternal), "data sensitivity ceiling `LEVEL`: public, internal, confidential or restricted")
	maxActive := fs.Int64("max-active", 0, "create only if the agent has fewer than `N` active sessions (0: no cap)")
	var limits limitList
	fs.Var(&limits, "limit", "a spend limit `METRIC=AMOUNT[/WINDOW]`, repeatable: input, output, tokens or cost (like 2.50USD) per lifetime, hour, day or month")
	asJSON := fs.Bool("json", false, "print the created session as JSON")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *agent == "" {
		return g.usageErr(sp.Name, "--agent is required")
	}
	if *budget < 0 {
		return g.usageErr(sp.Name, "--budget is required and must not be negative")
	}
	if err := cliflags.CheckDuration("time-limit", *timeLimit, store.MinTimeLimit); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	if err := cliflags.CheckDuration("rate-window", *rateWindow, cliflags.DurationPrecision); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	req := store.CreateRequest{
		ID:                    *id,
		AgentID:               *agent,
		DelegationChain:       chain,
		DeclaredIntent:        *intent,
		AuthorizedTools:       tools,
		AuthorizedCredentials: creds,
		TimeLimit:             *timeLimit,
		CallBudget:            *budget,
		RateLimit:             *rateLimit,
		RateWindow:            *rateWindow,
		Sensitivity:           store.Sensitivity(*sensitivity),
		MaxActivePerAgent:     *maxActive,
		SpendLimits:           limits,
	}
	if _, err := req.Normalize(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	st, undo, err := g.openOrCreateUndo(ctx) // a refused create leaves no new file
	if err != nil {
		return g.fail(sp.Name, err)
	}
	defer st.Close()
	sess, err := st.Governance().Create(ctx, req)
	if err != nil {
		undo()
		var tm *store.TooManySessionsError
		switch {
		case errors.As(err, &tm):
			err = fmt.Errorf("%w: agent %s has %d active sessions, --max-active is %d", err, tm.AgentID, tm.Current, tm.Max)
		case errors.Is(err, store.ErrConflict):
			err = fmt.Errorf("session %s already exists: %w", *id, err)
		}
		return g.fail(sp.Name, err)
	}
	if *asJSON {
		return g.result(sp.Name, jsonout.Write(g.stdout, archive.NewGovernedSession(sess)))
	}
	fmt.Fprintln(g.stdout, sess.ID)
	return nil
}
