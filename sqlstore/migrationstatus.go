package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// MigrationStatus reads the migration state of the session store in the
// SQLite file at path without opening the store (which refuses a schema
// newer than this binary) and without changing or creating anything: the
// applied version, the latest version this binary knows, and goose's
// status of each migration. A file that is not a session store is
// store.ErrNotSessionStore; a missing file an error matching
// fs.ErrNotExist.
func MigrationStatus(ctx context.Context, path string) (current, latest int64, status []*goose.MigrationStatus, err error) {
	if latest, err = migrations.Latest(); err != nil {
		return 0, 0, nil, err
	}
	db, err := OpenInspect(path)
	if err != nil {
		return 0, 0, nil, err
	}
	defer db.Close()
	current, ok, err := SchemaVersionOf(ctx, db)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	if !ok {
		return 0, 0, nil, fmt.Errorf("%s: %w: no %s table", path, store.ErrNotSessionStore, migrations.TableName)
	}
	p, err := migrations.NewSQLiteProvider(db)
	if err != nil {
		return 0, 0, nil, err
	}
	status, err = p.Status(ctx)
	return current, latest, status, mapErr(err)
}

// SQLiteVersion returns the version of the SQLite library linked into
// this binary (modernc.org/sqlite's).
func SQLiteVersion(ctx context.Context) (string, error) {
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return v, err
}
