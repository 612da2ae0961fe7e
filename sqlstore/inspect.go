package sqlstore

// Side connections for maintenance that needs the database engine rather
// than the store's API: inspection (checks, the schema version of a file
// the store would refuse, page counts), online backup and checkpoints.
// None of them creates a file that does not exist.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
)

// sideBusyTimeout is the busy timeout of a side connection, in
// milliseconds.
const sideBusyTimeout = 5000

// openSide opens a one-connection pool on the existing file path (mode=rw
// never creates a file; a write-protected file opens read-only). With
// queryOnly every write is refused (PRAGMA query_only). A read-write
// connection rather than mode=ro is used so that closing it, as the last
// connection, removes the -wal and -shm files a read-only one would leave
// behind.
func openSide(path string, queryOnly bool) (*sql.DB, error) {
	dsn := fmt.Sprintf("file:%s?mode=rw&_pragma=busy_timeout(%d)", escapePath(path), sideBusyTimeout)
	if queryOnly {
		dsn += "&_pragma=query_only(1)"
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, mapErr(err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// openReadOnlySide opens a one-connection, read-only pool on the existing
// file path that creates nothing beside it: without a -wal file the file
// is read as immutable (no -wal or -shm appears, and none is needed: the
// database file holds everything committed); with one (a process has the
// database open, or one that crashed left it), read-only through it.
func openReadOnlySide(path string) (*sql.DB, error) {
	dsn := fmt.Sprintf("file:%s?mode=ro&_pragma=busy_timeout(%d)", escapePath(path), sideBusyTimeout)
	if _, err := os.Stat(path + "-wal"); errors.Is(err, os.ErrNotExist) {
		dsn = "file:" + escapePath(path) + "?mode=ro&immutable=1"
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, mapErr(err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// OpenInspect opens the existing SQLite file at path for reading past the
// store, as maintenance tools need (a one-connection pool that refuses
// every write): writable files through a query-only connection that
// removes its -wal and -shm files when it closes, files the store cannot
// write (see CheckWritable) read-only without creating anything beside
// them. It does not check that the file is a session store (see
// SchemaVersionOf). Errors of its queries map with MapError.
func OpenInspect(path string) (*sql.DB, error) {
	if CheckWritable(path) != nil {
		return openReadOnlySide(path)
	}
	return openSide(path, true)
}

// Queryer is what the inspection helpers query: a *sql.DB, *sql.Conn or
// *sql.Tx.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SchemaVersionOf is the one probe of whether a SQLite database is a
// session store, without the store (which refuses a newer schema): isStore
// is false when it has no migration table; version is the highest applied
// migration. Errors are mapped (MapError): a file that is not a SQLite
// database is store.ErrCorrupt.
func SchemaVersionOf(ctx context.Context, q Queryer) (version int64, isStore bool, err error) {
	var n int
	err = q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?", versionTable).Scan(&n)
	if err != nil || n == 0 {
		return 0, false, mapErr(err)
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT max(version_id) FROM "+versionTable+" WHERE is_applied").Scan(&v); err != nil {
		return 0, false, mapErr(err)
	}
	return v.Int64, true, nil
}

// SchemaVersionAt is SchemaVersionOf on the existing file at path, opened
// with OpenInspect.
func SchemaVersionAt(ctx context.Context, path string) (version int64, isStore bool, err error) {
	db, err := OpenInspect(path)
	if err != nil {
		return 0, false, err
	}
	defer db.Close()
	return SchemaVersionOf(ctx, db)
}

// TablesOf lists the tables of a SQLite database, without SQLite's own.
// Errors are mapped (MapError).
func TablesOf(ctx context.Context, q Queryer) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, mapErr(err)
		}
		out = append(out, name)
	}
	return out, mapErr(rows.Err())
}

// PageStats are the page counts of a database file and the sizes of its
// files.
type PageStats struct {
	PageSize  int64 // bytes per page
	PageCount int64 // pages of the database
	Freelist  int64 // free pages (VACUUM removes them)
	FileBytes int64 // the database file
	WALBytes  int64 // its -wal file (0 when there is none)
}

// ReadPageStats reads the page counts of the existing database at path
// without changing it.
func ReadPageStats(ctx context.Context, path string) (PageStats, error) {
	p := PageStats{FileBytes: sizeOf(path), WALBytes: sizeOf(path + "-wal")}
	db, err := OpenInspect(path)
	if err != nil {
		return p, err
	}
	defer db.Close()
	for _, q := range []struct {
		pragma string
		dst    *int64
	}{
		{"PRAGMA page_size", &p.PageSize},
		{"PRAGMA page_count", &p.PageCount},
		{"PRAGMA freelist_count", &p.Freelist},
	} {
		if err := db.QueryRowContext(ctx, q.pragma).Scan(q.dst); err != nil {
			return p, mapErr(err)
		}
	}
	return p, nil
}

// CheckpointResult reports a checkpoint: WAL bytes before and after,
// whether readers kept it from completing, and what a vacuum freed.
type CheckpointResult struct {
	WALBytesBefore int64 `json:"wal_bytes_before"`
	WALBytesAfter  int64 `json:"wal_bytes_after"`
	Complete       bool  `json:"checkpoint_complete"`
	Vacuumed       bool  `json:"vacuumed"`
	VacuumedBytes  int64 `json:"vacuumed_bytes"`
}

// Checkpoint copies the WAL of the existing database at path into the
// database file and truncates it (PRAGMA wal_checkpoint(TRUNCATE)); with
// vacuum it first rewrites the file without its free pages. Other
// processes may keep using the database; their readers can keep the
// checkpoint from completing, which is reported (Complete false), not an
// error. A vacuumed file is in incremental auto-vacuum mode afterwards.
func Checkpoint(ctx context.Context, path string, vacuum bool) (CheckpointResult, error) {
	r := CheckpointResult{WALBytesBefore: sizeOf(path + "-wal")}
	db, err := openSide(path, false)
	if err != nil {
		return r, err
	}
	defer db.Close()
	before := sizeOf(path)
	if vacuum {
		// In WAL mode VACUUM writes the new pages to the WAL; the
		// checkpoint below moves them into the file and truncates it.
		// The rewritten file is in incremental auto-vacuum mode, as new
		// files are, so that sweeps can give pages back afterwards.
		if _, err := db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
			return r, fmt.Errorf("vacuum: %w", mapErr(err))
		}
		if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
			return r, fmt.Errorf("vacuum: %w", mapErr(err))
		}
	}
	var busy, logFrames, checkpointed int64
	err = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed)
	if err != nil {
		return r, fmt.Errorf("wal checkpoint: %w", mapErr(err))
	}
	r.Complete = busy == 0
	r.WALBytesAfter = sizeOf(path + "-wal")
	if vacuum {
		r.Vacuumed = true
		r.VacuumedBytes = max(0, before-sizeOf(path))
	}
	return r, nil
}
