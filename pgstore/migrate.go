package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

const versionTable = migrations.TableName

// schemaState inspects the store's schema (the first existing schema of the
// search_path) before anything writes to it. It returns the applied
// version, 0 for a schema without tables, and refuses another
// application's tables and versions newer than this binary.
func (s *Store) schemaState(ctx context.Context) (int64, error) {
	var schema *string
	var encoding string
	err := s.pool.QueryRow(ctx, "SELECT current_schema(), current_setting('server_encoding')").Scan(&schema, &encoding)
	if err != nil {
		return 0, mapErr(err)
	}
	if schema == nil {
		return 0, store.Invalid("url", "the search_path names no existing schema")
	}
	if encoding != "UTF8" {
		// Ids and texts are UTF-8; ordering must compare UTF-8 bytes.
		return 0, store.Invalid("url", "the database encoding must be UTF8")
	}
	rows, err := s.pool.Query(ctx, "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()")
	if err != nil {
		return 0, mapErr(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, mapErr(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, mapErr(err)
	}
	if len(tables) == 0 {
		return 0, nil
	}
	hasVersion := false
	for _, t := range tables {
		hasVersion = hasVersion || t == versionTable
	}
	if !hasVersion {
		return 0, fmt.Errorf("%w: schema %q has tables but no %s table", store.ErrNotSessionStore, *schema, versionTable)
	}
	current, err := s.dbVersion(ctx)
	if err != nil {
		return 0, err
	}
	latest, err := migrations.LatestPostgres()
	if err != nil {
		return 0, err
	}
	if current > latest {
		return 0, &store.SchemaTooNewError{DatabaseVersion: current, BinaryVersion: latest}
	}
	return current, nil
}

// dbVersion returns the highest applied migration version (0 when none).
func (s *Store) dbVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, "SELECT coalesce(max(version_id), 0) FROM "+versionTable+" WHERE is_applied").Scan(&v)
	return v, mapErr(err)
}

// migrate brings the schema up to date with a goose Provider under goose's
// PostgreSQL session locker (an advisory lock named after the database and
// schema), so that of several processes opening a fresh schema one
// migrates and the others wait, then find nothing to do. An up-to-date
// schema is recognised without taking the lock.
func (s *Store) migrate(ctx context.Context) error {
	latest, err := migrations.LatestPostgres()
	if err != nil {
		return err
	}
	current, err := s.schemaState(ctx)
	if err != nil || current == latest {
		return err
	}
	p, db, err := s.provider(ctx, migrations.NewPostgresUpgradeProvider)
	if err != nil {
		return err
	}
	defer db.Close()
	results, upErr := p.Up(ctx)
	for _, r := range results {
		if r.Error == nil {
			s.cfg.logger.Info("pgstore: applied migration", "version", r.Source.Version, "duration", r.Duration)
		}
	}
	// Whatever happened, the schema must now be one this binary runs on.
	if _, err := s.schemaState(ctx); err != nil {
		return err
	}
	if upErr != nil {
		if v, err := s.dbVersion(ctx); err == nil && v == latest {
			return nil
		}
		return fmt.Errorf("pgstore: migrate: %w", mapErr(upErr))
	}
	return nil
}

// provider returns a goose Provider made by build (NewPostgresProvider or,
// to open the store, NewPostgresUpgradeProvider) on the store's pool with
// the session locker of the store's schema. The caller closes the *sql.DB
// (which returns its connections to the pool).
func (s *Store) provider(ctx context.Context, build func(*sql.DB, ...goose.ProviderOption) (*goose.Provider, error), opts ...goose.ProviderOption) (*goose.Provider, *sql.DB, error) {
	database, schema, err := s.identity(ctx)
	if err != nil {
		return nil, nil, err
	}
	h := fnv.New64a()
	h.Write([]byte("sessionstore migrations\x00" + database + "\x00" + schema))
	lockID := int64(h.Sum64() &^ (1 << 63))
	waitSecs := uint64(s.cfg.lockWait.Seconds())
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID), lock.WithLockTimeout(1, waitSecs))
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(s.pool)
	p, err := build(db, append([]goose.ProviderOption{goose.WithSessionLocker(locker)}, opts...)...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("pgstore: migrations: %w", err)
	}
	return p, db, nil
}

// SchemaVersion returns the schema's applied version and the latest version
// this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (current, latest int64, err error) {
	if s.closed.Load() {
		return 0, 0, store.ErrStoreClosed
	}
	latest, err = migrations.LatestPostgres()
	if err != nil {
		return 0, 0, err
	}
	current, err = s.dbVersion(ctx)
	return current, latest, err
}

// identity returns the names of the store's database and schema.
func (s *Store) identity(ctx context.Context) (database, schema string, err error) {
	err = s.pool.QueryRow(ctx, "SELECT current_database(), coalesce(current_schema(), '')").Scan(&database, &schema)
	return database, schema, mapErr(err)
}

// hash64 is a short stable name for a database and schema pair.
func hash64(database, schema string) string {
	h := fnv.New64a()
	h.Write([]byte(database + "\x00" + schema))
	return fmt.Sprintf("%016x", h.Sum64())
}
