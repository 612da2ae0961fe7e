package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// A governed session: an allow-list, a budget, and every call checked and
// counted in one transaction.
func Example_governedSession() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         "agent-42",
		AuthorizedTools: []string{"read_file", "list_dir"},
		CallBudget:      2,
		TimeLimit:       time.Hour,
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range []string{"read_file", "delete_file", "list_dir", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "agent-42", Tools: []string{tool}})
		var budget *store.BudgetError
		switch {
		case errors.As(err, &budget):
			fmt.Printf("%s: %v (limit %d, used %d)\n", tool, err, budget.Limit, budget.Used)
		case err != nil:
			fmt.Printf("%s: %v\n", tool, err)
		default:
			fmt.Printf("%s: allowed, %d of %d\n", tool, s.CallsMade, s.CallBudget)
		}
	}
	// Output:
	// read_file: allowed, 1 of 2
	// delete_file: tool not authorized in session
	// list_dir: allowed, 2 of 2
	// read_file: session budget exceeded (limit 2, used 2)
}

// A request id makes a call safe to retry after a time-out: the retry
// returns the first outcome and consumes nothing more.
func Example_idempotentRetry() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	sess, _ := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "agent-1", AuthorizedTools: []string{"*"}, CallBudget: 10, TimeLimit: time.Hour,
	})
	req := store.UseRequest{SessionID: sess.ID, Tools: []string{"search"}, RequestID: "call-0001"}
	for range 3 {
		s, err := st.Governance().Use(ctx, req)
		fmt.Println(s.CallsMade, err)
	}
	// Output:
	// 1 <nil>
	// 1 <nil>
	// 1 <nil>
}

// Tests drive expiry and rate windows with an injected clock instead of
// sleeping.
func ExampleWithClock() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"), sqlstore.WithClock(func() time.Time { return now }))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	sess, _ := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: 10, TimeLimit: time.Minute,
	})
	now = now.Add(time.Minute)
	_, err = st.Governance().Use(ctx, store.UseRequest{SessionID: sess.ID, Tools: []string{"t"}})
	fmt.Println(err, errors.Is(err, store.ErrExpired))
	// Output:
	// session expired true
}
