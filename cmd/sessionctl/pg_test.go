package main

import (
	"bytes"
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
	"github.com/agentstore/sessionstore/store/storetest"
)

// envPostgresURL names the PostgreSQL server of the tests, as in pgstore's
// tests: scripts/with-postgres.sh starts a private server and sets it;
// ./test.sh runs every test through it.
const envPostgresURL = "SESSIONSTORE_TEST_POSTGRES_URL"

// postgresURL returns the test server's URL. Without one the test skips,
// except in CI (CI=true), where the PostgreSQL tests must run.
func postgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envPostgresURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: in CI the PostgreSQL tests must run (run them through scripts/with-postgres.sh, as ./test.sh does)", envPostgresURL)
		}
		t.Skipf("PostgreSQL tests skipped: %s is not set (scripts/with-postgres.sh go test ./cmd/sessionctl starts a private server)", envPostgresURL)
	}
	if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		t.Fatalf("%s must be a postgres:// URL for the sessionctl tests", envPostgresURL)
	}
	return u
}

var pgAdmin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// newPGEnv is newTestEnv on PostgreSQL: a fresh, empty schema (named
// sessionctl) in a database of its own (dropped when t ends) and --db its
// URL with that schema as its search_path. seedFromTemplate swaps in a
// clone of a migrated template (internal/pgtest) when the test's first
// step would create a store there.
func newPGEnv(t *testing.T) *testEnv {
	t.Helper()
	postgresURL(t)
	seed := pgtest.NewSeedable(t, "sessionctl")
	return &testEnv{t: t, dir: t.TempDir(), db: seed.URL, clock: storetest.NewClock(), pg: true, pgSeed: seed}
}

// pgSchemaURL creates a fresh schema on the test server (dropped when tb
// ends) and returns the server URL with that schema as its search_path.
func pgSchemaURL(tb testing.TB) string {
	tb.Helper()
	u := postgresURL(tb)
	pgAdmin.once.Do(func() { pgAdmin.pool, pgAdmin.err = pgxpool.New(context.Background(), u) })
	if pgAdmin.err != nil {
		tb.Fatalf("connect to %s: %v", envPostgresURL, pgAdmin.err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "sessionctl_" + hex.EncodeToString(b[:])
	if _, err := pgAdmin.pool.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := pgAdmin.pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	pu, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	q := pu.Query()
	q.Set("search_path", schema)
	pu.RawQuery = q.Encode()
	return pu.String()
}

// envMaker makes a test's environment on one backend.
type envMaker func(t *testing.T) *testEnv

// bothBackends runs fn on SQLite and on PostgreSQL. fn receives the env
// constructor as its parameter newTestEnv, which shadows the SQLite one,
// so that a test body written for SQLite runs unchanged on both; golden
// files are shared, proving the output does not depend on the backend.
func bothBackends(t *testing.T, fn func(t *testing.T, newTestEnv envMaker)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, newTestEnv) })
	t.Run("postgres", func(t *testing.T) { fn(t, newPGEnv) })
}

// pgState dumps every table of the store's schema at url, one entry per
// table (its name, then its rows as text in order), to prove a command
// wrote nothing. A table with no rows still has an entry.
func pgState(t *testing.T, u string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, name := range tables {
		var dump string
		q := "SELECT coalesce(string_agg(r::text, E'\\n' ORDER BY r::text), '') FROM " + pgx.Identifier{name}.Sanitize() + " r"
		if err := conn.QueryRow(ctx, q).Scan(&dump); err != nil {
			t.Fatal(err)
		}
		m[":"+name] = []byte("table " + name + "\n" + dump)
	}
	return m
}

// pgExec runs a statement on the env's schema as the test's superuser.
func (e *testEnv) pgExec(sql string, args ...any) {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// storeBytesContain reports whether any stored row holds b (SQLite: the
// database file after a checkpoint; PostgreSQL: every table's rows).
func (e *testEnv) storeBytesContain(b []byte) bool {
	e.t.Helper()
	if e.pg {
		for _, v := range pgState(e.t, e.db) {
			if bytes.Contains(v, b) {
				return true
			}
		}
		return false
	}
	e.run("cleanup").want(e.t, 0) // checkpoint: everything is in the main file
	data, err := os.ReadFile(e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	return bytes.Contains(data, b)
}

// storeExists reports whether the env's database exists (the file, or any
// table in the PostgreSQL schema).
func (e *testEnv) storeExists() bool {
	e.t.Helper()
	if e.pg {
		return len(pgState(e.t, e.db)) > 0
	}
	_, err := os.Stat(e.db)
	return err == nil
}
