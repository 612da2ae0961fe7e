package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunRuntime runs the runtime-bookkeeping tests: every test of the zeroclaw
// RPC session seed, plus uploads, turns and cancellation across stores and
// OS processes, persistence, concurrency and bad input.
func RunRuntime(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		// Ported from the zeroclaw seed.
		{"InsertAndCount", testRTInsertAndCount},
		{"InsertRejectsOverLimit", testRTInsertOverLimit},
		{"GetReturnsSession", testRTGet},
		{"SetOverridesAppliesModelAndTemperature", testRTOverridesModelTemperature},
		{"SetOverridesRecordsModelProvider", testRTOverridesProvider},
		{"ProviderSwitchWithoutModelClearsPriorModel", testRTProviderSwitchClearsModel},
		{"SetOverridesMissingSessionIsNotFound", testRTOverridesMissing},
		{"RemoveCleansUp", testRTRemoveCleansUp},
		{"RemoveNonexistentReturnsFalse", testRTRemoveNonexistent},
		{"EvictSameModeSiblingDropsOnlySameModeOwner", testRTEvictSameMode},
		{"EvictSameModeSiblingSkipsInFlightTurn", testRTEvictSkipsInFlight},
		{"CancelTokenLifecycle", testRTCancelLifecycle},
		{"ReregisterForceCancelsPriorTurn", testRTReregisterCancelsPrior},
		{"StaleRemoveIsANoop", testRTStaleEndTurn},
		{"CancelNonexistentReturnsFalse", testRTCancelNonexistent},
		{"ListIDs", testRTListIDs},
		{"TouchUpdatesLastActive", testRTTouch},
		{"SessionPersistsAfterTransportDisconnect", testRTPersists},
		{"KillSessionCancelsInflightAndRemoves", testRTKillInflight},
		{"KillSessionIdleSessionRemoved", testRTKillIdle},
		{"KillSessionMissingReturnsFalse", testRTKillMissing},
		{"KillSessionCauseIsAdminKill", testRTKillCause},
		// Beyond the seed: sessions.
		{"DuplicateIDIsConflict", testRTDuplicateID},
		{"GeneratedID", testRTGeneratedID},
		{"CountByAgent", testRTCountByAgent},
		{"ListIDsPaging", testRTListIDsPaging},
		{"OverridesMergeRules", testRTOverridesMergeRules},
		{"OverridesVisibleToOtherStore", testRTOverridesOtherStore},
		{"EvictNeverTouchesUnownedOrCaller", testRTEvictUnownedAndCaller},
		{"CapIsExactUnderConcurrency", testRTCapConcurrent},
		{"CapIsExactAcrossStores", testRTCapTwoStores},
		{"CapFreesOnRemove", testRTCapFreesOnRemove},
		{"StateSurvivesReopen", testRTSurvivesReopen},
		{"InvalidInput", testRTInvalidInput},
		// History (the conversation of the same id).
		{"HistoryLenAndSliceSaturate", testRTHistory},
		{"HistoryNeedsRuntimeSession", testRTHistoryNeedsRuntimeSession},
		{"RemoveAndKillDeleteConversation", testRTRemoveDeletesConversation},
		{"EvictKeepsConversation", testRTEvictKeepsConversation},
		// Uploads.
		{"UploadRoundTrip", testUploadRoundTrip},
		{"UploadOverwriteSameRef", testUploadOverwrite},
		{"UploadClaimedDigestVerified", testUploadClaimedDigest},
		{"UploadDigestMismatchStoresNothing", testUploadDigestMismatch},
		{"UploadOversizeRejected", testUploadOversize},
		{"UploadDefaultSizeLimit", testUploadDefaultLimit},
		{"UploadEmptyContent", testUploadEmpty},
		{"UploadNotFound", testUploadNotFound},
		{"UploadsGoWithSession", testUploadsGoWithSession},
		{"UploadListPaging", testUploadListPaging},
		{"UploadInvalidInput", testUploadInvalidInput},
		// Turns and cancellation.
		{"CancelCauseRecordedBeforeFiringAndDrainedOnce", testTurnCauseBeforeFiring},
		{"SupersededCause", testTurnSupersededCause},
		{"FirstCauseWins", testTurnFirstCauseWins},
		{"CancelWithoutTurnRecordsNothing", testTurnCancelIdle},
		{"EndTurnReleasesContext", testTurnEndReleases},
		{"EndTurnRacingRemoveReportsTheWinner", testTurnEndRacesRemove},
		{"EndTurnKeepsUntakenCause", testTurnEndKeepsCause},
		{"RemoveCauseOutlivesSession", testTurnRemoveCause},
		{"GenerationsIncreaseAndAreNeverReused", testTurnGenerations},
		{"BeginTurnMissingSession", testTurnBeginMissing},
		{"ConcurrentBeginTurnLeavesOneRunning", testTurnConcurrentBegin},
		{"CancelFromOtherStore", testTurnCancelOtherStore},
		{"SupersedeAndKillFromOtherStore", testTurnSupersedeKillOtherStore},
		{"EndTurnFromOtherStoreReleases", testTurnEndOtherStore},
		{"CloseReleasesTurnContexts", testTurnCloseReleases},
		{"ParentContextCancelsTurnContext", testTurnParentContext},
		{"TurnLeftRunningSurvivesReopen", testTurnSurvivesReopen},
		{"TurnInvalidInput", testTurnInvalidInput},
		// Turn leases.
		{"TurnLeaseRenewedWhileStoreIsOpen", testTurnLeaseRenewedWhileOpen},
		{"StaleTurnSupersededAndItsCausesReaped", testTurnStaleSupersededAndReaped},
		// Second OS process.
		{"CancelAcrossProcesses", testTurnCancelAcrossProcesses},
		{"TurnOfCrashedProcessCanBeCleared", testTurnCrashedProcess},
		{"TurnOfKilledProcessGoesStale", testTurnOfKilledProcessGoesStale},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func (e *env) rt() store.Runtime { return e.st.Runtime() }

// rtNew mirrors the seed's RpcSession::new(agent, "a", ".", Chat).
func rtNew(id string) store.NewRuntimeSession {
	return store.NewRuntimeSession{ID: id, AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatModeChat}
}

func rtOwned(id string, mode store.ChatMode, owner string) store.NewRuntimeSession {
	r := rtNew(id)
	r.ChatMode, r.OwnerID = mode, owner
	return r
}

func (e *env) rtInsert(req store.NewRuntimeSession) store.RuntimeSession {
	e.t.Helper()
	s, err := e.rt().Insert(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Insert(%q): %v", req.ID, err)
	}
	return s
}

func (e *env) rtGet(id string) store.RuntimeSession {
	e.t.Helper()
	s, err := e.rt().Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%q): %v", id, err)
	}
	return s
}

