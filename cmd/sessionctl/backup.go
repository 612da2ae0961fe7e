package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/migrations"
)

var backupSpec = spec{
	name: "backup",
	args: "FILE",
	about: `Writes a consistent copy of the database to FILE: every page of one
snapshot (one read transaction, so other processes may keep writing while
it runs), with SQLite's online backup, into a temporary file beside FILE.
The copy is then checked — PRAGMA integrity_check, and the row count of
every table against the source's in the same snapshot — synced, renamed to
FILE, and the directory synced, before backup reports success; a copy that
fails a check is removed. The copy is one self-contained file (rollback
journal mode, no -wal); it keeps the source's free pages (cleanup --vacuum
first for a compact copy).

FILE must not be empty, must not be one of the database's own files (the
database, its -wal, -shm, -journal or -writer.lock), and must not exist
unless --force is given. Never copy a live database file with cp: the WAL
holds committed transactions the main file does not.

When stderr is a terminal, a status line shows the step running and the
pages copied of the total.

Not supported on PostgreSQL (exit status 1): back the store's schema up
with the server's own tools, e.g. pg_dump --schema=NAME, or continuous
archiving.`,
	examples: []string{
		"sessionctl backup /backups/sessions-$(date +%F).db",
		"sessionctl backup --force /backups/sessions-latest.db",
	},
}

// backupJSON is the JSON document of backup.
type backupJSON struct {
	Source         string `json:"source"`
	Backup         string `json:"backup"`
	Bytes          int64  `json:"bytes"`
	SchemaVersion  int64  `json:"schema_version"`
	IntegrityCheck string `json:"integrity_check"`
	Tables         int    `json:"tables"`
	Rows           int64  `json:"rows"`
	Replaced       bool   `json:"replaced"`
}

// dbFileSuffixes name the files of a SQLite database at path: path itself
// and the files SQLite and the store keep beside it.
var dbFileSuffixes = []string{"", "-wal", "-shm", "-journal", "-writer.lock"}

func runBackup(ctx context.Context, g *globals, args []string) error {
	sp := backupSpec
	fs := g.newFlags(sp)
	force := fs.Bool("force", false, "replace FILE if it exists")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 1, 1); err != nil {
		return err
	}
	dest := pos[0]
	if g.isPG() {
		return g.fail(sp.name, errNotOnPostgres("backup", "use pg_dump (for example pg_dump --format=custom --schema="+g.pgSchemaHint()+" URL > FILE)"))
	}
	if dest == "" {
		return g.usageErr(sp.name, "FILE must not be empty")
	}
	if err := g.mustExistFile(); err != nil {
		return g.fail(sp.name, err)
	}
	if own, ok := ownFile(g.db, dest); ok {
		return g.usageErr(sp.name, "%s is the database's own file %s: choose a file outside the database", dest, own)
	}
	replaced := false
	switch fi, err := os.Lstat(dest); {
	case err == nil && fi.IsDir():
		return g.fail(sp.name, fmt.Errorf("%s is a directory", dest))
	case err == nil && !*force:
		return g.fail(sp.name, fmt.Errorf("%s exists: remove it, choose another name, or give --force", dest))
	case err == nil:
		replaced = true
	case !errors.Is(err, iofs.ErrNotExist):
		return g.fail(sp.name, err)
	}
	dir := filepath.Dir(dest)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return g.fail(sp.name, fmt.Errorf("directory %s does not exist", dir))
	}
	doc, err := backup(ctx, g.db, dest, *force, g.startProgress(true))
	if err != nil {
		return g.fail(sp.name, err)
	}
	g.status.clear()
	doc.Replaced = replaced
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return nil
	}
	fmt.Fprintf(g.stdout, "backed up %s to %s: %s, schema version %d, integrity_check %s, %d rows in %d tables (as in the source)\n",
		esc(doc.Source), esc(doc.Backup), humanBytes(doc.Bytes), doc.SchemaVersion, doc.IntegrityCheck, doc.Rows, doc.Tables)
	return nil
}

// ownFile reports whether dest names one of the files of the database at
// db (the same path, through any symbolic link of its directory, or the
// same file through any link), and which.
func ownFile(db, dest string) (string, bool) {
	destPath := resolvedPath(dest)
	destFI, destErr := os.Stat(dest)
	for _, suffix := range dbFileSuffixes {
		own := db + suffix
		if resolvedPath(own) == destPath {
			return filepath.Base(own), true
		}
		if fi, err := os.Stat(own); err == nil && destErr == nil && os.SameFile(fi, destFI) {
			return filepath.Base(own), true
		}
	}
	return "", false
}

// resolvedPath is path made absolute, with the symbolic links of its
// directory resolved (the file itself may not exist).
func resolvedPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	dir, base := filepath.Split(abs)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(d, base)
	}
	return abs
}

