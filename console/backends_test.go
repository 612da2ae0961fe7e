package console_test

import (
	"context"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// backend opens stores of one kind on a location made per test.
type backend struct {
	name string
	// newLocation returns a fresh database (file path or URL).
	newLocation func(t testing.TB) string
	open        func(ctx context.Context, loc string, clock store.Clock, readOnly bool) (store.Store, error)
}

var sqliteBackend = backend{
	name:        "sqlite",
	newLocation: func(t testing.TB) string { return sqltest.FreshPath(t, "sessions.db") },
	open: func(ctx context.Context, loc string, clock store.Clock, readOnly bool) (store.Store, error) {
		return sqlstore.Open(ctx, loc, sqlstore.WithClock(clock), sqlstore.WithReadOnly(readOnly))
	},
}

var postgresBackend = backend{
	name:        "postgres",
	newLocation: newSchema,
	open: func(ctx context.Context, loc string, clock store.Clock, readOnly bool) (store.Store, error) {
		return pgstore.Open(ctx, loc, pgstore.WithClock(clock), pgstore.WithReadOnly(readOnly))
	},
}

// eachBackend runs fn on SQLite and on PostgreSQL (skipped without a
// server outside CI; in CI it must run).
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteBackend) })
	t.Run("postgres", func(t *testing.T) {
		pgtest.ServerURL(t) // skips without a server (fails in CI)
		fn(t, postgresBackend)
	})
}

// seeded populates a fresh database of b with the fixture and returns it
// opened read-only, with the fixture's location.
func seeded(t *testing.T, b backend) (store.Store, fixture, string) {
	t.Helper()
	ctx := context.Background()
	loc := b.newLocation(t)
	clock := storetest.NewClock()
	w, err := b.open(ctx, loc, clock.Now, false)
	if err != nil {
		t.Fatal(err)
	}
	stale := staleTurn(t, func() (store.Store, error) { return b.open(ctx, loc, clock.Now, false) })
	f := populate(t, w, clock)
	f.StaleRuntime = stale
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err := b.open(ctx, loc, clock.Now, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro, f, loc
}

// newSchema is a private PostgreSQL database for t holding a migrated,
// empty store: a clone of a template database (internal/pgtest), as the
// SQLite locations are copies of a migrated template file.
func newSchema(t testing.TB) string { return pgtest.NewStore(t) }
