package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// IsURL reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a file path, so that a tool taking either
// (sessionctl --db) can choose the backend.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// NewMigrationProvider returns a goose Provider on the database at url (the
// store's schema: the first of its search_path), with the store's session
// locker, for tools that show migration status or step through
// migrations. The caller closes the returned *sql.DB, then the pool.
func NewMigrationProvider(ctx context.Context, url string, opts ...goose.ProviderOption) (*goose.Provider, *sql.DB, *pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", store.Invalid("url", "not a valid PostgreSQL connection string"), err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, nil, nil, mapErr(err)
	}
	s := &Store{cfg: defaultConfig(), pool: pool}
	p, db, err := s.provider(ctx, migrations.NewPostgresProvider, opts...)
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return p, db, pool, nil
}
