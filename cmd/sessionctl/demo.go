package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var demoSpec = spec{
	name: "demo",
	about: `Shows what the store does, on the database of --db (default ./sessions.db):
creates a governed session with a budget of 3 calls and spends it (an
unauthorized tool and the call past the budget are refused), then prints
what was stored durably. The file is created when it does not exist; an
existing database is kept and the demo adds its own sessions to it, unless
--fresh removes it first. Inspect the result with "sessionctl list" and
"sessionctl show ID".`,
	examples: []string{
		"sessionctl demo",
		"sessionctl --db /tmp/demo.db demo --fresh && sessionctl --db /tmp/demo.db list",
	},
}

func runDemo(ctx context.Context, g *globals, args []string) int {
	sp := demoSpec
	fs := g.newFlags(sp)
	fresh := fs.Bool("fresh", false, "remove the database file (and its -wal, -shm, -writer.lock) first")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	existed := g.mustExist() == nil
	if *fresh {
		for _, suffix := range []string{"", "-wal", "-shm", "-writer.lock"} {
			if err := os.Remove(g.db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return g.fail(sp.name, err)
			}
		}
		existed = false
	}
	st, err := g.openOrCreate(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()
	out := g.stdout
	if existed {
		fmt.Fprintf(out, "database: %s (existing; the demo adds its sessions, --fresh starts over)\n", g.db)
	} else {
		fmt.Fprintf(out, "database: %s (new)\n", g.db)
	}
	id, err := demoGovernance(ctx, out, st)
	if err != nil {
		return g.fail(sp.name, err)
	}
	fmt.Fprintf(out, "\nnext: sessionctl --db %s show %s\n", g.db, id)
	return exitOK
}

// demoGovernance creates a governed session with a budget of 3 and spends
// it, showing the refusals. It returns the session id.
func demoGovernance(ctx context.Context, out io.Writer, st *sqlstore.Store) (string, error) {
	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         "demo-agent",
		DeclaredIntent:  "summarize the repository",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      3,
	})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(out, "\ngoverned session %s\n  agent %s, tools %v, budget %d calls, expires in 10m\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget)
	for _, tool := range []string{"list_dir", "read_file", "delete_file", "read_file", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "demo-agent", Tools: []string{tool}})
		if r, ok := useRefusal(err); ok {
			fmt.Fprintf(out, "  use %-12s refused (%s): %v\n", tool, r.kind, err)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("use: %w", err)
		}
		fmt.Fprintf(out, "  use %-12s allowed: %d of %d calls made\n", tool, s.CallsMade, s.CallBudget)
	}
	final, err := gov.Get(ctx, sess.ID)
	if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	fmt.Fprintf(out, "  stored durably: %d of %d calls made, status %s\n", final.CallsMade, final.CallBudget, final.Status)
	return sess.ID, nil
}
