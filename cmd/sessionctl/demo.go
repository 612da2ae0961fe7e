package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
)

func runDemo(ctx context.Context, g *globals, args []string) error {
	sp := specs.Demo
	fs := g.newFlags(sp)
	fresh := fs.Bool("fresh", false, "remove the database file (and its -wal, -shm, -writer.lock) first: only a session store no other process holds")
	yes := fs.Bool("yes", false, "with --fresh, also remove a database holding data the demo did not write")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *fresh && g.isPG() {
		return g.fail(sp.Name, errNotOnPostgres("demo --fresh", "drop and recreate the schema yourself"))
	}
	var existed bool
	switch err := g.mustExist(ctx); {
	case err == nil:
		existed = true
	case g.isPG():
		var none *errNoStore
		if !errors.As(err, &none) {
			return g.fail(sp.Name, err)
		}
	}
	if *yes && !*fresh {
		return g.usageErr(sp.Name, "--yes goes with --fresh")
	}
	if *fresh && existed {
		if err := removeForDemo(ctx, g.db, *yes); err != nil {
			return g.fail(sp.Name, err)
		}
		existed = false
	}
	st, err := g.openOrCreate(ctx)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	defer st.Close()
	out := g.stdout
	if existed {
		fmt.Fprintf(out, "database: %s (existing; the demo adds its sessions, --fresh starts over)\n", g.dbName())
	} else {
		fmt.Fprintf(out, "database: %s (new)\n", g.dbName())
	}
	res, err := demo.Seed(ctx, st)
	render.Demo(out, res, func(err error) string { r, _ := useRefusal(err); return r.kind })
	if err != nil {
		return g.fail(sp.Name, err)
	}
	id := res.Governed.Session.ID
	fmt.Fprintf(out, "\nnext: sessionctl --db %s show %s\n", clitext.ShellQuote(g.dbName()), id)
	return nil
}

// removeForDemo removes the database at path and the files beside it for
// demo --fresh (demo.Remove), its refusals in the command's words:
// nothing is removed when a check fails.
func removeForDemo(ctx context.Context, path string, yes bool) error {
	err := demo.Remove(ctx, path, yes)
	var notStore *demo.NotStoreError
	var foreign *demo.ForeignDataError
	var inUse *sqlstore.InUseError
	switch {
	case errors.As(err, &notStore) && notStore.Err != nil:
		return fmt.Errorf("%s is not a session store, demo --fresh does not remove it: %w", path, notStore.Err)
	case errors.As(err, &notStore):
		return fmt.Errorf("%s is not a session store (no %s table): demo --fresh does not remove it", path, migrations.TableName)
	case errors.As(err, &foreign):
		return fmt.Errorf("%s holds data the demo did not write (%s): give --yes as well to remove it, or choose another --db", path, strings.Join(foreign.Found, ", "))
	case errors.As(err, &inUse):
		return fmt.Errorf("%v: demo --fresh does not remove a database another process holds", inUse)
	}
	return err
}
