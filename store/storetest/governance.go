package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunGovernance runs the governed-session tests: every test of the arbiter
// seed, plus concurrency across goroutines and processes, persistence,
// idempotent request ids, clock-driven windows and bad input.
func RunGovernance(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		// Ported from the arbiter seed.
		{"CreateAndUse", testCreateAndUse},
		{"BudgetEnforcement", testBudgetEnforcement},
		{"ToolWhitelistEnforcement", testToolWhitelist},
		{"SessionExpiry", testSessionExpiry},
		{"CloseAndReuse", testCloseAndReuse},
		{"CleanupExpiredSessions", testCleanupExpired},
		{"SessionNotFound", testSessionNotFound},
		{"RateLimitEnforcement", testRateLimit},
		{"NoRateLimitWhenUnset", testNoRateLimit},
		{"BatchValidationAtomicity", testBatchAtomicity},
		{"BatchBudgetEnforcement", testBatchBudget},
		{"BatchRateLimitEnforcement", testBatchRateLimit},
		{"EmptyBatchSucceeds", testEmptyBatch},
		{"CleanupAlsoRemovesClosed", testCleanupClosed},
		{"ZeroBudgetSession", testZeroBudget},
		{"DeactivationClosesAgentSessions", testCloseAllForAgent},
		{"ConcurrentBudgetEnforcement", testConcurrentBudget},
		{"AgentMismatchRejected", testAgentMismatch},
		{"BatchAgentMismatchRejected", testBatchAgentMismatch},
		{"CreateIfUnderCap", testCreateUnderCap},
		{"CreateIfUnderCapRace", testCreateUnderCapRace},
		// Beyond the seed.
		{"TimeLimitClampedToOneSecond", testTimeLimitClamp},
		{"ExpiryBoundaryIsInclusive", testExpiryBoundary},
		{"ExpiredIsDurableAfterReopen", testExpiredDurable},
		{"RateWindowResetsAfterWindow", testRateWindowReset},
		{"RateLimitFreshWindowStillBoundsBatch", testRateFreshWindowBatch},
		{"CheckOrder", testCheckOrder},
		{"WildcardTool", testWildcardTool},
		{"CredentialsEmptyDenies", testCredentials},
		{"CloseTwiceIsErrClosed", testCloseTwice},
		{"DuplicateIDIsConflict", testDuplicateID},
		{"GetReturnsWhatCreateReturned", testGetRoundTrip},
		{"ListFiltersAndPaging", testListPaging},
		{"CountActive", testCountActive},
		{"StateSurvivesReopen", testSurvivesReopen},
		{"OpaqueErrorStrings", testOpaqueErrors},
		{"TypedErrorDetails", testTypedErrors},
		{"InvalidCreateWritesNothing", testInvalidCreate},
		{"InvalidUseConsumesNothing", testInvalidUse},
		{"NamesAreTakenVerbatim", testNamesVerbatim},
		{"DurationsAreExactOrRefused", testDurationsExact},
		{"RequestIDReplayReturnsFirstOutcome", testRequestIDReplay},
		{"RequestIDReplayOfRefusal", testRequestIDRefusalReplay},
		{"RequestIDReplayReturnsRecordedSession", testRequestIDReplayRecorded},
		{"RequestIDWithDifferentToolsConflicts", testRequestIDConflict},
		{"RequestIDRetriedConcurrentlyConsumesOnce", testRequestIDConcurrent},
		{"ConcurrentExactBudget64x1000", testConcurrent64x1000},
		{"ConcurrentAcrossStoresOnOneDatabase", testConcurrentTwoStores},
		{"MultiProcessExactBudget", testMultiProcess},
		{"SpreadOverSessionsAndAgentsExact", testUseSpreadExact},
		{"SpreadOverSessionsMultiProcessExact", testUseSpreadMultiProcess},
		{"CanceledContextWritesNothing", testCanceledContext},
		{"RestoreRoundTrip", testRestoreRoundTrip},
		{"RestoreConflictAndSkip", testRestoreConflictAndSkip},
		{"RestoreInvalidWritesNothing", testRestoreInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

// baseRequest mirrors the seed's test_create_request.
func baseRequest() store.CreateRequest {
	return store.CreateRequest{
		AgentID:         "agent-" + strconv.FormatInt(nextID.Add(1), 10),
		DeclaredIntent:  "read and analyze files",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       time.Hour,
		CallBudget:      5,
		RateWindow:      60 * time.Second,
		Sensitivity:     store.SensitivityInternal,
	}
}

var nextID atomic.Int64

func (e *env) gov() store.Governance { return e.st.Governance() }

func (e *env) create(req store.CreateRequest) store.Session {
	e.t.Helper()
	s, err := e.gov().Create(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	return s
}

func (e *env) use(id string, tools ...string) (store.Session, error) {
	return e.gov().Use(e.ctx, store.UseRequest{SessionID: id, Tools: tools})
}

func (e *env) mustUse(id string, tools ...string) store.Session {
	e.t.Helper()
	s, err := e.use(id, tools...)
	if err != nil {
		e.t.Fatalf("Use(%v): %v", tools, err)
	}
	return s
}

func (e *env) get(id string) store.Session {
	e.t.Helper()
	s, err := e.gov().Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get: %v", err)
	}
	return s
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

func testCreateAndUse(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if !s.IsActive(e.clock.Now()) || s.Status != store.StatusActive {
		t.Fatalf("new session not active: %+v", s)
	}
	u := e.mustUse(s.ID, "read_file")
	if u.CallsMade != 1 {
		t.Fatalf("calls made = %d, want 1", u.CallsMade)
	}
}

func testBudgetEnforcement(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 2
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	e.mustUse(s.ID, "read_file")
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrBudgetExceeded)
	if got := e.get(s.ID).CallsMade; got != 2 {
		t.Fatalf("calls made = %d after refusal, want 2", got)
	}
}

func testToolWhitelist(t *testing.T, e *env) {
	s := e.create(baseRequest())
	e.mustUse(s.ID, "read_file")
	_, err := e.use(s.ID, "delete_file")
	wantErr(t, err, store.ErrToolNotAuthorized)
}

func testSessionExpiry(t *testing.T, e *env) {
	req := baseRequest()
	req.TimeLimit = time.Second
	s := e.create(req)
	e.clock.Advance(1100 * time.Millisecond)
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrExpired)
	if st := e.get(s.ID).Status; st != store.StatusExpired {
		t.Fatalf("status = %s, want expired", st)
	}
}

func testCloseAndReuse(t *testing.T, e *env) {
	s := e.create(baseRequest())
	c, err := e.gov().Close(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Status != store.StatusClosed {
		t.Fatalf("Close returned status %s", c.Status)
	}
	_, err = e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrClosed)
}

func testCleanupExpired(t *testing.T, e *env) {
	short := baseRequest()
	short.TimeLimit = time.Second
	gone := e.create(short)
	kept := e.create(baseRequest())
	e.clock.Advance(1100 * time.Millisecond)
	n, err := e.gov().Cleanup(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("Cleanup removed %d, want 1", n)
	}
	_, err = e.gov().Get(e.ctx, gone.ID)
	wantErr(t, err, store.ErrNotFound)
	e.get(kept.ID)
}

func testSessionNotFound(t *testing.T, e *env) {
	_, err := e.use("00000000-0000-4000-8000-000000000000", "anything")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.gov().Get(e.ctx, "missing")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.gov().Close(e.ctx, "missing")
	wantErr(t, err, store.ErrNotFound)
}

func testRateLimit(t *testing.T, e *env) {
	req := baseRequest()
	req.RateLimit = 3
	req.CallBudget = 100
	s := e.create(req)
	for range 3 {
		e.mustUse(s.ID, "read_file")
	}
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrRateLimited)
	if got := e.get(s.ID).CallsMade; got != 3 {
		t.Fatalf("calls made = %d, want 3", got)
	}
}

