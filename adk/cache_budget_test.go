package adk

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// TestIncrementalCacheStaysInBudget: sessions kept and extended by
// appends and continued gets never hold more decoded events in all than
// ReadCacheEvents; a session that outgrows it is read whole again, and
// every read is still the whole log.
func TestIncrementalCacheStaysInBudget(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqltest.FreshPath(t, "sessions.db"), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const budget = 12
	svc := NewWithOptions(st, Options{ReadCacheEvents: budget})
	check := func() {
		t.Helper()
		c := svc.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		sum := 0
		for _, e := range c.gets {
			sum += len(e.events)
		}
		if sum != c.events || c.events > budget {
			t.Fatalf("the cache holds %d events (counted %d), budget %d", sum, c.events, budget)
		}
	}
	for _, id := range []string{"a", "b"} {
		created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		h := created.Session
		for i := range 20 {
			if err := svc.AppendEvent(ctx, h, &session.Event{ID: fmt.Sprint("e", i), Author: "model"}); err != nil {
				t.Fatal(err)
			}
			check()
			got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: id})
			if err != nil {
				t.Fatal(err)
			}
			if n := got.Session.Events().Len(); n != i+1 {
				t.Fatalf("session %s: read %d events after %d appends", id, n, i+1)
			}
			check()
			h = got.Session
		}
	}
}
