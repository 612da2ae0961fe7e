package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// TestHealthCheckReadOnly: a store whose transactions cannot write (here
// every transaction of its connections is read-only, as on a hot standby
// or with default_transaction_read_only) opens on an up-to-date schema and
// reads, but HealthCheck reports ErrReadOnly instead of nil, as the first
// write would. On a writable store HealthCheck is nil and changes nothing.
func TestHealthCheckReadOnly(t *testing.T) {
	ctx := context.Background()
	loc := pgtest.NewStore(t)
	rw, err := pgstore.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Governance().Create(ctx, store.CreateRequest{ID: "keep", AgentID: "a", TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := rw.HealthCheck(ctx); err != nil {
		t.Fatalf("HealthCheck of a writable store: %v", err)
	}
	before, _, err := rw.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rw.Close()

	roLoc, err := withParam(loc, "default_transaction_read_only", "on")
	if err != nil {
		t.Fatal(err)
	}
	ro, err := pgstore.Open(ctx, roLoc)
	if err != nil {
		if errors.Is(err, store.ErrReadOnly) {
			t.Skipf("the read-only store is refused at open already: %v", err)
		}
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Governance().Get(ctx, "keep"); err != nil {
		t.Fatalf("read on the read-only store: %v", err)
	}
	err = ro.HealthCheck(ctx)
	if !errors.Is(err, store.ErrReadOnly) || !errors.Is(err, store.ErrStorage) {
		t.Fatalf("HealthCheck of a store that cannot write: %v, want ErrReadOnly", err)
	}
	_, err = ro.Governance().Create(ctx, store.CreateRequest{ID: "new", AgentID: "a", TimeLimit: time.Hour})
	if !errors.Is(err, store.ErrReadOnly) {
		t.Fatalf("write on the read-only store: %v, want ErrReadOnly", err)
	}
	if after, _, err := ro.SchemaVersion(ctx); err != nil || after != before {
		t.Fatalf("schema version %d, %v after the probe; want %d", after, err, before)
	}
}