func (e *env) rtCount() int64 {
	e.t.Helper()
	n, err := e.rt().Count(e.ctx)
	if err != nil {
		e.t.Fatalf("Count: %v", err)
	}
	return n
}

func (e *env) rtExists(id string) bool {
	e.t.Helper()
	_, err := e.rt().Get(e.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		e.t.Fatalf("Get(%q): %v", id, err)
	}
	return true
}

func (e *env) rtRemove(id string) bool {
	e.t.Helper()
	ok, err := e.rt().Remove(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Remove(%q): %v", id, err)
	}
	return ok
}

func (e *env) rtKill(id string) bool {
	e.t.Helper()
	ok, err := e.rt().Kill(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Kill(%q): %v", id, err)
	}
	return ok
}

func ptr[T any](v T) *T { return &v }

func strOf(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func (e *env) setOverrides(id string, patch store.Overrides) store.Overrides {
	e.t.Helper()
	o, err := e.rt().SetOverrides(e.ctx, id, patch)
	if err != nil {
		e.t.Fatalf("SetOverrides(%q): %v", id, err)
	}
	return o
}

func (e *env) rtListIDs() []string {
	e.t.Helper()
	var all []string
	after := ""
	for {
		p, err := e.rt().ListIDs(e.ctx, store.ListIDsRequest{After: after})
		if err != nil {
			e.t.Fatalf("ListIDs: %v", err)
		}
		all = append(all, p.Items...)
		if p.Next == "" {
			return all
		}
		after = p.Next
	}
}

func testRTInsertAndCount(t *testing.T, e *env) {
	if n := e.rtCount(); n != 0 {
		t.Fatalf("count = %d, want 0", n)
	}
	e.rtInsert(rtNew("s1"))
	if n := e.rtCount(); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
}

func testRTInsertOverLimit(t *testing.T, e *env) {
	st := e.openWith(Options{MaxSessions: 1})
	rt := st.Runtime()
	if _, err := rt.Insert(e.ctx, rtNew("s1")); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Insert(e.ctx, rtNew("s2"))
	wantErr(t, err, store.ErrTooManySessions)
	var tm *store.TooManySessionsError
	if !errors.As(err, &tm) || tm.Max != 1 || tm.Current != 1 || tm.AgentID != "" {
		t.Fatalf("typed error = %#v, want global cap 1 with 1 current", tm)
	}
	if strings.Contains(err.Error(), "1") {
		t.Fatalf("error string reveals the limit: %q", err)
	}
	if n, _ := rt.Count(e.ctx); n != 1 {
		t.Fatalf("count = %d after refused insert, want 1", n)
	}
	if _, err := rt.Get(e.ctx, "s2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused session exists: %v", err)
	}
}

