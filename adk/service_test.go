package adk_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
)

func TestMain(m *testing.M) {
	runHelperProcess()
	code := m.Run()
	sqltest.Cleanup()
	pgtest.DropTemplate()
	os.Exit(code)
}

// openService opens a service on a fresh store (a copy of the migrated
// template: migrating a new file is the dearest part of a short test under
// the race detector), closed at test end.
func openService(t testing.TB) (*adk.Service, string) {
	t.Helper()
	path := sqltest.FreshPath(t, "sessions.db")
	svc, err := adk.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc, path
}

// TestADKServiceSuite runs ADK's own conformance suite for session
// services against this one.
func TestADKServiceSuite(t *testing.T) {
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service {
			svc, _ := openService(t)
			return svc
		})
}

func TestCloseOnlyClosesOwnedStore(t *testing.T) {
	svc, _ := openService(t)
	borrowed := adk.New(svc.Store())
	if err := borrowed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Store().HealthCheck(context.Background()); err != nil {
		t.Fatalf("closing a service made with New closed the store: %v", err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Store().HealthCheck(context.Background()); err == nil {
		t.Fatal("closing a service made with Open left the store open")
	}
}

func wantIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
