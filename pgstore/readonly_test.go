package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

func TestReadOnlyRefusesWrites(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	w, err := pgstore.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := w.Governance().Create(ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"*"}, CallBudget: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conversations().Save(ctx, store.NewConversation("c/1")); err != nil {
		t.Fatal(err)
	}
	w.Close()

	ro, err := pgstore.Open(ctx, loc, pgstore.WithReadOnly(true))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	storetest.CheckReadOnly(t, ro, sess.ID, "c/1")
	if got, err := ro.Governance().Get(ctx, sess.ID); err != nil || got.CallsMade != 0 {
		t.Fatalf("Get after refused writes: %+v, %v", got, err)
	}
}

func TestReadOnlyOpenRefusals(t *testing.T) {
	ctx := context.Background()
	// An empty schema: nothing to read, and nothing may be created.
	loc := newSchema(t)
	if _, err := pgstore.Open(ctx, loc, pgstore.WithReadOnly(true)); !errors.Is(err, store.ErrNotSessionStore) {
		t.Errorf("empty schema: err = %v, want ErrNotSessionStore", err)
	}
	// OpenPool with a pool that writes.
	w, err := pgstore.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	pool, err := pgxpool.New(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pgstore.OpenPool(ctx, pool, pgstore.WithReadOnly(true)); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("OpenPool on a writable pool: err = %v, want ErrInvalidInput", err)
	}
}