func testNoRateLimit(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 100
	s := e.create(req)
	for range 10 {
		e.mustUse(s.ID, "read_file")
	}
}

func testBatchAtomicity(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 10
	s := e.create(req)
	_, err := e.use(s.ID, "read_file", "delete_file")
	wantErr(t, err, store.ErrToolNotAuthorized)
	if got := e.get(s.ID).CallsMade; got != 0 {
		t.Fatalf("calls made = %d, want 0", got)
	}
}

func testBatchBudget(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 3
	s := e.create(req)
	_, err := e.use(s.ID, "read_file", "read_file", "read_file", "read_file")
	wantErr(t, err, store.ErrBudgetExceeded)
	if got := e.get(s.ID).CallsMade; got != 0 {
		t.Fatalf("calls made = %d, want 0", got)
	}
	u := e.mustUse(s.ID, "read_file", "read_file", "read_file")
	if u.CallsMade != 3 {
		t.Fatalf("calls made = %d, want 3", u.CallsMade)
	}
}

func testBatchRateLimit(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 100
	req.RateLimit = 3
	s := e.create(req)
	_, err := e.use(s.ID, "read_file", "read_file", "read_file", "read_file")
	wantErr(t, err, store.ErrRateLimited)
	if got := e.get(s.ID); got.CallsMade != 0 || got.RateWindowCalls != 0 {
		t.Fatalf("refused batch changed counters: %+v", got)
	}
}

