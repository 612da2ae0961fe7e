package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/sqlstore"
)

// backupJSON is the JSON document of backup.
type backupJSON struct {
	sqlstore.BackupResult
	Replaced bool `json:"replaced"`
}

func runBackup(ctx context.Context, g *globals, args []string) error {
	sp := specs.Backup
	fs := g.newFlags(sp)
	force := fs.Bool("force", false, "replace FILE if it exists")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	dest := pos[0]
	if g.isPG() {
		return g.fail(sp.Name, errNotOnPostgres("backup", "use pg_dump (for example pg_dump --format=custom --schema="+g.pgSchemaHint()+" URL > FILE)"))
	}
	if dest == "" {
		return g.usageErr(sp.Name, "FILE must not be empty")
	}
	if err := g.mustExistFile(); err != nil {
		return g.fail(sp.Name, err)
	}
	if own, ok := sqlstore.OwnFile(g.db, dest); ok {
		return g.usageErr(sp.Name, "%s is the database's own file %s: choose a file outside the database", dest, own)
	}
	replaced := false
	switch fi, err := os.Lstat(dest); {
	case err == nil && fi.IsDir():
		return g.fail(sp.Name, fmt.Errorf("%s is a directory", dest))
	case err == nil && !*force:
		return g.fail(sp.Name, fmt.Errorf("%s exists: remove it, choose another name, or give --force", dest))
	case err == nil:
		replaced = true
	case !errors.Is(err, iofs.ErrNotExist):
		return g.fail(sp.Name, err)
	}
	dir := filepath.Dir(dest)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return g.fail(sp.Name, fmt.Errorf("directory %s does not exist", dir))
	}
	p := g.startProgress(true)
	res, err := sqlstore.Backup(ctx, g.db, dest, sqlstore.BackupOptions{Replace: *force, Progress: backupProgress(p)})
	if errors.Is(err, iofs.ErrExist) {
		err = fmt.Errorf("%s exists: remove it, choose another name, or give --force", dest)
	}
	if err != nil {
		return g.fail(sp.Name, err)
	}
	g.status.Clear()
	doc := backupJSON{BackupResult: res, Replaced: replaced}
	return g.result(sp.Name, g.say(*asJSON, doc, "backed up %s to %s: %s, schema version %d, integrity_check %s, %d rows in %d tables (as in the source)\n",
		humanize.Escape(doc.Source), humanize.Escape(doc.Backup), humanize.Bytes(doc.Bytes), doc.SchemaVersion, doc.IntegrityCheck, doc.Rows, doc.Tables))
}

// backupProgress shows the steps of a backup and the pages copied on the
// status line p (nil: none).
func backupProgress(p *statusline.Line) func(sqlstore.BackupProgress) {
	return func(bp sqlstore.BackupProgress) {
		switch bp.Step {
		case sqlstore.BackupCounting:
			p.Show("backup: counting the rows of every table")
		case sqlstore.BackupCopying:
			if bp.PagesTotal == 0 {
				p.Show("backup: copying the pages")
				return
			}
			p.Update(func() string {
				return fmt.Sprintf("backup: copied %d of %d pages, %s", bp.PagesDone, bp.PagesTotal,
					statusline.OfTotal(bp.PagesDone*bp.PageSize, bp.PagesTotal*bp.PageSize))
			})
		case sqlstore.BackupChecking:
			p.Show("backup: checking the copy (integrity_check, row counts)")
		case sqlstore.BackupSyncing:
			p.Show("backup: syncing the copy and putting it in place")
		}
	}
}
