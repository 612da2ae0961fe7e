package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestReadTransactionsNeverWaitForEachOther: many more concurrent
// transactional reads than the store has read connections, on a store that
// has prepared nothing yet. A read transaction that prepared its statements
// on the pool (a second connection) while holding one waited forever once
// every connection was held that way.
func TestReadTransactionsNeverWaitForEachOther(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "reads.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Save(ctx, store.Conversation{ID: "c1"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for round := range 5 {
		st, err := sqlstore.Open(ctx, path, sqlstore.WithReaders(2))
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				if _, err := st.Conversations().Load(cctx, "c1"); err != nil {
					t.Errorf("round %d: Load: %v", round, err)
				}
			})
		}
		wg.Wait()
		cancel()
		st.Close()
	}
}
