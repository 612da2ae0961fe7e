package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// openFresh opens a store on a second, empty database with the env's
// clock, closed at test end (the target of a restore).
func (e *env) openFresh() store.Store {
	e.t.Helper()
	st, err := e.h.Open(e.ctx, e.h.NewLocation(e.t), e.clock.Now)
	if err != nil {
		e.t.Fatalf("open a second database: %v", err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// testRestoreRoundTrip restores listed sessions into another database:
// they come back identical, and their counters, rate windows and status
// carry on where they were.
func testRestoreRoundTrip(t *testing.T, e *env) {
	gov := e.gov()
	if _, err := gov.Create(e.ctx, store.CreateRequest{ID: "a", AgentID: "ag", AuthorizedTools: []string{"t"},
		CallBudget: 5, RateLimit: 3, RateWindow: time.Minute, TimeLimit: time.Hour,
		DelegationChain: []string{"root"}, AuthorizedCredentials: []string{"c"}, DeclaredIntent: "x"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if _, err := gov.Use(e.ctx, store.UseRequest{SessionID: "a", Tools: []string{"t", "t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Create(e.ctx, store.CreateRequest{ID: "b", AgentID: "ag", AuthorizedTools: []string{"*"}, CallBudget: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Close(e.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := gov.Create(e.ctx, store.CreateRequest{ID: "c", AgentID: "other", CallBudget: 0, TimeLimit: time.Second}); err != nil {
		t.Fatal(err)
	}
	page, err := gov.List(e.ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	dst := e.openFresh().Governance()
	n, err := dst.Restore(e.ctx, store.RestoreRequest{Sessions: page.Items})
	if err != nil || n != 3 {
		t.Fatalf("Restore = %d, %v; want 3, nil", n, err)
	}
	got, err := dst.List(e.ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Items, page.Items) {
		t.Fatalf("restored sessions differ:\n got %+v\nwant %+v", got.Items, page.Items)
	}
	if n, err := dst.CountActive(e.ctx, "ag"); err != nil || n != 1 {
		t.Fatalf("CountActive after restore = %d, %v; want 1", n, err)
	}
	// The counters carry on: 3 calls left of 5, the rate window holds 2 of 3.
	if _, err := dst.Use(e.ctx, store.UseRequest{SessionID: "a", Tools: []string{"t", "t"}}); !errors.Is(err, store.ErrRateLimited) {
		t.Fatalf("Use after restore = %v, want ErrRateLimited", err)
	}
	if s, err := dst.Use(e.ctx, store.UseRequest{SessionID: "a", Tools: []string{"t"}}); err != nil || s.CallsMade != 3 {
		t.Fatalf("Use after restore = %+v, %v; want 3 calls made", s, err)
	}
	if _, err := dst.Use(e.ctx, store.UseRequest{SessionID: "b", Tools: []string{"t"}}); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Use of a restored closed session = %v, want ErrClosed", err)
	}
	e.clock.Advance(time.Second)
	if _, err := dst.Use(e.ctx, store.UseRequest{SessionID: "c"}); !errors.Is(err, store.ErrExpired) {
		t.Fatalf("Use of a restored session past its time = %v, want ErrExpired", err)
	}
	// The restored sessions are ordinary ones: Cleanup removes b and c.
	if n, err := dst.Cleanup(e.ctx); err != nil || n != 2 {
		t.Fatalf("Cleanup after restore = %d, %v; want 2", n, err)
	}
	if n, err := dst.Restore(e.ctx, store.RestoreRequest{}); err != nil || n != 0 {
		t.Fatalf("empty Restore = %d, %v", n, err)
	}
}

// testRestoreConflictAndSkip: an existing id fails the whole restore
// (nothing written) unless SkipExisting, which leaves it untouched.
func testRestoreConflictAndSkip(t *testing.T, e *env) {
	for _, id := range []string{"a", "b", "c"} {
		if _, err := e.gov().Create(e.ctx, store.CreateRequest{ID: id, AgentID: "ag", CallBudget: 2}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := e.gov().List(e.ctx, store.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	dst := e.openFresh().Governance()
	if _, err := dst.Create(e.ctx, store.CreateRequest{ID: "b", AgentID: "other", CallBudget: 9}); err != nil {
		t.Fatal(err)
	}
	n, err := dst.Restore(e.ctx, store.RestoreRequest{Sessions: page.Items})
	var ce *store.ConflictError
	if !errors.Is(err, store.ErrConflict) || !errors.As(err, &ce) || ce.ID != "b" || n != 0 {
		t.Fatalf("Restore over an existing id = %d, %v; want 0, a conflict on b", n, err)
	}
	for _, id := range []string{"a", "c"} {
		if _, err := dst.Get(e.ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a failed restore wrote session %s: %v", id, err)
		}
	}
	n, err = dst.Restore(e.ctx, store.RestoreRequest{Sessions: page.Items, SkipExisting: true})
	if err != nil || n != 2 {
		t.Fatalf("Restore skipping existing = %d, %v; want 2, nil", n, err)
	}
	if b, err := dst.Get(e.ctx, "b"); err != nil || b.AgentID != "other" || b.CallBudget != 9 {
		t.Fatalf("skipped session b changed: %+v, %v", b, err)
	}
	if n, err := dst.Restore(e.ctx, store.RestoreRequest{Sessions: page.Items, SkipExisting: true}); err != nil || n != 0 {
		t.Fatalf("Restore of existing sessions skipping = %d, %v; want 0", n, err)
	}
}

// testRestoreInvalid: an inconsistent session fails the whole restore with
// ErrInvalidInput and writes nothing.
func testRestoreInvalid(t *testing.T, e *env) {
	good, err := e.gov().Create(e.ctx, store.CreateRequest{ID: "ok", AgentID: "ag", CallBudget: 2})
	if err != nil {
		t.Fatal(err)
	}
	dst := e.openFresh().Governance()
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
		n, err := dst.Restore(e.ctx, store.RestoreRequest{Sessions: []store.Session{good, bad}})
		if !errors.Is(err, store.ErrInvalidInput) || n != 0 {
			t.Errorf("%s: Restore = %d, %v; want ErrInvalidInput", name, n, err)
		}
	}
	if _, err := dst.Restore(e.ctx, store.RestoreRequest{Sessions: []store.Session{good, good}}); !errors.Is(err, store.ErrInvalidInput) {
		t.Errorf("duplicate ids: %v, want ErrInvalidInput", err)
	}
	if page, err := dst.List(e.ctx, store.ListFilter{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("invalid restores wrote %d sessions (%v)", len(page.Items), err)
	}
}
