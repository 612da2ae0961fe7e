package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/loadtest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// benchReport is the output of "sessionctl bench" (its --json document).
type benchReport = loadtest.Report

// benchScenarios are the scenarios "sessionctl bench" runs.
func benchScenarios() []loadtest.Scenario { return loadtest.Scenarios() }

// runBench measures the store on the user's disk, like pgbench or
// redis-benchmark, through package loadtest.
func runBench(ctx context.Context, g *globals, args []string) error {
	var o loadtest.Options
	var syncLevel string
	var asJSON bool
	sp := specs.Bench
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
