package main

// The few places where sessionctl talks to SQLite itself: maintenance that
// needs the database engine rather than the store's API (integrity and
// foreign-key checks, online-backup copies, page counts, WAL checkpoints,
// the migration table of a file the store refuses to open).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// openRaw opens a one-connection pool on the existing file path (mode=rw
// never creates a file; a write-protected file opens read-only). With
// queryOnly every write is refused (PRAGMA query_only). A read-write
// connection rather than mode=ro is used so that closing it, as the last
// connection, removes the -wal and -shm files a read-only one would leave
// behind.
func openRaw(path string, queryOnly bool) (*sql.DB, error) {
	dsn := "file:" + escapeURIPath(path) + "?mode=rw&_pragma=busy_timeout(5000)"
	if queryOnly {
		dsn += "&_pragma=query_only(1)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// openRawReadOnly opens a one-connection, read-only pool on the existing
// file path that creates nothing beside it: without a -wal file the file
// is read as immutable (no -wal or -shm appears, and none is needed: the
// database file holds everything committed); with one (a process has the
// database open, or one that crashed left it), read-only through it.
func openRawReadOnly(path string) (*sql.DB, error) {
	dsn := "file:" + escapeURIPath(path) + "?mode=ro&_pragma=busy_timeout(5000)"
	if _, err := os.Stat(path + "-wal"); errors.Is(err, os.ErrNotExist) {
		dsn = "file:" + escapeURIPath(path) + "?mode=ro&immutable=1"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func escapeURIPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

// pageStats are the page counts of a database file.
type pageStats struct {
	PageSize  int64
	PageCount int64
	Freelist  int64
}

func readPageStats(ctx context.Context, db *sql.DB) (pageStats, error) {
	var p pageStats
	for _, q := range []struct {
		pragma string
		dst    *int64
	}{
		{"PRAGMA page_size", &p.PageSize},
		{"PRAGMA page_count", &p.PageCount},
		{"PRAGMA freelist_count", &p.Freelist},
	} {
		if err := db.QueryRowContext(ctx, q.pragma).Scan(q.dst); err != nil {
			return p, err
		}
	}
	return p, nil
}

// WALResult reports a checkpoint: WAL bytes before and after, and whether
// readers kept it from completing.
type WALResult struct {
	WALBytesBefore int64 `json:"wal_bytes_before"`
	WALBytesAfter  int64 `json:"wal_bytes_after"`
	Complete       bool  `json:"checkpoint_complete"`
	Vacuumed       bool  `json:"vacuumed"`
	VacuumedBytes  int64 `json:"vacuumed_bytes"`
}

// checkpoint copies the WAL into the database file and truncates it
// (PRAGMA wal_checkpoint(TRUNCATE)); with vacuum it first rewrites the file
// without its free pages. Other processes may keep using the database;
// their readers can keep the checkpoint from completing, which is reported,
// not an error.
func checkpoint(ctx context.Context, path string, vacuum bool) (WALResult, error) {
	r := WALResult{WALBytesBefore: fileSize(path + "-wal")}
	db, err := openRaw(path, false)
	if err != nil {
		return r, err
	}
	defer db.Close()
	before := fileSize(path)
	if vacuum {
		// In WAL mode VACUUM writes the new pages to the WAL; the
		// checkpoint below moves them into the file and truncates it.
		if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
			return r, fmt.Errorf("vacuum: %w", err)
		}
	}
	var busy, logFrames, checkpointed int64
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed)
	if err != nil {
		return r, fmt.Errorf("wal checkpoint: %w", err)
	}
	r.Complete = busy == 0
	r.WALBytesAfter = fileSize(path + "-wal")
	if vacuum {
		r.Vacuumed = true
		r.VacuumedBytes = max(0, before-fileSize(path))
	}
	return r, nil
}

// rawSchemaVersion reads the applied schema version of db without the
// store: ok is false when the file has no migration table (not a session
// store, or empty).
func rawSchemaVersion(ctx context.Context, db *sql.DB) (version int64, ok bool, err error) {
	var n int
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", migrations.TableName).Scan(&n)
	if err != nil || n == 0 {
		return 0, false, err
	}
	var v sql.NullInt64
	err = db.QueryRowContext(ctx, "SELECT max(version_id) FROM "+migrations.TableName+" WHERE is_applied").Scan(&v)
	if err != nil {
		return 0, false, err
	}
	return v.Int64, true, nil
}

// mapRawErr names the store sentinel of a driver error from a raw
// connection: a damaged or foreign file reads as store.ErrCorrupt.
func mapRawErr(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w: %w", store.ErrBusy, err)
	}
	return err
}
