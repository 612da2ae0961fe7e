package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/store"
)

// WithReadOnly opens the store read-only, enforced by PostgreSQL itself:
// Open sets default_transaction_read_only=on on every connection of its
// pool, so that every transaction of the store (explicit or implicit) is a
// read-only transaction and the server refuses any write (SQLSTATE 25006,
// store.ErrReadOnly). The store runs no migration: the schema must be this
// binary's latest. With OpenPool the caller's pool must already set
// default_transaction_read_only=on (its RuntimeParams); OpenPool checks a
// connection and refuses a pool that does not. It is for inspection tools
// such as the web console.
func WithReadOnly(on bool) Option {
	return func(c *config) { c.readOnly = on }
}

// ReadOnly reports whether the store was opened with WithReadOnly.
func (s *Store) ReadOnly() bool { return s.cfg.readOnly }

// readOnlyParams sets the pool's runtime parameters of a read-only store.
func readOnlyParams(pc *pgxpool.Config) {
	pc.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
}

// checkReadOnly verifies, in place of migrating, that the pool's
// transactions are read-only and that the schema is the latest.
func (s *Store) checkReadOnly(ctx context.Context) error {
	var ro string
	if err := s.pool.QueryRow(ctx, "SHOW default_transaction_read_only").Scan(&ro); err != nil {
		return mapErr(err)
	}
	if ro != "on" {
		return store.Invalid("pool", "WithReadOnly needs a pool whose connections set default_transaction_read_only=on")
	}
	current, err := s.schemaState(ctx)
	if err != nil {
		return err
	}
	latest, err := migrations.LatestPostgres()
	if err != nil {
		return err
	}
	if current == 0 {
		return fmt.Errorf("%w: the schema holds no session store", store.ErrNotSessionStore)
	}
	if current < latest {
		return fmt.Errorf("pgstore: %w: the schema is at version %d and this binary needs %d; a read-only store cannot migrate it (open it once writable, or run sessionctl migrate up)",
			store.ErrReadOnly, current, latest)
	}
	return nil
}