func testRTGet(t *testing.T, e *env) {
	e.clock.Advance(time.Second)
	e.rtInsert(store.NewRuntimeSession{ID: "s1", AgentAlias: "coder", WorkspaceDir: "/work/x",
		ChatMode: store.ChatModeACP, OwnerID: "tui-1"})
	s := e.rtGet("s1")
	now := e.clock.Now()
	want := store.RuntimeSession{ID: "s1", AgentAlias: "coder", WorkspaceDir: "/work/x",
		ChatMode: store.ChatModeACP, OwnerID: "tui-1", CreatedAt: now, LastActive: now}
	if !s.CreatedAt.Equal(now) || !s.LastActive.Equal(now) {
		t.Fatalf("times = %v / %v, want %v", s.CreatedAt, s.LastActive, now)
	}
	s.CreatedAt, s.LastActive = now, now
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Fatalf("Get = %+v\nwant %+v", s, want)
	}
	_, err := e.rt().Get(e.ctx, "nonexistent")
	wantErr(t, err, store.ErrNotFound)
}

func testRTOverridesModelTemperature(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	merged := e.setOverrides("s1", store.Overrides{Model: ptr("model-x"), Temperature: ptr(0.42)})
	if strOf(merged.Model) != "model-x" || merged.Temperature == nil || *merged.Temperature != 0.42 {
		t.Fatalf("merged = %+v", merged)
	}
	// The override is in force at once: what the session reads back.
	got := e.rtGet("s1").Overrides
	if strOf(got.Model) != "model-x" || got.Temperature == nil || *got.Temperature != 0.42 || got.Provider != nil {
		t.Fatalf("stored overrides = %+v", got)
	}
}

func testRTOverridesProvider(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	merged := e.setOverrides("s1", store.Overrides{Provider: ptr("anthropic.default")})
	if strOf(merged.Provider) != "anthropic.default" {
		t.Fatalf("merged provider = %s", strOf(merged.Provider))
	}
	if got := e.rtGet("s1").Overrides; strOf(got.Provider) != "anthropic.default" {
		t.Fatalf("stored provider = %s", strOf(got.Provider))
	}
}

func testRTProviderSwitchClearsModel(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	e.setOverrides("s1", store.Overrides{Model: ptr("claude-opus-4-5")})
	merged := e.setOverrides("s1", store.Overrides{Provider: ptr("ollama.default")})
	if strOf(merged.Provider) != "ollama.default" {
		t.Fatalf("provider = %s", strOf(merged.Provider))
	}
	if merged.Model != nil {
		t.Fatalf("a provider-only switch must clear the lingering model override, got %s", *merged.Model)
	}
	if got := e.rtGet("s1").Overrides; got.Model != nil {
		t.Fatalf("stored model = %s, want cleared", *got.Model)
	}
}

func testRTOverridesMissing(t *testing.T, e *env) {
	_, err := e.rt().SetOverrides(e.ctx, "ghost", store.Overrides{})
	wantErr(t, err, store.ErrNotFound)
	_, err = e.rt().SetOverrides(e.ctx, "ghost", store.Overrides{Model: ptr("m")})
	wantErr(t, err, store.ErrNotFound)
}