func testEmptyBatch(t *testing.T, e *env) {
	s := e.create(baseRequest())
	u, err := e.use(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.CallsMade != 0 || u.ID != s.ID {
		t.Fatalf("empty batch: %+v", u)
	}
	// An empty batch still runs the checks.
	e.gov().Close(e.ctx, s.ID)
	_, err = e.use(s.ID)
	wantErr(t, err, store.ErrClosed)
}

func testCleanupClosed(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	n, err := e.gov().Cleanup(e.ctx)
	if err != nil || n != 1 {
		t.Fatalf("Cleanup = %d, %v; want 1", n, err)
	}
	_, err = e.gov().Get(e.ctx, s.ID)
	wantErr(t, err, store.ErrNotFound)
}

func testZeroBudget(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 0
	s := e.create(req)
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrBudgetExceeded)
}

func testCloseAllForAgent(t *testing.T, e *env) {
	agent := baseRequest().AgentID
	var mine []store.Session
	for range 3 {
		req := baseRequest()
		req.AgentID = agent
		mine = append(mine, e.create(req))
	}
	other := e.create(baseRequest())
	n, err := e.gov().CloseAllForAgent(e.ctx, agent)
	if err != nil || n != 3 {
		t.Fatalf("CloseAllForAgent = %d, %v; want 3", n, err)
	}
	for _, s := range mine {
		if st := e.get(s.ID).Status; st != store.StatusClosed {
			t.Fatalf("session of deactivated agent has status %s", st)
		}
	}
	if st := e.get(other.ID).Status; st != store.StatusActive {
		t.Fatalf("other agent's session has status %s", st)
	}
	if n, _ := e.gov().CloseAllForAgent(e.ctx, agent); n != 0 {
		t.Fatalf("second CloseAllForAgent closed %d", n)
	}
}

// hammer runs workers goroutines that each try calls Uses of one tool and
// returns the successes; any error but budget exhaustion fails the test.
func hammer(t *testing.T, g store.Governance, id string, workers, calls int) int64 {
	t.Helper()
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range calls {
				_, err := g.Use(context.Background(), store.UseRequest{SessionID: id, Tools: []string{"read_file"}})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrBudgetExceeded):
					refused.Add(1)
				default:
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("unexpected error under contention: %v", err)
	}
	if got := ok.Load() + refused.Load(); got != int64(workers*calls) {
		t.Fatalf("accounted %d calls, made %d", got, workers*calls)
	}
	return ok.Load()
}

func testConcurrentBudget(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 5
	s := e.create(req)
	if ok := hammer(t, e.gov(), s.ID, 10, 1); ok != 5 {
		t.Fatalf("%d calls succeeded, want exactly 5", ok)
	}
	if got := e.get(s.ID).CallsMade; got != 5 {
		t.Fatalf("calls made = %d, want 5", got)
	}
}

func testAgentMismatch(t *testing.T, e *env) {
	s := e.create(baseRequest())
	_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "attacker", Tools: []string{"read_file"}})
	wantErr(t, err, store.ErrAgentMismatch)
	_, err = e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: s.AgentID, Tools: []string{"read_file"}})
	if err != nil {
		t.Fatalf("session owner refused: %v", err)
	}
}

func testBatchAgentMismatch(t *testing.T, e *env) {
	s := e.create(baseRequest())
	_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "attacker", Tools: []string{"read_file", "list_dir"}})
	wantErr(t, err, store.ErrAgentMismatch)
	if got := e.get(s.ID).CallsMade; got != 0 {
		t.Fatalf("calls made = %d, want 0", got)
	}
}

func testCreateUnderCap(t *testing.T, e *env) {
	req := baseRequest()
	req.MaxActivePerAgent = 2
	e.create(req)
	second := e.create(req)
	_, err := e.gov().Create(e.ctx, req)
	wantErr(t, err, store.ErrTooManySessions)
	var tm *store.TooManySessionsError
	if !errors.As(err, &tm) || tm.Max != 2 || tm.Current != 2 || tm.AgentID != req.AgentID {
		t.Fatalf("details = %+v", tm)
	}
	// Closing one frees a slot; expired sessions do not count either.
	if _, err := e.gov().Close(e.ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	e.create(req)
	other := req
	other.AgentID = "another-agent-" + req.AgentID
	e.create(other)
}

func testCreateUnderCapRace(t *testing.T, e *env) {
	req := baseRequest()
	req.MaxActivePerAgent = 3
	var ok, capped atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			_, err := e.gov().Create(e.ctx, req)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrTooManySessions):
				capped.Add(1)
			default:
				t.Errorf("Create: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 3 || capped.Load() != 17 {
		t.Fatalf("created %d, capped %d; want 3 and 17", ok.Load(), capped.Load())
	}
	if n, err := e.gov().CountActive(e.ctx, req.AgentID); err != nil || n != 3 {
		t.Fatalf("CountActive = %d, %v", n, err)
	}
}

