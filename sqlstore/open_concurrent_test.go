package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestOpenWhileOthersClose opens and closes stores on one existing file
// from many goroutines, the way short-lived CLI processes do. A store that
// closes the last connection takes an exclusive lock for a moment
// (checkpoint, WAL removal); Open must wait for it (busy timeout), never
// fail with ErrBusy.
func TestOpenWhileOthersClose(t *testing.T) {
	skipShort(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "open.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "s", AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: 1 << 20, TimeLimit: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8*25)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				st, err := sqlstore.Open(ctx, path)
				if err != nil {
					errs <- fmt.Errorf("open: %w", err)
					continue
				}
				if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: "s", Tools: []string{"t"}}); err != nil {
					errs <- fmt.Errorf("use: %w", err)
				}
				st.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
