package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/jsonout"
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
	o.Progress = progressFor(g.stderr, asJSON)
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
	printBench(g.stdout, &rep)
	return nil
}

func printBench(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "%s, directory %s, synchronous=%s\n", rep.Backend, rep.Dir, rep.Synchronous)
	fmt.Fprintf(w, "fsync probe (4 KiB write + fsync): F = %.0f/s, p50 %.0f µs, p99 %.0f µs\n\n",
		rep.FsyncPerSec, rep.FsyncP50, rep.FsyncP99)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCALLERS\tOPS/S\tP50 µs\tP99 µs\tOPS/F\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", r.Name, r.Callers, r.OpsPerSec, r.P50Micros, r.P99Micros, r.RatioToF)
	}
	tw.Flush()
}

// progressFor returns a progress reporter: a one-line bar on w when w is a
// terminal and the output is for people, otherwise nothing.
func progressFor(w io.Writer, quiet bool) func(string, float64) {
	f, ok := w.(*os.File)
	if quiet || !ok {
		return func(string, float64) {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func(string, float64) {}
	}
	var mu sync.Mutex
	return func(name string, frac float64) {
		mu.Lock()
		defer mu.Unlock()
		if name == "" {
			fmt.Fprint(w, "\r\033[K")
			return
		}
		frac = min(max(frac, 0), 1)
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(w, "\r\033[K%-28s [%s%s] %3.0f%%", name, strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100)
	}
}
