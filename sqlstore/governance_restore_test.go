package sqlstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

func openRestoreStores(t *testing.T) (src, dst *sqlstore.Store, clock *storetest.Clock) {
	t.Helper()
	ctx := context.Background()
	clock = storetest.NewClock()
	var err error
	src, err = sqlstore.Open(ctx, filepath.Join(t.TempDir(), "src.db"), sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	dst, err = sqlstore.Open(ctx, filepath.Join(t.TempDir(), "dst.db"), sqlstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	return src, dst, clock
}

func TestGovernanceRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	src, dst, clock := openRestoreStores(t)
	gov := src.Governance()
	a, err := gov.Create(ctx, store.CreateRequest{ID: "a", AgentID: "ag", AuthorizedTools: []string{"t"},
		CallBudget: 5, RateLimit: 3, RateWindow: time.Minute, TimeLimit: time.Hour,
		DelegationChain: []string{"root"}, AuthorizedCredentials: []string{"c"}, DeclaredIntent: "x"})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := gov.Use(ctx, store.UseRequest{SessionID: a.ID, Tools: []string{"t", "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Create(ctx, store.CreateRequest{ID: "b", AgentID: "ag", AuthorizedTools: []string{"*"}, CallBudget: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Close(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	page, err := gov.List(ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := dst.Governance().(*sqlstore.Governance).Restore(ctx, store.RestoreRequest{Sessions: page.Items})
	if err != nil || n != 2 {
		t.Fatalf("Restore = %d, %v; want 2, nil", n, err)
	}
	got, err := dst.Governance().List(ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Items, page.Items) {
		t.Fatalf("restored sessions differ:\n got %+v\nwant %+v", got.Items, page.Items)
	}
	// The counters carry on: 3 calls left of 5, rate window holds 2 of 3.
	if _, err := dst.Governance().Use(ctx, store.UseRequest{SessionID: "a", Tools: []string{"t", "t"}}); !errors.Is(err, store.ErrRateLimited) {
		t.Fatalf("Use after restore = %v, want ErrRateLimited", err)
	}
	if s, err := dst.Governance().Use(ctx, store.UseRequest{SessionID: "a", Tools: []string{"t"}}); err != nil || s.CallsMade != 3 {
		t.Fatalf("Use after restore = %+v, %v; want 3 calls made", s, err)
	}
	if _, err := dst.Governance().Use(ctx, store.UseRequest{SessionID: "b", Tools: []string{"t"}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Use of restored closed session = %v, want ErrClosed", err)
	}
}

func TestGovernanceRestoreConflictAndSkip(t *testing.T) {
	ctx := context.Background()
	src, dst, _ := openRestoreStores(t)
	for _, id := range []string{"a", "b"} {
		if _, err := src.Governance().Create(ctx, store.CreateRequest{ID: id, AgentID: "ag", CallBudget: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dst.Governance().Create(ctx, store.CreateRequest{ID: "b", AgentID: "other", CallBudget: 9}); err != nil {
		t.Fatal(err)
	}
	page, err := src.Governance().List(ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	restore := dst.Governance().(*sqlstore.Governance).Restore
	if n, err := restore(ctx, store.RestoreRequest{Sessions: page.Items}); !errors.Is(err, store.ErrConflict) || n != 0 {
		t.Fatalf("Restore over an existing id = %d, %v; want 0, ErrConflict", n, err)
	}
	if _, err := dst.Governance().Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed restore wrote session a: %v", err)
	}
	n, err := restore(ctx, store.RestoreRequest{Sessions: page.Items, SkipExisting: true})
	if err != nil || n != 1 {
		t.Fatalf("Restore skipping existing = %d, %v; want 1, nil", n, err)
	}
	if b, err := dst.Governance().Get(ctx, "b"); err != nil || b.AgentID != "other" || b.CallBudget != 9 {
		t.Fatalf("skipped session b changed: %+v, %v", b, err)
	}
}

func TestGovernanceRestoreInvalid(t *testing.T) {
	ctx := context.Background()
	src, dst, _ := openRestoreStores(t)
	good, err := src.Governance().Create(ctx, store.CreateRequest{ID: "ok", AgentID: "ag", CallBudget: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*store.Session){
		"empty id":            func(s *store.Session) { s.ID = "" },
		"empty agent":         func(s *store.Session) { s.AgentID = "" },
		"calls over budget":   func(s *store.Session) { s.CallsMade = 3 },
		"negative calls":      func(s *store.Session) { s.CallsMade = -1 },
		"bad status":          func(s *store.Session) { s.Status = "paused" },
		"bad sensitivity":     func(s *store.Session) { s.Sensitivity = "secret" },
		"short time limit":    func(s *store.Session) { s.TimeLimit = time.Millisecond },
		"expiry mismatch":     func(s *store.Session) { s.ExpiresAt = s.ExpiresAt.Add(time.Second) },
		"zero window":         func(s *store.Session) { s.RateWindow = 0 },
		"sub-ms created_at":   func(s *store.Session) { s.CreatedAt = s.CreatedAt.Add(time.Microsecond) },
		"bad tool name":       func(s *store.Session) { s.AuthorizedTools = []string{"a b"} },
		"negative rate calls": func(s *store.Session) { s.RateWindowCalls = -1 },
	} {
		bad := good
		bad.ID = "bad"
		mutate(&bad)
		n, err := dst.Governance().(*sqlstore.Governance).Restore(ctx, store.RestoreRequest{Sessions: []store.Session{good, bad}})
		if !errors.Is(err, store.ErrInvalidInput) || n != 0 {
			t.Errorf("%s: Restore = %d, %v; want ErrInvalidInput", name, n, err)
		}
	}
	dup := []store.Session{good, good}
	if _, err := dst.Governance().(*sqlstore.Governance).Restore(ctx, store.RestoreRequest{Sessions: dup}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("duplicate ids: %v, want ErrInvalidInput", err)
	}
	if page, err := dst.Governance().List(ctx, store.ListFilter{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("invalid restores wrote %d sessions (%v)", len(page.Items), err)
	}
}
