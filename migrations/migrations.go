// Package migrations holds the schema of the session store as numbered
// goose SQL files, embedded in the binary: the SQLite files at the top, the
// PostgreSQL files (the same versions, spelled for PostgreSQL) under
// postgres/. One file per schema step; a landed file is never edited, a
// change is a new file in both folders.
//
// Apply them with NewSQLiteProvider or NewPostgresProvider, which use
// goose's Provider API (no global registry, no global state).
package migrations

import (
	"database/sql"
	"embed"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed *.sql
var sqliteFS embed.FS

// SQLite returns the SQLite migration files.
func SQLite() fs.FS { return sqliteFS }

// TableName is the goose version table of the store.
const TableName = "goose_db_version"

// NewSQLiteProvider returns a goose provider that applies the SQLite
// migrations to db. db must have more than one usable connection: goose
// holds one while it runs.
func NewSQLiteProvider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}, opts...)
	return goose.NewProvider(goose.DialectSQLite3, db, sqliteFS, opts...)
}

// Latest returns the highest migration version this binary knows.
func Latest() (int64, error) {
	sources, err := fs.Glob(sqliteFS, "*.sql")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, name := range sources {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return 0, err
		}
		latest = max(latest, v)
	}
	return latest, nil
}
