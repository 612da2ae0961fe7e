package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/statusline"
	"github.com/agentstore/sessionstore/loadtest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// benchReport is the output of "sessionctl bench" (its --json document).
type benchReport = loadtest.Report

// benchScenarios are the scenarios "sessionctl bench" runs.
func benchScenarios() []loadtest.Scenario { return loadtest.Scenarios() }

var benchSpec = spec{
	Name: "bench",
	About: `Measures the fsync rate F of DIR, then Use (1 and N callers), a message
append at 10 and at 10,000 messages of history, get by id and a list page
(100 of 10,000) of governed sessions, and agent sessions (ADK's model):
create, event append (1 caller, and 4 callers on sessions of their own: group
commit puts their appends in one fsync), the last 100 of 1,000 events, a
list page (100 of 1,000); prints ops/s, p50, p99 and the ratio to F. On
SQLite each scenario gets a temporary database in DIR; the database of --db is
not touched and its directory is the default DIR. With a postgres:// --db,
each scenario runs in a temporary schema of that database, dropped at the
end (--sync FULL is synchronous_commit=on, NORMAL is off), and F is the
fsync rate of DIR (default: the system's temporary directory), meaningful
when the server's data is on that disk.`,
	Examples: []string{"sessionctl bench --dir /var/lib/agent --duration 5s",
		"sessionctl --db postgres://localhost/agents bench --duration 5s"},
	Values: map[string][]string{"--sync": {"FULL", "NORMAL"}},
}

// runBench measures the store on the user's disk, like pgbench or
// redis-benchmark, through package loadtest.
func runBench(ctx context.Context, g *globals, args []string) error {
	var o loadtest.Options
	var syncLevel string
	var asJSON bool
	sp := benchSpec
	fs := g.newFlags(sp)
	fs.StringVar(&o.Dir, "dir", "", "measure the disk of directory `DIR` (default: the directory of --db)")
	cliflags.DurationVar(fs, &o.Duration, "duration", 2*time.Second, "time per scenario, `DURATION`")
	fs.IntVar(&o.Callers, "callers", 32, "concurrent callers for the contended scenarios, `N`")
	fs.StringVar(&syncLevel, "sync", "FULL", "synchronous `LEVEL`: FULL or NORMAL")
	fs.BoolVar(&asJSON, "json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if o.Duration <= 0 || o.Callers < 1 {
		return g.usageErr(sp.Name, "want a positive --duration and --callers")
	}
	o.Synchronous = sqlstore.Synchronous(strings.ToUpper(syncLevel))
	if o.Synchronous != sqlstore.SyncFull && o.Synchronous != sqlstore.SyncNormal {
		return g.usageErr(sp.Name, "--sync must be FULL or NORMAL")
	}
	switch {
	case g.isPG():
		o.PostgresURL, o.SchemaPrefix = g.db, "sessionctl_bench_"
		if o.Dir == "" {
			o.Dir = os.TempDir()
		}
	case o.Dir == "":
		o.Dir = filepath.Dir(g.db)
	}
	o.Scenarios = benchScenarios()
	o.Progress = statusline.Bar(g.stderr, asJSON)
	rep, err := loadtest.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(g.stderr, "sessionctl bench: %v\n", err)
		return exitStatus(exitError)
	}
	if asJSON {
		if err := jsonout.Write(g.stdout, rep); err != nil {
			return exitStatus(exitError)
		}
		return nil
	}
	render.Bench(g.stdout, &rep)
	return nil
}