func testRTRemoveCleansUp(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	_, tctx := e.beginTurn("s1")
	if !e.rtRemove("s1") {
		t.Fatal("Remove returned false for an existing session")
	}
	if n := e.rtCount(); n != 0 {
		t.Fatalf("count = %d, want 0", n)
	}
	wantFired(t, tctx, store.CauseSessionRemoved)
	// The turn went with the session: cancelling is a no-op now.
	if e.cancel("s1", store.CauseClientRequest) {
		t.Fatal("Cancel after Remove returned true")
	}
}

func testRTRemoveNonexistent(t *testing.T, e *env) {
	if e.rtRemove("ghost") {
		t.Fatal("Remove(ghost) returned true")
	}
}

func (e *env) evict(owner string, mode store.ChatMode, except string) []store.Evicted {
	e.t.Helper()
	ev, err := e.rt().EvictSameModeSiblings(e.ctx, store.EvictRequest{OwnerID: owner, ChatMode: mode, ExceptID: except})
	if err != nil {
		e.t.Fatalf("EvictSameModeSiblings: %v", err)
	}
	return ev
}

func testRTEvictSameMode(t *testing.T, e *env) {
	e.rtInsert(rtOwned("old_chat", store.ChatModeChat, "tui1"))
	e.rtInsert(rtOwned("old_code", store.ChatModeACP, "tui1"))
	e.rtInsert(rtOwned("other_chat", store.ChatModeChat, "tui2"))
	e.rtInsert(rtOwned("new_chat", store.ChatModeChat, "tui1"))

	ev := e.evict("tui1", store.ChatModeChat, "new_chat")
	if len(ev) != 1 || ev[0] != (store.Evicted{ID: "old_chat", AgentAlias: "a"}) {
		t.Fatalf("evicted = %+v, want [old_chat a]", ev)
	}
	for id, want := range map[string]bool{"new_chat": true, "old_code": true, "other_chat": true, "old_chat": false} {
		if got := e.rtExists(id); got != want {
			t.Fatalf("%s exists = %v, want %v", id, got, want)
		}
	}
	if n := e.rtCount(); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
}

func testRTEvictSkipsInFlight(t *testing.T, e *env) {
	e.rtInsert(rtOwned("busy_chat", store.ChatModeChat, "tui1"))
	e.rtInsert(rtOwned("new_chat", store.ChatModeChat, "tui1"))
	// A running turn marks the session mid-turn: it must not be evicted.
	_, tctx := e.beginTurn("busy_chat")

	if ev := e.evict("tui1", store.ChatModeChat, "new_chat"); len(ev) != 0 {
		t.Fatalf("in-flight same-mode session evicted: %+v", ev)
	}
	if !e.rtExists("busy_chat") {
		t.Fatal("mid-turn session not preserved")
	}
	if isDone(tctx) {
		t.Fatal("eviction fired a mid-turn context")
	}
}

func testRTCancelLifecycle(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	gen, tctx := e.beginTurn("s1")
	if isDone(tctx) {
		t.Fatal("new turn context is done")
	}
	if !e.cancel("s1", store.CauseClientRequest) {
		t.Fatal("Cancel returned false for a running turn")
	}
	wantFired(t, tctx, store.CauseClientRequest)
	// Once the turn is ended, a cancel finds nothing.
	e.endTurn("s1", gen, true)
	if e.cancel("s1", store.CauseClientRequest) {
		t.Fatal("Cancel after EndTurn returned true")
	}
}

func testRTReregisterCancelsPrior(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	oldGen, oldCtx := e.beginTurn("s")
	newGen, newCtx := e.beginTurn("s")
	wantFired(t, oldCtx, store.CauseSuperseded)
	if isDone(newCtx) {
		t.Fatal("new turn context is done")
	}
	if oldGen == newGen {
		t.Fatalf("generations equal: %d", oldGen)
	}
	// A stale-generation EndTurn must not clear the live turn.
	e.endTurn("s", oldGen, false)
	if !e.cancel("s", store.CauseClientRequest) {
		t.Fatal("stale-generation EndTurn cleared the live turn")
	}
	wantFired(t, newCtx, store.CauseClientRequest)
}

func testRTStaleEndTurn(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	// Generations are store-wide: make sure gen-1 is a valid number.
	e.rtInsert(rtNew("warm"))
	e.beginTurn("warm")
	gen, _ := e.beginTurn("s")
	e.endTurn("s", gen-1, false)
	e.endTurn("s", gen+1, false)
	if !e.cancel("s", store.CauseClientRequest) {
		t.Fatal("an EndTurn with a non-matching generation must leave the turn intact")
	}
}

