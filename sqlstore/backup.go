package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/store"
)

// BackupMode is the file mode of a backup: readable and writable by its
// owner only, as export files are (a backup holds every session).
const BackupMode fs.FileMode = 0o600

// BackupOptions configure Backup.
type BackupOptions struct {
	// Replace lets the backup replace an existing file at dest; without
	// it an existing dest is refused (an error matching fs.ErrExist),
	// even one that appears while the backup runs.
	Replace bool
	// Progress, when not nil, is called at the start of each step and
	// after each batch of pages copied.
	Progress func(BackupProgress)
}

// BackupStep is a step of Backup.
type BackupStep int

// The steps of Backup, in order.
const (
	// BackupCounting: counting the rows of every table of the snapshot.
	BackupCounting BackupStep = iota + 1
	// BackupCopying: copying the pages of the snapshot.
	BackupCopying
	// BackupChecking: integrity_check of the copy and its row counts.
	BackupChecking
	// BackupSyncing: syncing the copy, putting it in place, syncing the
	// directory.
	BackupSyncing
)

// BackupProgress reports where Backup is. While copying, PagesDone of
// PagesTotal pages of PageSize bytes are copied (PagesTotal is 0 before
// the first batch).
type BackupProgress struct {
	Step                  BackupStep
	PagesDone, PagesTotal int64
	PageSize              int64
}

// BackupResult describes a backup taken.
type BackupResult struct {
	Source string `json:"source"`
	Backup string `json:"backup"`
	// Bytes is the size of the backup file.
	Bytes         int64 `json:"bytes"`
	SchemaVersion int64 `json:"schema_version"`
	// IntegrityCheck is integrity_check's verdict on the copy ("ok").
	IntegrityCheck string `json:"integrity_check"`
	// Tables and Rows count the copy's tables and their rows, the same
	// as the source's in the snapshot copied.
	Tables int   `json:"tables"`
	Rows   int64 `json:"rows"`
}

// Backup writes a consistent copy of the session store at src to dest:
// every page of one snapshot (one read transaction, so other processes
// and goroutines may keep writing while it runs), with SQLite's online
// backup, into a temporary file beside dest. The copy is then checked —
// integrity_check, and the row count of every table against the source's
// in the same snapshot — synced, put in place at dest, and the directory
// synced, before Backup returns. Nothing is left at dest or beside it when
// a step fails. The copy is one self-contained file (rollback journal
// mode, no -wal) with mode BackupMode (0600); it keeps the source's free
// pages.
//
// dest must not be empty or one of src's own files (see OwnFile): that is
// store.ErrInvalidInput. src must be a session store
// (store.ErrNotSessionStore otherwise).
func Backup(ctx context.Context, src, dest string, opts BackupOptions) (BackupResult, error) {
	res := BackupResult{Source: src, Backup: dest}
	if dest == "" {
		return res, store.Invalid("dest", "must not be empty")
	}
	if _, own := OwnFile(src, dest); own {
		return res, store.Invalid("dest", "is one of the database's own files")
	}
	if fi, err := os.Stat(src); err != nil {
		return res, err
	} else if fi.IsDir() {
		return res, store.Invalid("src", "is a directory")
	}
	switch fi, err := os.Lstat(dest); {
	case err == nil && fi.IsDir():
		return res, store.Invalid("dest", "is a directory")
	case err == nil && !opts.Replace:
		return res, fmt.Errorf("sqlstore: backup to %s: %w", dest, fs.ErrExist)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return res, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(BackupProgress) {}
	}
	tmp := filepath.Join(filepath.Dir(dest), fmt.Sprintf(".%s.backup-%d-%x", filepath.Base(dest), os.Getpid(), rand.Uint64()))
	var err error
	defer func() {
		if err != nil {
			for _, f := range Files(tmp) {
				os.Remove(f)
			}
		}
	}()
	// The copy is made in a file created with BackupMode: SQLite keeps
	// the mode of the file it opens, and gives its journal the same.
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, BackupMode)
	if err != nil {
		return res, err
	}
	if err = f.Close(); err != nil {
		return res, err
	}
	var counts []tableCount
	counts, err = snapshotCopy(ctx, src, tmp, &res, progress)
	if err != nil {
		return res, err
	}
	progress(BackupProgress{Step: BackupChecking})
	if err = checkCopy(ctx, tmp, counts, &res); err != nil {
		return res, err
	}
	progress(BackupProgress{Step: BackupSyncing})
	if err = syncFile(tmp); err != nil {
		return res, err
	}
	if opts.Replace {
		err = os.Rename(tmp, dest)
	} else {
		// A link fails if dest appeared meanwhile: never replace a file
		// without Replace.
		if err = os.Link(tmp, dest); err == nil {
			os.Remove(tmp)
		}
	}
	if err != nil {
		return res, fmt.Errorf("put the copy in place: %w", err)
	}
	if serr := syncDir(filepath.Dir(dest)); serr != nil {
		return res, fmt.Errorf("the copy %s is in place, but its directory could not be synced: %w", dest, serr)
	}
	res.Bytes = sizeOf(dest)
	return res, nil
}

// tableCount is the number of rows of one table.
type tableCount struct {
	table string
	rows  int64
}

// snapshotCopy copies every page of one snapshot of src to the file tmp
// with SQLite's online backup, and returns the row count of every table
// in that same snapshot: the read transaction that counts them is the
// one the backup reads.
func snapshotCopy(ctx context.Context, src, tmp string, res *BackupResult, progress func(BackupProgress)) ([]tableCount, error) {
	db, err := OpenInspect(src)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapErr(err))
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	v, ok, err := SchemaVersionOf(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s has no %s table", store.ErrNotSessionStore, src, versionTable)
	}
	res.SchemaVersion = v
	progress(BackupProgress{Step: BackupCounting})
	counts, err := countRows(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapErr(err))
	}
	var pageSize int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return nil, fmt.Errorf("%s: %w", src, mapErr(err))
	}
	progress(BackupProgress{Step: BackupCopying, PageSize: pageSize})
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return errors.New("the SQLite driver has no online backup")
		}
		bk, err := b.NewBackup("file:" + escapePath(tmp))
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(1024)
			if err != nil {
				bk.Finish()
				return err
			}
			total := int64(bk.PageCount())
			progress(BackupProgress{Step: BackupCopying, PagesDone: total - int64(bk.Remaining()), PagesTotal: total, PageSize: pageSize})
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
		return nil, fmt.Errorf("copy to %s: %w", tmp, mapErr(err))
	}
	return counts, nil
}

// checkCopy makes the copy at path a self-contained file (rollback
// journal mode: no -wal beside it), runs integrity_check on it and
// compares the row count of every table with want.
func checkCopy(ctx context.Context, path string, want []tableCount, res *BackupResult) error {
	db, err := openSide(path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode); err != nil {
		return fmt.Errorf("check the copy: %w", mapErr(err))
	}
	problems, err := integrityProblems(ctx, db, "integrity_check", 20)
	if err != nil {
		return fmt.Errorf("check the copy: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: the copy failed integrity_check: %s", store.ErrCorrupt, strings.Join(problems, "; "))
	}
	res.IntegrityCheck = "ok"
	conn, err := db.Conn(ctx)
	if err != nil {
		return mapErr(err)
	}
	defer conn.Close()
	got, err := countRows(ctx, conn)
	if err != nil {
		return fmt.Errorf("check the copy: %w", mapErr(err))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: the copy's row counts %v differ from the source's %v", store.ErrCorrupt, got, want)
	}
	res.Tables = len(got)
	for _, c := range got {
		res.Rows += c.rows
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
