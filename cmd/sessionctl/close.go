package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
)

func runClose(ctx context.Context, g *globals, args []string) error {
	sp := specs.Close(helpExits)
	fs := g.newFlags(sp)
	pos, err := g.parseArgs(fs, sp, args, 1, -1)
	if err != nil {
		return err
	}
	for _, id := range pos {
		if err := store.ValidateID("id", id); err != nil {
			return g.usageErr(sp.Name, "%v", err)
		}
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		status := exitOK
		for _, id := range pos {
			s, err := st.Governance().Close(ctx, id)
			if err != nil {
				if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrClosed) {
					err = fmt.Errorf("%s: %w", id, err)
				}
				status = max(status, g.reportItem(sp.Name, err))
				continue
			}
			fmt.Fprintf(g.stdout, "closed %s (%d of %d calls made)\n", s.ID, s.CallsMade, s.CallBudget)
		}
		if status != exitOK {
			return exitStatus(status)
		}
		return nil
	}))
}

// closeAgentJSON is the JSON document of close-agent.
type closeAgentJSON struct {
	AgentID string `json:"agent_id"`
	Closed  int64  `json:"closed"`
}

func runCloseAgent(ctx context.Context, g *globals, args []string) error {
	sp := specs.CloseAgent
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	agent, st, err := g.openForID(ctx, fs, sp, args, "agent")
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Governance().CloseAllForAgent(ctx, agent)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	return g.result(sp.Name, g.say(*asJSON, closeAgentJSON{AgentID: agent, Closed: n}, "closed %d active %s of agent %s\n", n, clitext.Plural(int(n), "session", "sessions"), agent))
}
