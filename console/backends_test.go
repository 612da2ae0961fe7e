package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// envPostgres names the PostgreSQL server of the tests (see
// scripts/with-postgres.sh).
const envPostgres = "SESSIONSTORE_TEST_POSTGRES_URL"

// backend opens stores of one kind on a location made per test.
type backend struct {
	name string
	// newLocation returns a fresh database (file path or URL).
	newLocation func(t testing.TB) string
	open        func(ctx context.Context, loc string, clock store.Clock, readOnly bool) (store.Store, error)
}

var sqliteBackend = backend{
	name:        "sqlite",
	newLocation: func(t testing.TB) string { return filepath.Join(t.TempDir(), "sessions.db") },
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
		if os.Getenv(envPostgres) == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not set: in CI the PostgreSQL tests must run (scripts/with-postgres.sh)", envPostgres)
			}
			t.Skipf("PostgreSQL tests skipped: %s is not set (scripts/with-postgres.sh go test ./console starts a private server)", envPostgres)
		}
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

var admin struct {
	pool *pgxpool.Pool
	err  error
}

func newSchema(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envPostgres)
	if admin.pool == nil && admin.err == nil {
		admin.pool, admin.err = pgxpool.New(context.Background(), u)
	}
	if admin.err != nil {
		t.Fatal(admin.err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "console_" + hex.EncodeToString(b[:])
	if _, err := admin.pool.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme == "" {
		return u + " search_path=" + schema
	}
	q := pu.Query()
	q.Set("search_path", schema)
	pu.RawQuery = q.Encode()
	return pu.String()
}
