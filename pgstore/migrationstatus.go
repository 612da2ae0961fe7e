package pgstore

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// MigrationStatus reads the migration state of the session store in the
// PostgreSQL schema of url (the first of its search_path) without opening
// the store and without changing anything: the applied version, the
// latest version this binary knows, and goose's status of each migration.
// A schema without a session store is store.ErrNotSessionStore.
func MigrationStatus(ctx context.Context, url string) (current, latest int64, status []*goose.MigrationStatus, err error) {
	info, err := Probe(ctx, url)
	if err != nil {
		return 0, 0, nil, err
	}
	if !info.HasStore {
		return 0, 0, nil, fmt.Errorf("schema %s: %w: no %s table", info.Schema, store.ErrNotSessionStore, migrations.TableName)
	}
	if latest, err = migrations.LatestPostgres(); err != nil {
		return 0, 0, nil, err
	}
	p, db, pool, err := NewMigrationProvider(ctx, url)
	if err != nil {
		return 0, 0, nil, err
	}
	defer pool.Close()
	defer db.Close()
	status, err = p.Status(ctx)
	return info.Version, latest, status, mapErr(err)
}