func testTimeLimitClamp(t *testing.T, e *env) {
	for _, d := range []time.Duration{0, time.Millisecond, 999 * time.Millisecond} {
		req := baseRequest()
		req.TimeLimit = d
		s := e.create(req)
		if s.TimeLimit != time.Second || !s.ExpiresAt.Equal(s.CreatedAt.Add(time.Second)) {
			t.Fatalf("time limit %v: got limit %v, expires %v after creation", d, s.TimeLimit, s.ExpiresAt.Sub(s.CreatedAt))
		}
	}
}

func testExpiryBoundary(t *testing.T, e *env) {
	req := baseRequest()
	req.TimeLimit = 10 * time.Second
	s := e.create(req)
	e.clock.Advance(10*time.Second - time.Millisecond)
	e.mustUse(s.ID, "read_file")
	e.clock.Advance(time.Millisecond) // now == expires_at: expired
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrExpired)
}

func testExpiredDurable(t *testing.T, e *env) {
	req := baseRequest()
	req.TimeLimit = time.Second
	s := e.create(req)
	e.clock.Advance(2 * time.Second)
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrExpired)
	e.reopen()
	e.clock.Advance(-time.Hour) // a clock moved back does not revive it
	if st := e.get(s.ID).Status; st != store.StatusExpired {
		t.Fatalf("status after reopen = %s, want expired", st)
	}
	_, err = e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrExpired)
}

func testRateWindowReset(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 100
	req.RateLimit = 2
	req.RateWindow = 10 * time.Second
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	e.mustUse(s.ID, "read_file")
	e.clock.Advance(9999 * time.Millisecond)
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrRateLimited)
	e.clock.Advance(time.Millisecond) // now == start + window: a new window
	u := e.mustUse(s.ID, "read_file")
	if u.RateWindowCalls != 1 || !u.RateWindowStart.Equal(e.clock.Now()) {
		t.Fatalf("new window: calls %d start %v, want 1 at %v", u.RateWindowCalls, u.RateWindowStart, e.clock.Now())
	}
	e.mustUse(s.ID, "read_file")
	_, err = e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrRateLimited)
	if got := e.get(s.ID).CallsMade; got != 4 {
		t.Fatalf("calls made = %d, want 4", got)
	}
}

// A batch larger than the rate limit is refused even when it would open a
// new window (the seed let it through; see DESIGN.md).
func testRateFreshWindowBatch(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 100
	req.RateLimit = 2
	s := e.create(req)
	e.clock.Advance(time.Minute)
	_, err := e.use(s.ID, "read_file", "read_file", "read_file")
	wantErr(t, err, store.ErrRateLimited)
	e.mustUse(s.ID, "read_file", "read_file")
}

func testCheckOrder(t *testing.T, e *env) {
	// Agent mismatch comes before closed.
	s := e.create(baseRequest())
	e.gov().Close(e.ctx, s.ID)
	_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "intruder", Tools: []string{"read_file"}})
	wantErr(t, err, store.ErrAgentMismatch)

	// Closed comes before expired.
	req := baseRequest()
	req.TimeLimit = time.Second
	c := e.create(req)
	e.gov().Close(e.ctx, c.ID)
	e.clock.Advance(2 * time.Second)
	_, err = e.use(c.ID, "read_file")
	wantErr(t, err, store.ErrClosed)

	// Expired before budget.
	req = baseRequest()
	req.TimeLimit = time.Second
	req.CallBudget = 0
	x := e.create(req)
	e.clock.Advance(2 * time.Second)
	_, err = e.use(x.ID, "read_file")
	wantErr(t, err, store.ErrExpired)

	// Budget before tool, tool before rate.
	req = baseRequest()
	req.CallBudget = 1
	req.RateLimit = 1
	b := e.create(req)
	_, err = e.use(b.ID, "nope", "nope")
	wantErr(t, err, store.ErrBudgetExceeded)
	e.mustUse(b.ID, "read_file")
	req.CallBudget = 10
	r := e.create(req)
	e.mustUse(r.ID, "read_file")
	_, err = e.use(r.ID, "nope")
	wantErr(t, err, store.ErrToolNotAuthorized)
	_, err = e.use(r.ID, "read_file")
	wantErr(t, err, store.ErrRateLimited)
}

