package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// runDemo creates a fresh database and shows a governed session being
// spent to its budget, then refused.
func runDemo(ctx context.Context, g *globals, args []string) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(g.stderr)
	db := fs.String("db", "", "database file to create (default: the global --db, else sessions-demo.db)")
	keep := fs.Bool("keep", false, "reuse the database if it exists instead of starting fresh")
	fs.Usage = func() {
		fmt.Fprintln(g.stderr, "Usage: sessionctl demo [--db FILE] [--keep]")
		fmt.Fprintln(g.stderr, "\nCreates a database, a governed session with a budget of 3 calls, and spends it.")
		fmt.Fprintln(g.stderr, "\nExample:\n  sessionctl demo --db /tmp/demo.db")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	path := *db
	if path == "" {
		path = g.db
	}
	if !*keep {
		for _, suffix := range []string{"", "-wal", "-shm", "-writer.lock"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(g.stderr, "sessionctl demo: %v\n", err)
				return exitError
			}
		}
	}
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		fmt.Fprintf(g.stderr, "sessionctl demo: open %s: %v\n", path, err)
		return exitError
	}
	defer st.Close()
	out := g.stdout
	fmt.Fprintf(out, "database: %s\n", path)

	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         "demo-agent",
		DeclaredIntent:  "summarize the repository",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      3,
	})
	if err != nil {
		fmt.Fprintf(g.stderr, "sessionctl demo: create: %v\n", err)
		return exitError
	}
	fmt.Fprintf(out, "governed session %s: agent %s, tools %v, budget %d\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget)
	for _, tool := range []string{"list_dir", "read_file", "delete_file", "read_file", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "demo-agent", Tools: []string{tool}})
		if err != nil {
			fmt.Fprintf(out, "  use %-12s refused: %v\n", tool, err)
			continue
		}
		fmt.Fprintf(out, "  use %-12s allowed: %d of %d calls made\n", tool, s.CallsMade, s.CallBudget)
	}
	final, err := gov.Get(ctx, sess.ID)
	if err != nil {
		fmt.Fprintf(g.stderr, "sessionctl demo: get: %v\n", err)
		return exitError
	}
	fmt.Fprintf(out, "stored durably: %d of %d calls made, status %s\n", final.CallsMade, final.CallBudget, final.Status)
	return exitOK
}
