// Package pgtest gives tests a private PostgreSQL schema on the test server
// named by SESSIONSTORE_TEST_POSTGRES_URL (scripts/with-postgres.sh starts
// one): an empty one (NewSchema), or a migrated session store in a database
// of its own cloned from a template (NewStore). Without a server a test
// skips, except in CI (CI=true), where the PostgreSQL tests must run.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvURL names the environment variable that holds the server's URL.
const EnvURL = "SESSIONSTORE_TEST_POSTGRES_URL"

// ServerURL returns the test server's URL; without one t skips (fails in
// CI).
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: in CI the PostgreSQL tests must run (run them through scripts/with-postgres.sh, as ./test.sh does)", EnvURL)
		}
		t.Skipf("PostgreSQL tests skipped: %s is not set (scripts/with-postgres.sh starts a private server)", EnvURL)
	}
	return u
}

var admin struct {
	once sync.Once
	pool *pgxpool.Pool
	err  error
}

// NewSchema creates an empty schema for t and returns the server URL with
// that schema as its search_path. The schema is dropped when t ends.
func NewSchema(t testing.TB) string {
	t.Helper()
	u := ServerURL(t)
	admin.once.Do(func() { admin.pool, admin.err = pgxpool.New(context.Background(), u) })
	if admin.err != nil {
		t.Fatalf("connect to %s: %v", EnvURL, admin.err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	if _, err := admin.pool.Exec(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.pool.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatalf("parse %s: %v", EnvURL, err)
		}
		q := pu.Query()
		q.Set("search_path", schema)
		pu.RawQuery = q.Encode()
		return pu.String()
	}
	return u + " search_path=" + schema
}