func testWildcardTool(t *testing.T, e *env) {
	req := baseRequest()
	req.AuthorizedTools = []string{store.AnyTool}
	s := e.create(req)
	u := e.mustUse(s.ID, "anything", "shell.exec", "mcp:server/tool")
	if u.CallsMade != 3 {
		t.Fatalf("calls made = %d", u.CallsMade)
	}
	req.AuthorizedTools = nil
	none := e.create(req)
	_, err := e.use(none.ID, "read_file")
	wantErr(t, err, store.ErrToolNotAuthorized)
}

func testCredentials(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if s.CredentialAuthorized("github-token") {
		t.Fatal("empty credential list authorized a credential")
	}
	req := baseRequest()
	req.AuthorizedCredentials = []string{"github-token"}
	c := e.create(req)
	got := e.get(c.ID)
	if !got.CredentialAuthorized("github-token") || got.CredentialAuthorized("aws-key") {
		t.Fatalf("credentials = %v", got.AuthorizedCredentials)
	}
}

func testCloseTwice(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.gov().Close(e.ctx, s.ID)
	wantErr(t, err, store.ErrClosed)
}

func testDuplicateID(t *testing.T, e *env) {
	req := baseRequest()
	req.ID = "fixed-id/with:odd..chars"
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	_, err := e.gov().Create(e.ctx, req)
	wantErr(t, err, store.ErrConflict)
	if got := e.get(s.ID).CallsMade; got != 1 {
		t.Fatalf("duplicate create overwrote the session: calls made %d", got)
	}
}

func testGetRoundTrip(t *testing.T, e *env) {
	req := baseRequest()
	req.DelegationChain = []string{"human:alice", "agent:planner"}
	req.AuthorizedCredentials = []string{"cred-a"}
	req.RateLimit = 7
	req.RateWindow = 1500 * time.Millisecond
	req.Sensitivity = store.SensitivityRestricted
	s := e.create(req)
	got := e.get(s.ID)
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("Get differs from Create:\n%s\n%s", a, b)
	}
	if s.CreatedAt.Location() != time.UTC || s.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("times must be UTC milliseconds: %v", s.CreatedAt)
	}
}

