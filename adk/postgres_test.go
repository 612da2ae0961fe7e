package adk_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/pgstore"
)

// TestADKServiceSuitePostgres runs ADK's suite against the service on the
// PostgreSQL backend, one fresh schema per subtest. It needs a server:
// scripts/with-postgres.sh sets SESSIONSTORE_TEST_POSTGRES_URL (test.sh
// runs this module through it); without one it skips, except in CI.
func TestADKServiceSuitePostgres(t *testing.T) {
	base := os.Getenv("SESSIONSTORE_TEST_POSTGRES_URL")
	if base == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("SESSIONSTORE_TEST_POSTGRES_URL is not set: in CI the PostgreSQL tests must run")
		}
		t.Skip("SESSIONSTORE_TEST_POSTGRES_URL is not set (scripts/with-postgres.sh starts a private server)")
	}
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service {
			var b [8]byte
			rand.Read(b[:])
			schema := "adktest_" + hex.EncodeToString(b[:])
			if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
				t.Fatal(err)
			}
			st, err := pgstore.Open(ctx, withSearchPath(t, base, schema))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				st.Close()
				if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
					t.Errorf("drop schema: %v", err)
				}
			})
			return adk.New(st)
		})
}

// withSearchPath sets search_path in a connection string (URL or key=value).
func withSearchPath(t *testing.T, conn, schema string) string {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return conn + " search_path=" + schema
}