// backup copies the database at src to dest through a temporary file
// beside dest, checks the copy and renames it into place (replacing dest
// only with force), then syncs the directory. Nothing is left at dest or
// beside it when any step fails. Each step and the pages copied are
// reported on the status line p (nil: none).
func backup(ctx context.Context, src, dest string, force bool, p *progress) (doc backupJSON, err error) {
	doc = backupJSON{Source: src, Backup: dest}
	tmp := filepath.Join(filepath.Dir(dest), fmt.Sprintf(".%s.backup-%d-%x", filepath.Base(dest), os.Getpid(), rand.Uint64()))
	defer func() {
		if err != nil {
			for _, suffix := range dbFileSuffixes {
				os.Remove(tmp + suffix)
			}
		}
	}()
	counts, err := snapshotCopy(ctx, src, tmp, &doc, p)
	if err != nil {
		return doc, err
	}
	p.show("backup: checking the copy (integrity_check, row counts)")
	if err := checkCopy(ctx, tmp, counts, &doc); err != nil {
		return doc, err
	}
	p.show("backup: syncing the copy and putting it in place")
	if err := syncFile(tmp); err != nil {
		return doc, err
	}
	if force {
		err = os.Rename(tmp, dest)
	} else {
		// A link fails if dest appeared meanwhile: never replace a file
		// without --force.
		if err = os.Link(tmp, dest); err == nil {
			os.Remove(tmp)
		}
	}
	if err != nil {
		return doc, fmt.Errorf("put the copy in place: %w", err)
	}
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return doc, fmt.Errorf("the copy %s is in place, but its directory could not be synced: %w", dest, err)
	}
	doc.Bytes = fileSize(dest)
	return doc, nil
}

// tableCount is the number of rows of one table.
type tableCount struct {
	table string
	rows  int64
}

// snapshotCopy copies every page of one snapshot of src to the new file
// tmp with SQLite's online backup, and returns the row count of every
// table in that same snapshot: the read transaction that counts them is
// the one the backup reads. The pages copied are reported on p.
func snapshotCopy(ctx context.Context, src, tmp string, doc *backupJSON, p *progress) ([]tableCount, error) {
	db, err := openRaw(src, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, mapRawErr(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, mapRawErr(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	v, ok, err := rawSchemaVersionConn(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapRawErr(err))
	}
	if !ok {
		return nil, fmt.Errorf("%s is not a session store (no %s table)", src, migrations.TableName)
	}
	doc.SchemaVersion = v
	p.show("backup: counting the rows of every table")
	counts, err := countRows(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapRawErr(err))
	}
	var pageSize int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapRawErr(err))
	}
	p.show("backup: copying the pages")
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver has no online backup")
		}
		bk, err := b.NewBackup("file:" + escapeURIPath(tmp))
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(1024)
			if err != nil {
				bk.Finish()
				return err
			}
			p.update(func() string {
				total := int64(bk.PageCount())
				done := total - int64(bk.Remaining())
				return fmt.Sprintf("backup: copied %d of %d pages, %s", done, total, ofTotal(done*pageSize, total*pageSize))
			})
			if !more {
				break
			}
			if err := ctx.Err(); err != nil {
				bk.Finish()
				return err
			}
		}
		return bk.Finish()
	})
	if err != nil {
		return nil, fmt.Errorf("copy to %s: %w", tmp, mapRawErr(err))
	}
	return counts, nil
}

// checkCopy makes the copy at path a self-contained file (rollback
// journal mode: no -wal beside it), runs integrity_check on it and
// compares the row count of every table with want.
func checkCopy(ctx context.Context, path string, want []tableCount, doc *backupJSON) error {
	db, err := openRaw(path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		return fmt.Errorf("check the copy: %w", mapRawErr(err))
	}
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check(20)")
	if err != nil {
		return fmt.Errorf("check the copy: %w", mapRawErr(err))
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return fmt.Errorf("check the copy: %w", mapRawErr(err))
		}
		problems = append(problems, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check the copy: %w", mapRawErr(err))
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return fmt.Errorf("the copy failed integrity_check: %s", strings.Join(problems, "; "))
	}
	doc.IntegrityCheck = "ok"
	conn, err := db.Conn(ctx)
	if err != nil {
		return mapRawErr(err)
	}
	defer conn.Close()
	got, err := countRows(ctx, conn)
	if err != nil {
		return fmt.Errorf("check the copy: %w", mapRawErr(err))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("the copy's row counts %v differ from the source's %v", got, want)
	}
	doc.Tables = len(got)
	for _, c := range got {
		doc.Rows += c.rows
	}
	return nil
}

// countRows counts the rows of every table, in name order.
func countRows(ctx context.Context, conn *sql.Conn) ([]tableCount, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
	if err != nil {
		return nil, err
	}
	var out []tableCount
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, tableCount{table: name})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		q := `SELECT count(*) FROM "` + strings.ReplaceAll(out[i].table, `"`, `""`) + `"`
		if err := conn.QueryRowContext(ctx, q).Scan(&out[i].rows); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rawSchemaVersionConn is rawSchemaVersion on one connection (inside its
// transaction).
func rawSchemaVersionConn(ctx context.Context, conn *sql.Conn) (version int64, ok bool, err error) {
	var n int
	err = conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", migrations.TableName).Scan(&n)
	if err != nil || n == 0 {
		return 0, false, err
	}
	var v sql.NullInt64
	err = conn.QueryRowContext(ctx, "SELECT max(version_id) FROM "+migrations.TableName+" WHERE is_applied").Scan(&v)
	if err != nil {
		return 0, false, err
	}
	return v.Int64, true, nil
}

// syncFile flushes the file at path to stable storage.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncDir flushes a directory's entries (a file created or renamed in it)
// to stable storage.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil // directories cannot be synced on this platform
	}
	return err
}
