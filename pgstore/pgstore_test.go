package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// envURL names the PostgreSQL server the tests use. scripts/with-postgres.sh
// starts a private server and sets it; ./test.sh runs the suite through it.
const envURL = "SESSIONSTORE_TEST_POSTGRES_URL"

// harness runs the conformance suite on PostgreSQL, one fresh database per
// test (created by NewLocation, dropped at the end of the test), so that
// tests stay independent and run in parallel on one server. Each is a
// clone of a migrated template database (internal/pgtest), as the SQLite
// suite's files are copies of a migrated template file.
var harness = storetest.Harness{
	NewLocation: pgtest.NewStore,
	Open: func(ctx context.Context, loc string, clock store.Clock) (store.Store, error) {
		return pgstore.Open(ctx, loc, pgstore.WithClock(clock))
	},
	OpenWith: func(ctx context.Context, loc string, clock store.Clock, o storetest.Options) (store.Store, error) {
		opts := []pgstore.Option{pgstore.WithClock(clock), pgstore.WithMaxSessions(o.MaxSessions)}
		if o.MaxUploadBytes > 0 {
			opts = append(opts, pgstore.WithMaxUploadBytes(o.MaxUploadBytes))
		}
		if o.TurnLease > 0 {
			opts = append(opts, pgstore.WithTurnLease(o.TurnLease))
		}
		if o.Durability != "" {
			var err error
			if loc, err = withParam(loc, "synchronous_commit", o.Durability); err != nil {
				return nil, err
			}
		}
		if o.NoAudit {
			opts = append(opts, pgstore.WithoutAudit())
		}
		if o.Sweeper != nil {
			opts = append(opts, pgstore.WithSweeper(*o.Sweeper))
		}
		if o.Keys != nil {
			opts = append(opts, pgstore.WithKeyRing(o.Keys))
		}
		if o.SearchEncrypted {
			opts = append(opts, pgstore.WithSearchEncrypted())
		}
		if o.NoIndexer {
			opts = append(opts, pgstore.WithBackgroundIndexer(false))
		}
		if o.ReadOnly {
			opts = append(opts, pgstore.WithReadOnly(true))
		}
		if o.EagerSearch {
			opts = append(opts, pgstore.WithEagerSearch())
		}
		if o.LargeSearchMin > 0 {
			opts = append(opts, pgstore.WithLargeSearchMin(o.LargeSearchMin))
		}
		return pgstore.Open(ctx, loc, opts...)
	},
	Exec: func(ctx context.Context, loc, query string) error {
		conn, err := pgx.Connect(ctx, loc)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, query)
		return err
	},
	Count: func(ctx context.Context, loc, query string) (int64, error) {
		conn, err := pgx.Connect(ctx, loc)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		var n int64
		err = conn.QueryRow(ctx, query).Scan(&n)
		return n, err
	},
}

func TestMain(m *testing.M) {
	storetest.RunHelperProcess(harness)
	code := m.Run()
	pgtest.DropTemplate()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	serverURL(t) // one clear skip (or, in CI, failure) for the whole suite
	storetest.Run(t, harness)
}

// serverURL returns the test server's URL. Without one the test skips,
// except in CI (CI=true), where the PostgreSQL tests must run.
func serverURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: in CI the PostgreSQL tests must run (run them through scripts/with-postgres.sh, as ./test.sh does)", envURL)
		}
		t.Skipf("PostgreSQL tests skipped: %s is not set (scripts/with-postgres.sh go test ./pgstore starts a private server)", envURL)
	}
	return u
}

var admin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// adminPool is the tests' own connection to the server, for creating and
// dropping schemas.
func adminPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := serverURL(t)
	admin.once.Do(func() { admin.pool, admin.err = pgxpool.New(context.Background(), u) })
	if admin.err != nil {
		t.Fatalf("connect to %s: %v", envURL, admin.err)
	}
	return admin.pool
}

// newSchema creates an empty schema for t and returns the server URL with
// that schema as its search_path. The schema is dropped when t ends.
func newSchema(t testing.TB) string {
	t.Helper()
	pool := adminPool(t)
	var b [8]byte
	rand.Read(b[:])
	schema := "storetest_" + hex.EncodeToString(b[:])
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, serverURL(t), schema)
}

// withSearchPath sets the search_path run-time parameter of a connection
// string (URL or key=value form).
func withSearchPath(t testing.TB, conn, schema string) string {
	t.Helper()
	u, err := withParam(conn, "search_path", schema)
	if err != nil {
		t.Fatalf("parse %s: %v", envURL, err)
	}
	return u
}

// withParam sets a parameter (a run-time parameter such as search_path, or
// a pgx pool setting such as pool_max_conns) of a connection string in URL
// or key=value form. The value must not need quoting in key=value form.
func withParam(conn, key, value string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return conn + " " + key + "=" + value, nil
}