func testListPaging(t *testing.T, e *env) {
	agent := baseRequest().AgentID
	ids := map[string]bool{}
	for i := range 7 {
		req := baseRequest()
		req.AgentID = agent
		req.ID = fmt.Sprintf("list-%02d", i)
		ids[e.create(req).ID] = true
	}
	e.create(baseRequest()) // another agent
	e.gov().Close(e.ctx, "list-03")

	var seen []string
	f := store.ListFilter{AgentID: agent, Limit: 3}
	for pages := 0; ; pages++ {
		p, err := e.gov().List(e.ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 3 || pages > 3 {
			t.Fatalf("page too long or too many pages")
		}
		for _, s := range p.Items {
			seen = append(seen, s.ID)
		}
		if p.Next == "" {
			break
		}
		f.After = p.Next
	}
	if len(seen) != 7 {
		t.Fatalf("paged through %d sessions, want 7: %v", len(seen), seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i-1] >= seen[i] {
			t.Fatalf("list not ordered by id: %v", seen)
		}
	}
	closed, err := e.gov().List(e.ctx, store.ListFilter{AgentID: agent, Status: store.StatusClosed})
	if err != nil || len(closed.Items) != 1 || closed.Items[0].ID != "list-03" {
		t.Fatalf("closed filter: %+v, %v", closed, err)
	}
	active, _ := e.gov().List(e.ctx, store.ListFilter{AgentID: agent, Status: store.StatusActive})
	if len(active.Items) != 6 {
		t.Fatalf("active filter returned %d, want 6", len(active.Items))
	}
	e.clock.Advance(2 * time.Hour)
	expired, _ := e.gov().List(e.ctx, store.ListFilter{AgentID: agent, Status: store.StatusExpired})
	if len(expired.Items) != 6 || expired.Items[0].Status != store.StatusExpired {
		t.Fatalf("expired filter returned %d, want 6", len(expired.Items))
	}
	all, _ := e.gov().List(e.ctx, store.ListFilter{})
	if len(all.Items) != 8 {
		t.Fatalf("unfiltered list returned %d, want 8", len(all.Items))
	}
}

func testCountActive(t *testing.T, e *env) {
	req := baseRequest()
	a := e.create(req)
	short := req
	short.TimeLimit = time.Second
	e.create(short)
	e.create(req)
	if n, _ := e.gov().CountActive(e.ctx, req.AgentID); n != 3 {
		t.Fatalf("CountActive = %d, want 3", n)
	}
	e.gov().Close(e.ctx, a.ID)
	e.clock.Advance(time.Second)
	if n, _ := e.gov().CountActive(e.ctx, req.AgentID); n != 1 {
		t.Fatalf("CountActive after close and expiry = %d, want 1", n)
	}
	if n, _ := e.gov().CountActive(e.ctx, "nobody"); n != 0 {
		t.Fatalf("CountActive(nobody) = %d", n)
	}
}

func testSurvivesReopen(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 3
	req.RateLimit = 10
	s := e.create(req)
	e.mustUse(s.ID, "read_file", "list_dir")
	closed := e.create(baseRequest())
	e.gov().Close(e.ctx, closed.ID)
	e.reopen()
	got := e.get(s.ID)
	if got.CallsMade != 2 || got.RateWindowCalls != 2 {
		t.Fatalf("after reopen: %+v", got)
	}
	e.mustUse(s.ID, "read_file")
	_, err := e.use(s.ID, "read_file")
	wantErr(t, err, store.ErrBudgetExceeded)
	if st := e.get(closed.ID).Status; st != store.StatusClosed {
		t.Fatalf("closed session reads %s after reopen", st)
	}
}

func testOpaqueErrors(t *testing.T, e *env) {
	req := baseRequest()
	req.AgentID = "agent-secret-7f3a"
	req.CallBudget = 1
	req.RateLimit = 1
	req.MaxActivePerAgent = 1
	s := e.create(req)
	var errs []error
	_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "other-agent-91bc", Tools: []string{"read_file"}})
	errs = append(errs, err)
	_, err = e.use(s.ID, "forbidden_tool_x")
	errs = append(errs, err)
	e.mustUse(s.ID, "read_file")
	_, err = e.use(s.ID, "read_file")
	errs = append(errs, err)
	_, err = e.gov().Create(e.ctx, req)
	errs = append(errs, err)

	rate := baseRequest()
	rate.CallBudget = 100
	rate.RateLimit = 1
	r := e.create(rate)
	e.mustUse(r.ID, "read_file")
	_, err = e.use(r.ID, "read_file")
	errs = append(errs, err)

	want := []string{"agent mismatch", "tool not authorized in session", "session budget exceeded",
		"too many concurrent sessions", "session rate limit exceeded"}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("case %d: no error", i)
		}
		msg := err.Error()
		if msg != want[i] {
			t.Errorf("case %d: Error() = %q, want the constant %q", i, msg, want[i])
		}
		for _, secret := range []string{"agent-secret", "other-agent", "forbidden_tool", s.ID, "1"} {
			if strings.Contains(msg, secret) {
				t.Errorf("Error() %q reveals %q", msg, secret)
			}
		}
	}
}

func testTypedErrors(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 2
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	_, err := e.use(s.ID, "read_file", "read_file")
	var be *store.BudgetError
	if !errors.As(err, &be) || be.Limit != 2 || be.Used != 1 || be.Requested != 2 || be.SessionID != s.ID {
		t.Fatalf("BudgetError = %+v (%v)", be, err)
	}
	_, err = e.use(s.ID, "evil")
	var te *store.ToolError
	if !errors.As(err, &te) || te.Tool != "evil" {
		t.Fatalf("ToolError = %+v (%v)", te, err)
	}
	_, err = e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "x", Tools: []string{"read_file"}})
	var ae *store.AgentMismatchError
	if !errors.As(err, &ae) || ae.Expected != s.AgentID || ae.Actual != "x" {
		t.Fatalf("AgentMismatchError = %+v (%v)", ae, err)
	}
	rate := baseRequest()
	rate.CallBudget = 10
	rate.RateLimit = 1
	rate.RateWindow = 30 * time.Second
	r := e.create(rate)
	e.mustUse(r.ID, "read_file")
	_, err = e.use(r.ID, "read_file")
	var re *store.RateLimitError
	if !errors.As(err, &re) || re.Limit != 1 || re.Window != 30*time.Second || re.WindowCalls != 1 {
		t.Fatalf("RateLimitError = %+v (%v)", re, err)
	}
	short := baseRequest()
	short.TimeLimit = time.Second
	x := e.create(short)
	e.clock.Advance(time.Second)
	_, err = e.use(x.ID, "read_file")
	var xe *store.ExpiredError
	if !errors.As(err, &xe) || !xe.ExpiresAt.Equal(x.ExpiresAt) {
		t.Fatalf("ExpiredError = %+v (%v)", xe, err)
	}
}

