package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/migrations"
)

var backupSpec = spec{
	name: "backup",
	args: "FILE",
	about: `Writes a consistent copy of the database to FILE with VACUUM INTO: one read
transaction, so other processes may keep writing while it runs, and the
copy is compacted (no free pages, no WAL). The copy is then checked with
PRAGMA quick_check. FILE must not exist. Never copy a live database file
with cp: the WAL holds committed transactions the main file does not.`,
	examples: []string{
		"sessionctl backup /backups/sessions-$(date +%F).db",
	},
}

// backupJSON is the JSON document of backup.
type backupJSON struct {
	Source        string `json:"source"`
	Backup        string `json:"backup"`
	Bytes         int64  `json:"bytes"`
	SchemaVersion int64  `json:"schema_version"`
	QuickCheck    string `json:"quick_check"`
}

func runBackup(ctx context.Context, g *globals, args []string) int {
	sp := backupSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 1, 1); bad {
		return code
	}
	dest := pos[0]
	if err := g.mustExist(); err != nil {
		return g.fail(sp.name, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return g.fail(sp.name, fmt.Errorf("%s exists: remove it or choose another name", dest))
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return g.fail(sp.name, err)
	}
	if dir := filepath.Dir(dest); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return g.fail(sp.name, fmt.Errorf("directory %s does not exist", dir))
		}
	}
	doc, err := backup(ctx, g.db, dest)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	fmt.Fprintf(g.stdout, "backed up %s to %s: %s, schema version %d, quick_check %s\n",
		doc.Source, doc.Backup, humanBytes(doc.Bytes), doc.SchemaVersion, doc.QuickCheck)
	return exitOK
}

// backup runs VACUUM INTO dest on a connection to src (a read transaction:
// src is not written) and checks
// the copy. A failed copy is removed.
func backup(ctx context.Context, src, dest string) (doc backupJSON, err error) {
	doc = backupJSON{Source: src, Backup: dest}
	db, err := openRaw(src, false) // query_only would refuse VACUUM INTO
	if err != nil {
		return doc, err
	}
	defer db.Close()
	if v, ok, err := rawSchemaVersion(ctx, db); err != nil {
		return doc, fmt.Errorf("%s: %w", src, mapRawErr(err))
	} else if !ok {
		return doc, fmt.Errorf("%s is not a session store (no %s table)", src, migrations.TableName)
	} else {
		doc.SchemaVersion = v
	}
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		os.Remove(dest)
		return doc, fmt.Errorf("vacuum into %s: %w", dest, mapRawErr(err))
	}
	defer func() {
		if err != nil {
			os.Remove(dest)
		}
	}()
	copyDB, err := openRaw(dest, true)
	if err != nil {
		return doc, err
	}
	defer copyDB.Close()
	if err := copyDB.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&doc.QuickCheck); err != nil {
		return doc, fmt.Errorf("check %s: %w", dest, mapRawErr(err))
	}
	if doc.QuickCheck != "ok" {
		return doc, fmt.Errorf("the copy %s failed quick_check: %s", dest, doc.QuickCheck)
	}
	doc.Bytes = fileSize(dest)
	return doc, nil
}
