package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// TestUseManyFirstLockWaitBounded: the statement for many calls of a
// batch without the lock-first step (pgstore.UseManyFirstSQL), run on a
// row another transaction holds, fails with lock_not_available (55P03)
// after its own lock wait, instead of waiting for the row: the batch can
// then rerun with the lock-first step. It does so whether the held row
// comes first or last among the statement's sessions (the lock wait is
// set before the join yields its first row). Without that setting, the
// statement waits for the row until the test's context ends, and the test
// fails.
func TestUseManyFirstLockWaitBounded(t *testing.T) {
	loc := newSchema(t)
	st := open(t, loc)
	ctx := context.Background()
	for _, id := range []string{"a-held", "m-free", "z-held"} {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: id, AgentID: "A", AuthorizedTools: []string{"read_file"}, CallBudget: 100, TimeLimit: time.Hour,
		}); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, held := range []string{"a-held", "z-held"} {
		t.Run(held, func(t *testing.T) {
			tx := holdRow(t, holder, held)
			defer tx.Rollback(ctx)
			ids := []string{"a-held", "m-free", "z-held"}
			now := time.Now()
			payloads := [][]byte{[]byte("p"), []byte("p"), []byte("p")}
			wait, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			use, err := conn.Begin(wait)
			if err != nil {
				t.Fatal(err)
			}
			defer use.Rollback(ctx)
			_, err = use.Exec(wait, pgstore.UseManyFirstSQL, now.UnixMilli(), ids, []string{"", "", ""},
				[]string{"read_file", "read_file", "read_file"}, payloads, "", []string{"{}", "{}", "{}"}, now.UnixMicro())
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "55P03" {
				t.Fatalf("statement on a held row: %v; want lock_not_available (55P03)", err)
			}
		})
	}
	// Nothing of the failed statements was written.
	for _, id := range []string{"a-held", "m-free", "z-held"} {
		wantCalls(t, st, map[string]int64{id: 0})
	}
}
