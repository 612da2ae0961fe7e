package adk_test

import (
	"context"
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
)

// TestADKServiceSuitePostgres runs ADK's suite against the service on the
// PostgreSQL backend, one fresh database per subtest: a clone of a
// migrated template database (internal/pgtest), as the SQLite services
// open copies of a migrated template file. It needs a server:
// scripts/with-postgres.sh sets SESSIONSTORE_TEST_POSTGRES_URL (test.sh
// runs this module through it); without one it skips, except in CI.
func TestADKServiceSuitePostgres(t *testing.T) {
	pgtest.ServerURL(t)
	ctx := context.Background()
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service {
			st, err := pgstore.Open(ctx, pgtest.NewStore(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return adk.New(st)
		})
}

// TestIncrementalGetIsExactPostgres is TestIncrementalGetIsExact on the
// PostgreSQL backend, which has no change stamp: every Get of a session
// the service holds asks the store for the events after those held.
func TestIncrementalGetIsExactPostgres(t *testing.T) {
	pgtest.ServerURL(t)
	ctx := context.Background()
	url := pgtest.NewStore(t)
	open := func(opts adk.Options) *adk.Service {
		st, err := pgstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return adk.NewWithOptions(st, opts)
	}
	testIncrementalExact(t, open(adk.Options{}), open(adk.Options{}), open(adk.Options{ReadCacheEvents: -1}))
}
