package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
)

func runUse(ctx context.Context, g *globals, args []string) error {
	sp := specs.Use(helpExits)
	fs := g.newFlags(sp)
	var tools cliflags.NameList
	agent := fs.String("agent", "", "the presenting agent `ID`; refused when it is not the session's agent")
	fs.Var(&tools, "tool", "tool `NAME` of one call, repeatable or comma-separated")
	requestID := fs.String("request-id", "", "idempotency `KEY`: a retry returns the first outcome and consumes nothing")
	asJSON := fs.Bool("json", false, "print the updated session as JSON when allowed")
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	req := store.UseRequest{SessionID: pos[0], AgentID: *agent, Tools: tools, RequestID: *requestID}
	if err := req.Validate(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		sess, err := st.Governance().Use(ctx, req)
		if err != nil {
			if r, ok := useRefusal(err); ok {
				fmt.Fprintf(g.stderr, "sessionctl use: refused (%s): %s\n", r.kind, render.UseRefusal(err, req))
				return exitStatus(r.code)
			}
			return err
		}
		return g.say(*asJSON, archive.NewGovernedSession(sess), "allowed %d %s: %d of %d calls made, %d remaining\n",
			len(req.Tools), clitext.Plural(len(req.Tools), "call", "calls"), sess.CallsMade, sess.CallBudget, sess.RemainingBudget())
	}))
}