func testInvalidCreate(t *testing.T, e *env) {
	bad := map[string]func(*store.CreateRequest){
		"empty agent":        func(r *store.CreateRequest) { r.AgentID = "" },
		"negative budget":    func(r *store.CreateRequest) { r.CallBudget = -1 },
		"negative rate":      func(r *store.CreateRequest) { r.RateLimit = -5 },
		"negative window":    func(r *store.CreateRequest) { r.RateWindow = -time.Second },
		"negative time":      func(r *store.CreateRequest) { r.TimeLimit = -time.Second },
		"negative cap":       func(r *store.CreateRequest) { r.MaxActivePerAgent = -1 },
		"tool with space":    func(r *store.CreateRequest) { r.AuthorizedTools = []string{"rm -rf"} },
		"empty tool":         func(r *store.CreateRequest) { r.AuthorizedTools = []string{""} },
		"huge tool":          func(r *store.CreateRequest) { r.AuthorizedTools = []string{strings.Repeat("a", 10000)} },
		"too many tools":     func(r *store.CreateRequest) { r.AuthorizedTools = make([]string, store.MaxListItems+1) },
		"bad sensitivity":    func(r *store.CreateRequest) { r.Sensitivity = "top-secret" },
		"control in id":      func(r *store.CreateRequest) { r.ID = "a\x00b" },
		"invalid utf8 agent": func(r *store.CreateRequest) { r.AgentID = "\xff\xfe" },
		"huge intent":        func(r *store.CreateRequest) { r.DeclaredIntent = strings.Repeat("x", store.MaxIntentLength+1) },
	}
	for name, mutate := range bad {
		req := baseRequest()
		mutate(&req)
		_, err := e.gov().Create(e.ctx, req)
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: got %v, want ErrInvalidInput", name, err)
		}
	}
	p, err := e.gov().List(e.ctx, store.ListFilter{})
	if err != nil || len(p.Items) != 0 {
		t.Fatalf("invalid creates wrote %d sessions (%v)", len(p.Items), err)
	}
}

func testInvalidUse(t *testing.T, e *env) {
	s := e.create(baseRequest())
	bad := []store.UseRequest{
		{SessionID: "", Tools: []string{"read_file"}},
		{SessionID: s.ID, Tools: []string{"read file"}},
		{SessionID: s.ID, Tools: []string{store.AnyTool}},
		{SessionID: s.ID, Tools: []string{""}},
		{SessionID: s.ID, Tools: make([]string, store.MaxListItems+1)},
		{SessionID: s.ID, AgentID: "bad\nagent", Tools: []string{"read_file"}},
		{SessionID: s.ID, RequestID: strings.Repeat("r", store.MaxIDLength+1), Tools: []string{"read_file"}},
	}
	for i, req := range bad {
		_, err := e.gov().Use(e.ctx, req)
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("case %d: got %v, want ErrInvalidInput", i, err)
		}
	}
	if got := e.get(s.ID).CallsMade; got != 0 {
		t.Fatalf("invalid uses consumed %d calls", got)
	}
}

func testRequestIDReplay(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 3
	s := e.create(req)
	u := store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}, RequestID: "req-1"}
	first, err := e.gov().Use(e.ctx, u)
	if err != nil || first.CallsMade != 1 {
		t.Fatalf("first: %+v %v", first, err)
	}
	for range 3 {
		again, err := e.gov().Use(e.ctx, u)
		if err != nil || again.CallsMade != 1 {
			t.Fatalf("replay: calls %d, %v", again.CallsMade, err)
		}
	}
	e.reopen()
	if again, err := e.gov().Use(e.ctx, u); err != nil || again.CallsMade != 1 {
		t.Fatalf("replay after reopen: calls %d, %v", again.CallsMade, err)
	}
	// Request ids are scoped per session.
	other := e.create(req)
	if o, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: other.ID, Tools: []string{"read_file"}, RequestID: "req-1"}); err != nil || o.CallsMade != 1 {
		t.Fatalf("same id on another session: %+v %v", o, err)
	}
	// A replay by another agent is still an agent mismatch.
	u.AgentID = "intruder"
	_, err = e.gov().Use(e.ctx, u)
	wantErr(t, err, store.ErrAgentMismatch)
}

func testRequestIDRefusalReplay(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 1
	s := e.create(req)
	e.mustUse(s.ID, "read_file")
	u := store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}, RequestID: "late"}
	_, err := e.gov().Use(e.ctx, u)
	wantErr(t, err, store.ErrBudgetExceeded)
	_, err = e.gov().Use(e.ctx, u)
	var be *store.BudgetError
	if !errors.As(err, &be) || be.Limit != 1 || be.Used != 1 {
		t.Fatalf("replayed refusal = %v (%+v)", err, be)
	}
}

