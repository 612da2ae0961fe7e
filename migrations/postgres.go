package migrations

import (
	"database/sql"
	"embed"
	"io/fs"

	"github.com/pressly/goose/v3"
)

//go:embed postgres/*.sql
var postgresFS embed.FS

// Postgres returns the PostgreSQL migration files. Each has the same
// version number as the SQLite file that makes the same schema step, so that
// one version number means one schema on both engines.
func Postgres() fs.FS {
	sub, err := fs.Sub(postgresFS, "postgres")
	if err != nil { // the directory is embedded: not reachable
		panic(err)
	}
	return sub
}

// NewPostgresProvider returns a goose provider that applies the PostgreSQL
// migrations to db, in the schema that is first on the connection's
// search_path. Pass goose.WithSessionLocker with a PostgreSQL session locker
// so that concurrent migrators wait for each other.
func NewPostgresProvider(db *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}, opts...)
	return goose.NewProvider(goose.DialectPostgres, db, Postgres(), opts...)
}

// LatestPostgres returns the highest PostgreSQL migration version this
// binary knows.
func LatestPostgres() (int64, error) { return latestIn(Postgres()) }

// Versions returns the migration versions of fsys in ascending order.
func Versions(fsys fs.FS) ([]int64, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(names))
	for _, name := range names { // Glob returns names sorted
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func latestIn(fsys fs.FS) (int64, error) {
	vs, err := Versions(fsys)
	if err != nil || len(vs) == 0 {
		return 0, err
	}
	return vs[len(vs)-1], nil
}
