package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/check"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
)

// checkFail is the status of a failed check.
const checkFail = check.Fail

// doctorJSON is the JSON document of doctor.
type doctorJSON struct {
	Path    string         `json:"path"`
	Healthy bool           `json:"healthy"`
	Checks  []check.Result `json:"checks"`
}

func runDoctor(ctx context.Context, g *globals, args []string) error {
	sp := specs.Doctor(helpExits)
	fs := g.newFlags(sp)
	quick := fs.Bool("quick", false, "run quick_check instead of the full integrity_check (PostgreSQL: skip the orphan-row scan)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	_, err := g.parseArgs(fs, sp, args, 0, 0)
	if err != nil {
		return err
	}
	opts := check.Options{Quick: *quick}
	var rep check.Report
	if g.isPG() {
		rep, err = pgstore.Check(ctx, g.db, opts, g.pgOptions()...)
	} else {
		if err := g.mustExistFile(); err != nil {
			return g.fail(sp.Name, err)
		}
		rep, err = sqlstore.Check(ctx, g.db, opts, g.sqliteStoreOptions()...)
	}
	if err != nil {
		return g.fail(sp.Name, err)
	}
	doc := doctorJSON{Path: g.dbName(), Healthy: !rep.Failed(), Checks: rep.Results}
	if *asJSON {
		if err := jsonout.Write(g.stdout, doc); err != nil {
			return g.fail(sp.Name, err)
		}
	} else {
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
		for _, c := range doc.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, c.Detail)
		}
		tw.Flush()
		if doc.Healthy {
			fmt.Fprintf(g.stdout, "%s is healthy\n", doc.Path)
		}
	}
	if !doc.Healthy {
		// A file that is not a session store exits as every other
		// command does on it (14), not as a damaged store (1). (An empty
		// PostgreSQL schema has no store yet: 1, as for the others.)
		for _, c := range rep.Results {
			if !g.isPG() && c.Name == "schema" && c.Status == check.Fail && strings.HasPrefix(c.Detail, "not a session store") {
				fmt.Fprintf(g.stderr, "sessionctl doctor: %s is not a session store database\n", doc.Path)
				return exitStatus(exitNotStore)
			}
		}
		fmt.Fprintf(g.stderr, "sessionctl doctor: %s is unhealthy\n", doc.Path)
		return exitStatus(exitError)
	}
	return nil
}