func testRTCancelNonexistent(t *testing.T, e *env) {
	if e.cancel("nope", store.CauseClientRequest) {
		t.Fatal("Cancel(nope) returned true")
	}
}

func testRTListIDs(t *testing.T, e *env) {
	e.rtInsert(rtNew("b"))
	e.rtInsert(rtNew("a"))
	if ids := e.rtListIDs(); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("ids = %v, want [a b]", ids)
	}
}

func testRTTouch(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	before := e.rtGet("s1").LastActive
	e.clock.Advance(10 * time.Millisecond)
	if err := e.rt().Touch(e.ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	after := e.rtGet("s1").LastActive
	if !after.After(before) || !after.Equal(e.clock.Now()) {
		t.Fatalf("last active %v -> %v, want %v", before, after, e.clock.Now())
	}
	// The clock going back never moves last-active backwards.
	e.clock.Advance(-time.Hour)
	if err := e.rt().Touch(e.ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if got := e.rtGet("s1").LastActive; !got.Equal(after) {
		t.Fatalf("last active moved back to %v", got)
	}
	wantErr(t, e.rt().Touch(e.ctx, "ghost"), store.ErrNotFound)
}

func testRTPersists(t *testing.T, e *env) {
	e.rtInsert(rtOwned("s1", store.ChatModeChat, "tui-x"))
	// No orphan grace, no idle expiry: a long silence and a restart keep it.
	e.clock.Advance(365 * 24 * time.Hour)
	e.reopen()
	if n := e.rtCount(); n != 1 {
		t.Fatalf("count = %d, session must survive disconnect and restart", n)
	}
}

func testRTKillInflight(t *testing.T, e *env) {
	e.rtInsert(rtNew("live"))
	_, tctx := e.beginTurn("live")
	if !e.rtKill("live") {
		t.Fatal("Kill must return true for a real session")
	}
	wantFired(t, tctx, store.CauseAdminKill)
	if n := e.rtCount(); n != 0 {
		t.Fatalf("count = %d, session must be removed", n)
	}
}

func testRTKillIdle(t *testing.T, e *env) {
	e.rtInsert(rtNew("cold"))
	if !e.rtKill("cold") {
		t.Fatal("Kill(cold) returned false")
	}
	if n := e.rtCount(); n != 0 {
		t.Fatalf("count = %d, want 0", n)
	}
}

func testRTKillMissing(t *testing.T, e *env) {
	if e.rtKill("ghost") {
		t.Fatal("Kill(ghost) returned true")
	}
}

func testRTKillCause(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	gen, _ := e.beginTurn("s")
	e.rtKill("s")
	// The verdict site must see AdminKill, not nothing.
	if c, ok := e.takeCause("s", gen); !ok || c != store.CauseAdminKill {
		t.Fatalf("cause = %q, %v; want admin_kill", c, ok)
	}
}

func testRTDuplicateID(t *testing.T, e *env) {
	e.rtInsert(rtNew("s1"))
	e.setOverrides("s1", store.Overrides{Model: ptr("m1")})
	req := rtNew("s1")
	req.AgentAlias = "other"
	_, err := e.rt().Insert(e.ctx, req)
	wantErr(t, err, store.ErrConflict)
	s := e.rtGet("s1")
	if s.AgentAlias != "a" || strOf(s.Overrides.Model) != "m1" {
		t.Fatalf("existing session overwritten: %+v", s)
	}
}

func testRTGeneratedID(t *testing.T, e *env) {
	a := e.rtInsert(rtNew(""))
	b := e.rtInsert(rtNew(""))
	if a.ID == "" || a.ID == b.ID {
		t.Fatalf("generated ids %q, %q", a.ID, b.ID)
	}
	if got := e.rtGet(a.ID); got.ID != a.ID {
		t.Fatalf("Get(generated) = %+v", got)
	}
}

func testRTCountByAgent(t *testing.T, e *env) {
	for i, alias := range []string{"a", "b", "a", "c", "a", "b"} {
		req := rtNew(fmt.Sprintf("s%d", i))
		req.AgentAlias = alias
		e.rtInsert(req)
	}
	e.rtRemove("s3")
	got, err := e.rt().CountByAgent(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"a": 3, "b": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("CountByAgent = %v, want %v", got, want)
	}
}

func testRTListIDsPaging(t *testing.T, e *env) {
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("session/%02d", i)
		want = append(want, id)
		e.rtInsert(rtNew(id))
	}
	var got []string
	after := ""
	pages := 0
	for {
		p, err := e.rt().ListIDs(e.ctx, store.ListIDsRequest{After: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) > 10 {
			t.Fatalf("page of %d items, limit 10", len(p.Items))
		}
		pages++
		got = append(got, p.Items...)
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d pages, ids %v", pages, got)
	}
}

func testRTOverridesMergeRules(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	e.setOverrides("s", store.Overrides{Model: ptr("m1"), Provider: ptr("p1"), Temperature: ptr(0.5)})
	// Unset fields keep their value.
	o := e.setOverrides("s", store.Overrides{})
	if strOf(o.Model) != "m1" || strOf(o.Provider) != "p1" || *o.Temperature != 0.5 {
		t.Fatalf("empty patch changed overrides: %+v", o)
	}
	o = e.setOverrides("s", store.Overrides{Temperature: ptr(0.0)})
	if strOf(o.Model) != "m1" || strOf(o.Provider) != "p1" || o.Temperature == nil || *o.Temperature != 0 {
		t.Fatalf("temperature patch: %+v", o)
	}
	// Provider and model together: both set.
	o = e.setOverrides("s", store.Overrides{Model: ptr("m2"), Provider: ptr("p2")})
	if strOf(o.Model) != "m2" || strOf(o.Provider) != "p2" {
		t.Fatalf("provider+model patch: %+v", o)
	}
	// A model alone keeps the provider.
	o = e.setOverrides("s", store.Overrides{Model: ptr("m3")})
	if strOf(o.Model) != "m3" || strOf(o.Provider) != "p2" {
		t.Fatalf("model patch: %+v", o)
	}
	// Provider alone clears the model, keeps the temperature.
	o = e.setOverrides("s", store.Overrides{Provider: ptr("p3")})
	if o.Model != nil || strOf(o.Provider) != "p3" || *o.Temperature != 0 {
		t.Fatalf("provider patch: %+v", o)
	}
	if got := e.rtGet("s").Overrides; fmt.Sprint(deref(got)) != fmt.Sprint(deref(o)) {
		t.Fatalf("stored %v, returned %v", deref(got), deref(o))
	}
}

func deref(o store.Overrides) [3]string {
	t := "<nil>"
	if o.Temperature != nil {
		t = fmt.Sprint(*o.Temperature)
	}
	return [3]string{strOf(o.Model), strOf(o.Provider), t}
}

func testRTOverridesOtherStore(t *testing.T, e *env) {
	e.rtInsert(rtNew("s"))
	other := e.open().Runtime()
	if _, err := other.SetOverrides(e.ctx, "s", store.Overrides{Model: ptr("m")}); err != nil {
		t.Fatal(err)
	}
	if got := e.rtGet("s").Overrides; strOf(got.Model) != "m" {
		t.Fatalf("model = %s", strOf(got.Model))
	}
}

func testRTEvictUnownedAndCaller(t *testing.T, e *env) {
	e.rtInsert(rtNew("unowned"))
	e.rtInsert(rtOwned("me", store.ChatModeChat, "tui1"))
	e.rtInsert(rtOwned("sib1", store.ChatModeChat, "tui1"))
	e.rtInsert(rtOwned("sib2", store.ChatModeChat, "tui1"))
	ev := e.evict("tui1", store.ChatModeChat, "me")
	if len(ev) != 2 || ev[0].ID != "sib1" || ev[1].ID != "sib2" {
		t.Fatalf("evicted = %+v, want sib1, sib2", ev)
	}
	if !e.rtExists("me") || !e.rtExists("unowned") {
		t.Fatal("caller or unowned session evicted")
	}
	// Without an except id, the owner's sessions of that mode all go.
	ev = e.evict("tui1", store.ChatModeChat, "")
	if len(ev) != 1 || ev[0].ID != "me" {
		t.Fatalf("evicted = %+v, want [me]", ev)
	}
	if !e.rtExists("unowned") {
		t.Fatal("unowned session evicted")
	}
	if ev := e.evict("tui1", store.ChatModeChat, ""); len(ev) != 0 {
		t.Fatalf("second eviction = %+v", ev)
	}
}

func testRTCapConcurrent(t *testing.T, e *env) {
	const limit, workers = 10, 40
	rt := e.openWith(Options{MaxSessions: limit}).Runtime()
	var ok, refused, other int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			_, err := rt.Insert(e.ctx, rtNew(fmt.Sprintf("s%02d", i)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, store.ErrTooManySessions):
				refused++
			default:
				other++
				t.Errorf("Insert: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != limit || refused != workers-limit {
		t.Fatalf("%d inserted, %d refused; want %d and %d", ok, refused, limit, workers-limit)
	}
	if n, _ := rt.Count(e.ctx); n != limit {
		t.Fatalf("count = %d, want %d", n, limit)
	}
	if ids := e.rtListIDs(); len(ids) != limit {
		t.Fatalf("%d ids listed, want %d", len(ids), limit)
	}
}

func testRTCapTwoStores(t *testing.T, e *env) {
	const limit, perStore = 7, 20
	stores := []store.Runtime{e.openWith(Options{MaxSessions: limit}).Runtime(), e.openWith(Options{MaxSessions: limit}).Runtime()}
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for si, rt := range stores {
		for i := range perStore {
			wg.Go(func() {
				_, err := rt.Insert(e.ctx, rtNew(fmt.Sprintf("st%d-%02d", si, i)))
				if err != nil && !errors.Is(err, store.ErrTooManySessions) {
					t.Errorf("Insert: %v", err)
				}
				if err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if ok != limit || e.rtCount() != limit {
		t.Fatalf("%d inserted (count %d) across two stores, want exactly %d", ok, e.rtCount(), limit)
	}
}

func testRTCapFreesOnRemove(t *testing.T, e *env) {
	rt := e.openWith(Options{MaxSessions: 2}).Runtime()
	for _, id := range []string{"a", "b"} {
		if _, err := rt.Insert(e.ctx, rtNew(id)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := rt.Insert(e.ctx, rtNew("c"))
	wantErr(t, err, store.ErrTooManySessions)
	if ok, err := rt.Remove(e.ctx, "a"); !ok || err != nil {
		t.Fatalf("Remove: %v %v", ok, err)
	}
	if _, err := rt.Insert(e.ctx, rtNew("c")); err != nil {
		t.Fatalf("Insert after Remove: %v", err)
	}
	if _, err := rt.Kill(e.ctx, "b"); err != nil {
		t.Fatal(err)
	}
	e.rtInsert(rtOwned("d", store.ChatModeChat, "o"))
	e.rtInsert(rtOwned("e", store.ChatModeChat, "o"))
	// The uncapped env store inserted past the cap of rt; evicting brings
	// the count back under it.
	e.evict("o", store.ChatModeChat, "")
	if _, err := rt.Insert(e.ctx, rtNew("f")); err != nil {
		t.Fatalf("Insert after eviction: %v", err)
	}
	if n := e.rtCount(); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
}

func testRTSurvivesReopen(t *testing.T, e *env) {
	e.rtInsert(store.NewRuntimeSession{ID: "s", AgentAlias: "coder", WorkspaceDir: "/w", ChatMode: store.ChatModeACP, OwnerID: "tui"})
	e.setOverrides("s", store.Overrides{Provider: ptr("p"), Temperature: ptr(1.5)})
	e.clock.Advance(time.Minute)
	if err := e.rt().Touch(e.ctx, "s"); err != nil {
		t.Fatal(err)
	}
	e.putUpload("s", "r1", []byte("hello"))
	gen, _ := e.beginTurn("s")
	e.endTurn("s", gen, true)
	before := e.rtGet("s")
	e.reopen()
	after := e.rtGet("s")
	if fmt.Sprint(before.Turn, before.CreatedAt, before.LastActive, deref(before.Overrides), before.OwnerID, before.WorkspaceDir) !=
		fmt.Sprint(after.Turn, after.CreatedAt, after.LastActive, deref(after.Overrides), after.OwnerID, after.WorkspaceDir) {
		t.Fatalf("after reopen %+v\nbefore %+v", after, before)
	}
	if _, content := e.readUpload("s", "r1"); string(content) != "hello" {
		t.Fatalf("upload after reopen = %q", content)
	}
	// Generations go on increasing after a restart.
	gen2, _ := e.beginTurn("s")
	if gen2 <= gen {
		t.Fatalf("generation after reopen %d <= %d", gen2, gen)
	}
}

func testRTInvalidInput(t *testing.T, e *env) {
	rt := e.rt()
	e.rtInsert(rtNew("s"))
	long := strings.Repeat("x", store.MaxIDLength+1)
	bad := []struct {
		name string
		req  store.NewRuntimeSession
	}{
		{"alias empty", store.NewRuntimeSession{ID: "x", WorkspaceDir: ".", ChatMode: "chat"}},
		{"alias control", store.NewRuntimeSession{ID: "x", AgentAlias: "a\x00", WorkspaceDir: ".", ChatMode: "chat"}},
		{"id too long", store.NewRuntimeSession{ID: long, AgentAlias: "a", WorkspaceDir: ".", ChatMode: "chat"}},
		{"id bad utf8", store.NewRuntimeSession{ID: "\xff", AgentAlias: "a", WorkspaceDir: ".", ChatMode: "chat"}},
		{"workspace empty", store.NewRuntimeSession{ID: "x", AgentAlias: "a", ChatMode: "chat"}},
		{"workspace NUL", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: "/a\x00b", ChatMode: "chat"}},
		{"workspace huge", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: strings.Repeat("/", store.MaxPathLength+1), ChatMode: "chat"}},
		{"mode empty", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: "."}},
		{"mode upper", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: ".", ChatMode: "Chat"}},
		{"mode long", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: ".", ChatMode: store.ChatMode(strings.Repeat("a", 33))}},
		{"owner control", store.NewRuntimeSession{ID: "x", AgentAlias: "a", WorkspaceDir: ".", ChatMode: "chat", OwnerID: "t\n"}},
	}
	for _, b := range bad {
		_, err := rt.Insert(e.ctx, b.req)
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: Insert error %v, want ErrInvalidInput", b.name, err)
		}
	}
	if n := e.rtCount(); n != 1 {
		t.Fatalf("count = %d after invalid inserts, want 1", n)
	}
	for name, o := range map[string]store.Overrides{
		"empty model":      {Model: ptr("")},
		"empty provider":   {Provider: ptr("")},
		"NaN temperature":  {Temperature: ptr(math.NaN())},
		"Inf temperature":  {Temperature: ptr(math.Inf(1))},
		"negative temp":    {Temperature: ptr(-0.1)},
		"too hot":          {Temperature: ptr(2.5)},
		"model control ch": {Model: ptr("m\x7f")},
	} {
		_, err := rt.SetOverrides(e.ctx, "s", o)
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: SetOverrides error %v, want ErrInvalidInput", name, err)
		}
	}
	if o := e.rtGet("s").Overrides; o.Model != nil || o.Provider != nil || o.Temperature != nil {
		t.Fatalf("invalid overrides were written: %+v", o)
	}
	for name, err := range map[string]error{
		"get empty":      func() error { _, err := rt.Get(e.ctx, ""); return err }(),
		"touch empty":    rt.Touch(e.ctx, ""),
		"remove empty":   func() error { _, err := rt.Remove(e.ctx, ""); return err }(),
		"kill empty":     func() error { _, err := rt.Kill(e.ctx, ""); return err }(),
		"list bad after": func() error { _, err := rt.ListIDs(e.ctx, store.ListIDsRequest{After: "\x01"}); return err }(),
		"list neg limit": func() error { _, err := rt.ListIDs(e.ctx, store.ListIDsRequest{Limit: -1}); return err }(),
		"evict no owner": func() error {
			_, err := rt.EvictSameModeSiblings(e.ctx, store.EvictRequest{ChatMode: "chat"})
			return err
		}(),
		"evict bad mode": func() error {
			_, err := rt.EvictSameModeSiblings(e.ctx, store.EvictRequest{OwnerID: "o", ChatMode: "x y"})
			return err
		}(),
		"evict bad excpt": func() error {
			_, err := rt.EvictSameModeSiblings(e.ctx, store.EvictRequest{OwnerID: "o", ChatMode: "chat", ExceptID: "\x00"})
			return err
		}(),
	} {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: error %v, want ErrInvalidInput", name, err)
		}
	}
}