func testRequestIDConflict(t *testing.T, e *env) {
	s := e.create(baseRequest())
	if _, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}, RequestID: "r"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"list_dir"}, RequestID: "r"})
	wantErr(t, err, store.ErrConflict)
	if got := e.get(s.ID).CallsMade; got != 1 {
		t.Fatalf("calls made = %d, want 1", got)
	}
}

func testRequestIDConcurrent(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 100
	s := e.create(req)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			u, err := e.gov().Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"read_file", "list_dir"}, RequestID: "same"})
			if err != nil || u.CallsMade != 2 {
				t.Errorf("concurrent retry: calls %d, %v", u.CallsMade, err)
			}
		})
	}
	wg.Wait()
	if got := e.get(s.ID).CallsMade; got != 2 {
		t.Fatalf("calls made = %d after 32 retries of one request, want 2", got)
	}
}

func testConcurrent64x1000(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 1000
	s := e.create(req)
	if ok := hammer(t, e.gov(), s.ID, 64, 20); ok != 1000 {
		t.Fatalf("%d calls succeeded, want exactly 1000", ok)
	}
	if got := e.get(s.ID).CallsMade; got != 1000 {
		t.Fatalf("calls made = %d, want 1000", got)
	}
}

func testConcurrentTwoStores(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget = 300
	s := e.create(req)
	second := e.open()
	var a, b int64
	var wg sync.WaitGroup
	wg.Go(func() { a = hammer(t, e.gov(), s.ID, 8, 25) })
	wg.Go(func() { b = hammer(t, second.Governance(), s.ID, 8, 25) })
	wg.Wait()
	if a+b != 300 {
		t.Fatalf("two stores made %d+%d successful calls, want 300", a, b)
	}
}

func init() {
	registerRole("use-hammer", useHammerRole)
}

// useHammerRole: args are session id, workers, calls per worker. It reports
// {"ok":N,"budget":M} and fails on any other error.
func useHammerRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("use-hammer wants 3 args, got %d", len(args))
	}
	workers, _ := strconv.Atoi(args[1])
	calls, _ := strconv.Atoi(args[2])
	var ok, budget atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range calls {
				_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: args[0], Tools: []string{"read_file"}})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, store.ErrBudgetExceeded):
					budget.Add(1)
				default:
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	if v := firstErr.Load(); v != nil {
		return fmt.Errorf("unexpected error: %s", v)
	}
	return report(out, map[string]int64{"ok": ok.Load(), "budget": budget.Load()})
}

func testMultiProcess(t *testing.T, e *env) {
	const procs, workers, calls, budget = 3, 8, 100, 1000
	req := baseRequest()
	req.CallBudget = budget
	// Helpers run on the real clock, the parent on the test clock: make the
	// session outlive both.
	req.TimeLimit = 100 * 365 * 24 * time.Hour
	s := e.create(req)
	type result struct{ OK, Budget int64 }
	results := make([]result, procs)
	var wg sync.WaitGroup
	defer wg.Wait() // also when the parent fails early
	for i := range procs {
		cmd, stdout := e.spawn("use-hammer", s.ID, strconv.Itoa(workers), strconv.Itoa(calls))
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var r map[string]int64
				if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
					results[i] = result{r["ok"], r["budget"]}
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper process %d: %v", i, err)
			}
		})
	}
	// The parent hammers too: four processes in all.
	parentOK := hammer(t, e.gov(), s.ID, workers, calls)
	wg.Wait()
	total := parentOK
	for i, r := range results {
		if r.OK+r.Budget != workers*calls {
			t.Fatalf("process %d accounted %d calls, made %d", i, r.OK+r.Budget, workers*calls)
		}
		total += r.OK
	}
	if total != budget {
		t.Fatalf("%d calls succeeded across %d processes, want exactly %d", total, procs+1, budget)
	}
	if got := e.get(s.ID).CallsMade; got != budget {
		t.Fatalf("calls made = %d, want %d", got, budget)
	}
}

func testCanceledContext(t *testing.T, e *env) {
	s := e.create(baseRequest())
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	_, err := e.gov().Use(ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}})
	wantErr(t, err, context.Canceled)
	_, err = e.gov().Create(ctx, baseRequest())
	wantErr(t, err, context.Canceled)
	if got := e.get(s.ID).CallsMade; got != 0 {
		t.Fatalf("canceled use consumed %d", got)
	}
}
