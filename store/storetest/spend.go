package storetest

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunSpend runs the spend tests: reservations against session and agent
// limits, settle and release, windows that roll over by the injected
// clock, lapsed reservations (also of a killed process), idempotent
// retries, and exactness across goroutines and OS processes.
func RunSpend(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"ReserveSettleRelease", testSpendBasic},
		{"RefusalIsTypedAndOpaque", testSpendRefusalTyped},
		{"EveryMetricIsChecked", testSpendMetrics},
		{"ReserveChecksTheSession", testSpendSessionChecks},
		{"AgentLimitsHoldAcrossSessions", testSpendAgentLimits},
		{"SetAgentLimitsKeepsCounters", testSpendSetAgentLimits},
		{"HourWindowRollsOver", testSpendHourWindow},
		{"DayAndMonthWindowsRollOver", testSpendDayMonthWindows},
		{"LifetimeNeverRollsOver", testSpendLifetime},
		{"SettleChargesTheWindowOfTheReservation", testSpendSettleAcrossWindows},
		{"LapsedReservationIsReleased", testSpendLapse},
		{"LateSettleStillCounts", testSpendLateSettle},
		{"ReleaseExpiredReleasesEveryAgent", testSpendReleaseExpired},
		{"IdempotentRetries", testSpendIdempotent},
		{"RefusedReservationReplays", testSpendRefusalReplay},
		{"ConcurrentRetriesReserveOnce", testSpendConcurrentRetries},
		{"SettleOnceWithConcurrentRetries", testSpendConcurrentSettle},
		{"SettleRecordsConversationUsage", testSpendConversationUsage},
		{"InvalidInputChangesNothing", testSpendInvalid},
		{"CleanupKeepsSessionsWithLiveReservations", testSpendCleanup},
		{"StateSurvivesReopen", testSpendReopen},
		{"ExportRestoreRoundTrip", testSpendExportRestore},
		{"ExportEachStreamsOneSnapshot", testSpendExportEach},
		{"RestoreInvalidWritesNothing", testSpendRestoreInvalid},
		{"ConcurrentExactCostLimit", testSpendConcurrentExact},
		{"ConcurrentMixedAmountsNeverOvershoot", testSpendConcurrentMixed},
		{"ConcurrentAgentLimitAcrossSessions", testSpendConcurrentAgent},
		{"MultiProcessExactCostLimit", testSpendMultiProcess},
		{"KilledProcessReservationsReleasedAfterExpiry", testSpendKilledProcess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func usd(micros int64) store.SpendAmount { return store.SpendAmount{CostMicros: micros} }

func costLimit(micros int64, w store.SpendWindow) store.SpendLimit {
	return store.SpendLimit{Metric: store.MetricCost, Window: w, Limit: micros, Currency: "USD"}
}

func tokenLimit(m store.SpendMetric, n int64, w store.SpendWindow) store.SpendLimit {
	return store.SpendLimit{Metric: m, Window: w, Limit: n}
}

// spendSession creates a session of a fresh agent with the given limits.
func (e *env) spendSession(limits ...store.SpendLimit) store.Session {
	e.t.Helper()
	req := baseRequest()
	req.TimeLimit = 400 * 24 * time.Hour
	req.SpendLimits = limits
	return e.create(req)
}

func (e *env) reserve(sess string, a store.SpendAmount, id string) (store.Reservation, error) {
	cur := ""
	if a.CostMicros > 0 {
		cur = "USD"
	}
	return e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: sess, RequestID: id, Amount: a, Currency: cur})
}

func (e *env) mustReserve(sess string, a store.SpendAmount, id string) store.Reservation {
	e.t.Helper()
	r, err := e.reserve(sess, a, id)
	if err != nil {
		e.t.Fatalf("Reserve(%s, %+v): %v", id, a, err)
	}
	return r
}

func (e *env) settle(sess, id string, actual store.SpendAmount) store.Reservation {
	e.t.Helper()
	r, err := e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: sess, RequestID: id, Actual: actual})
	if err != nil {
		e.t.Fatalf("Settle(%s): %v", id, err)
	}
	return r
}

func (e *env) release(sess, id string) store.Reservation {
	e.t.Helper()
	r, err := e.st.Spend().Release(e.ctx, store.ReleaseRequest{SessionID: sess, RequestID: id})
	if err != nil {
		e.t.Fatalf("Release(%s): %v", id, err)
	}
	return r
}

func (e *env) spendStatus(sess string) store.SpendStatus {
	e.t.Helper()
	st, err := e.st.Spend().Status(e.ctx, sess)
	if err != nil {
		e.t.Fatalf("Status(%s): %v", sess, err)
	}
	return st
}

// limitIn returns the status of the limit of scope, metric and window.
func limitIn(t *testing.T, st store.SpendStatus, scope store.SpendScope, m store.SpendMetric, w store.SpendWindow) store.LimitStatus {
	t.Helper()
	for _, l := range st.Limits {
		if l.Scope == scope && l.Metric == m && l.Window == w {
			return l
		}
	}
	t.Fatalf("no %s %s/%s limit in %+v", scope, m, w, st.Limits)
	return store.LimitStatus{}
}

// wantCounters checks the spent and reserved amounts of a limit.
func wantCounters(t *testing.T, l store.LimitStatus, spent, reserved int64) {
	t.Helper()
	if l.Spent != spent || l.Reserved != reserved {
		t.Fatalf("%s %s/%s: spent %d reserved %d, want %d and %d", l.Scope, l.Metric, l.Window, l.Spent, l.Reserved, spent, reserved)
	}
}

func wantSpendRefusal(t *testing.T, err error) *store.SpendLimitError {
	t.Helper()
	var se *store.SpendLimitError
	if !errors.Is(err, store.ErrSpendLimitExceeded) || !errors.As(err, &se) {
		t.Fatalf("got %v, want a *SpendLimitError", err)
	}
	return se
}

func testSpendBasic(t *testing.T, e *env) {
	s := e.spendSession(costLimit(1_000_000, store.WindowLifetime))
	r := e.mustReserve(s.ID, usd(400_000), "r1")
	if r.Status != store.ReservationReserved || r.ID != "r1" || r.AgentID != s.AgentID || r.Amount != usd(400_000) ||
		r.Currency != "USD" || !r.ExpiresAt.Equal(e.clock.Now().Add(store.DefaultReservationTTL)) {
		t.Fatalf("reservation = %+v", r)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 400_000)
	r = e.settle(s.ID, "r1", usd(250_000))
	if r.Status != store.ReservationSettled || r.Actual != usd(250_000) || r.ClosedAt.IsZero() {
		t.Fatalf("settled = %+v", r)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 250_000, 0)
	// Exactly the rest fits; one micro-unit more does not.
	e.mustReserve(s.ID, usd(750_000), "r2")
	_, err := e.reserve(s.ID, usd(1), "r3")
	se := wantSpendRefusal(t, err)
	if se.Limit != 1_000_000 || se.Spent != 250_000 || se.Reserved != 750_000 || se.Requested != 1 {
		t.Fatalf("refusal = %+v", se)
	}
	if r := e.release(s.ID, "r2"); r.Status != store.ReservationReleased {
		t.Fatalf("released = %+v", r)
	}
	st := e.spendStatus(s.ID)
	l := limitIn(t, st, store.ScopeSession, store.MetricCost, store.WindowLifetime)
	wantCounters(t, l, 250_000, 0)
	if l.Remaining() != 750_000 || st.Live != 0 {
		t.Fatalf("remaining %d, live %d", l.Remaining(), st.Live)
	}
	e.mustReserve(s.ID, usd(750_000), "r4")
	if got, err := e.st.Spend().Reservation(e.ctx, s.ID, "r4"); err != nil || got.Status != store.ReservationReserved {
		t.Fatalf("Reservation = %+v, %v", got, err)
	}
	if _, err := e.st.Spend().Reservation(e.ctx, s.ID, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing reservation: %v", err)
	}
	// A reservation without a request id gets one.
	e.release(s.ID, "r4")
	if r := e.mustReserve(s.ID, usd(1), ""); r.ID == "" {
		t.Fatal("reservation without a request id has no id")
	}
}

func testSpendRefusalTyped(t *testing.T, e *env) {
	s := e.spendSession(tokenLimit(store.MetricTotalTokens, 12_345, store.WindowDay))
	_, err := e.reserve(s.ID, store.SpendAmount{InputTokens: 10_000, OutputTokens: 2_346}, "")
	se := wantSpendRefusal(t, err)
	want := store.SpendLimitError{SessionID: s.ID, AgentID: s.AgentID, Scope: store.ScopeSession, Metric: store.MetricTotalTokens,
		Window: store.WindowDay, WindowStart: store.WindowDay.Start(e.clock.Now()), Limit: 12_345, Requested: 12_346}
	if !se.WindowStart.Equal(want.WindowStart) {
		t.Fatalf("window start %v, want %v", se.WindowStart, want.WindowStart)
	}
	se.WindowStart = want.WindowStart
	if *se != want {
		t.Fatalf("refusal = %+v, want %+v", *se, want)
	}
	if err.Error() != store.ErrSpendLimitExceeded.Error() {
		t.Fatalf("Error() = %q, want the constant text", err)
	}
	for _, leak := range []string{"12345", "12346", s.ID, s.AgentID, "total", "day"} {
		if strings.Contains(err.Error(), leak) {
			t.Fatalf("Error() %q reveals %q", err, leak)
		}
	}
	for _, other := range []error{store.ErrBudgetExceeded, store.ErrRateLimited, store.ErrInvalidInput} {
		if errors.Is(err, other) {
			t.Fatalf("the refusal matches %v too", other)
		}
	}
}

func testSpendMetrics(t *testing.T, e *env) {
	s := e.spendSession(
		tokenLimit(store.MetricInputTokens, 100, store.WindowLifetime),
		tokenLimit(store.MetricOutputTokens, 50, store.WindowLifetime),
		tokenLimit(store.MetricTotalTokens, 120, store.WindowLifetime),
		costLimit(10, store.WindowLifetime))
	for _, c := range []struct {
		amount store.SpendAmount
		metric store.SpendMetric
	}{
		{store.SpendAmount{InputTokens: 101}, store.MetricInputTokens},
		{store.SpendAmount{OutputTokens: 51}, store.MetricOutputTokens},
		{store.SpendAmount{InputTokens: 80, OutputTokens: 41}, store.MetricTotalTokens},
		{store.SpendAmount{CostMicros: 11}, store.MetricCost},
	} {
		_, err := e.reserve(s.ID, c.amount, "")
		if se := wantSpendRefusal(t, err); se.Metric != c.metric {
			t.Fatalf("%+v refused on %s, want %s", c.amount, se.Metric, c.metric)
		}
	}
	e.mustReserve(s.ID, store.SpendAmount{InputTokens: 80, OutputTokens: 40, CostMicros: 10}, "all")
	st := e.spendStatus(s.ID)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricInputTokens, store.WindowLifetime), 0, 80)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricOutputTokens, store.WindowLifetime), 0, 40)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricTotalTokens, store.WindowLifetime), 0, 120)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 10)
	e.settle(s.ID, "all", store.SpendAmount{InputTokens: 70, OutputTokens: 10, CostMicros: 3})
	st = e.spendStatus(s.ID)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricInputTokens, store.WindowLifetime), 70, 0)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricOutputTokens, store.WindowLifetime), 10, 0)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricTotalTokens, store.WindowLifetime), 80, 0)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricCost, store.WindowLifetime), 3, 0)
	// A reservation asks only for what it names: no cost, no cost check.
	e.mustReserve(s.ID, store.SpendAmount{InputTokens: 30}, "")
	// The order of the limits in the status is the order they were set.
	var got []store.SpendMetric
	for _, l := range st.Limits {
		got = append(got, l.Metric)
	}
	if fmt.Sprint(got) != "[input_tokens output_tokens total_tokens cost]" {
		t.Fatalf("limits listed as %v", got)
	}
}

func testSpendSessionChecks(t *testing.T, e *env) {
	_, err := e.reserve("missing", usd(1), "")
	wantErr(t, err, store.ErrNotFound)
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	_, err = e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, AgentID: "someone-else", Amount: usd(1), Currency: "USD"})
	wantErr(t, err, store.ErrAgentMismatch)
	if _, err := e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, AgentID: s.AgentID, Amount: usd(1), Currency: "USD", RequestID: "ok"}); err != nil {
		t.Fatalf("Reserve with the session's agent: %v", err)
	}
	_, err = e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "ok", AgentID: "someone-else", Actual: usd(1)})
	wantErr(t, err, store.ErrAgentMismatch)
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.reserve(s.ID, usd(1), "")
	wantErr(t, err, store.ErrClosed)
	// A reservation made before the close can still be settled.
	if r := e.settle(s.ID, "ok", usd(1)); r.Status != store.ReservationSettled {
		t.Fatalf("settle after close: %+v", r)
	}
	req := baseRequest()
	req.TimeLimit = time.Minute
	s2 := e.create(req)
	e.clock.Advance(time.Minute)
	_, err = e.reserve(s2.ID, usd(1), "")
	wantErr(t, err, store.ErrExpired)
	e.clock.Advance(-time.Hour)
	e.reopen()
	if got := e.get(s2.ID); got.Status != store.StatusExpired {
		t.Fatalf("status after a refused reserve and reopen with the clock moved back = %s, want expired", got.Status)
	}
}

func testSpendAgentLimits(t *testing.T, e *env) {
	a := e.spendSession()
	b := e.create(func() store.CreateRequest { r := baseRequest(); r.AgentID = a.AgentID; return r }())
	other := e.spendSession()
	if err := e.st.Spend().SetAgentLimits(e.ctx, a.AgentID, []store.SpendLimit{costLimit(1000, store.WindowLifetime)}); err != nil {
		t.Fatal(err)
	}
	e.mustReserve(a.ID, usd(600), "a1")
	_, err := e.reserve(b.ID, usd(600), "b1")
	se := wantSpendRefusal(t, err)
	if se.Scope != store.ScopeAgent || se.AgentID != a.AgentID || se.SessionID != b.ID || se.Spent != 0 || se.Reserved != 600 || se.Requested != 600 {
		t.Fatalf("refusal = %+v", se)
	}
	// Another agent's sessions are not bound by it.
	e.mustReserve(other.ID, usd(5000), "")
	e.settle(a.ID, "a1", usd(300))
	e.mustReserve(b.ID, usd(600), "b2")
	st, err := e.st.Spend().AgentStatus(e.ctx, a.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, limitIn(t, st, store.ScopeAgent, store.MetricCost, store.WindowLifetime), 300, 600)
	if st.Live != 1 {
		t.Fatalf("live reservations of the agent = %d, want 1", st.Live)
	}
	// The session's own limit is checked first, then the agent's.
	c := e.create(func() store.CreateRequest {
		r := baseRequest()
		r.AgentID = a.AgentID
		r.SpendLimits = []store.SpendLimit{costLimit(200, store.WindowLifetime)}
		return r
	}())
	_, err = e.reserve(c.ID, usd(300), "")
	if se := wantSpendRefusal(t, err); se.Scope != store.ScopeSession {
		t.Fatalf("refused on the %s limit, want the session's", se.Scope)
	}
	_, err = e.reserve(c.ID, usd(150), "")
	if se := wantSpendRefusal(t, err); se.Scope != store.ScopeAgent || se.Spent+se.Reserved != 900 {
		t.Fatalf("refusal = %+v, want the agent's with 900 counted", se)
	}
	st = e.spendStatus(c.ID)
	if len(st.Limits) != 2 || st.Limits[0].Scope != store.ScopeSession || st.Limits[1].Scope != store.ScopeAgent {
		t.Fatalf("status of a session lists %+v, want its limit then its agent's", st.Limits)
	}
}

func testSpendSetAgentLimits(t *testing.T, e *env) {
	s := e.spendSession()
	set := func(limits ...store.SpendLimit) {
		t.Helper()
		if err := e.st.Spend().SetAgentLimits(e.ctx, s.AgentID, limits); err != nil {
			t.Fatal(err)
		}
	}
	set(costLimit(1000, store.WindowLifetime), tokenLimit(store.MetricInputTokens, 10, store.WindowHour))
	e.mustReserve(s.ID, store.SpendAmount{CostMicros: 400, InputTokens: 5}, "r")
	e.settle(s.ID, "r", store.SpendAmount{CostMicros: 400, InputTokens: 5})
	// Raising a limit keeps what was spent; dropping one forgets it.
	set(costLimit(2000, store.WindowLifetime))
	st, _ := e.st.Spend().AgentStatus(e.ctx, s.AgentID)
	if len(st.Limits) != 1 {
		t.Fatalf("limits after set = %+v", st.Limits)
	}
	l := limitIn(t, st, store.ScopeAgent, store.MetricCost, store.WindowLifetime)
	wantCounters(t, l, 400, 0)
	if l.Limit != 2000 {
		t.Fatalf("limit = %d, want 2000", l.Limit)
	}
	// Another currency is another limit: the counters start afresh.
	set(store.SpendLimit{Metric: store.MetricCost, Limit: 10, Currency: "EUR"})
	st, _ = e.st.Spend().AgentStatus(e.ctx, s.AgentID)
	l = limitIn(t, st, store.ScopeAgent, store.MetricCost, store.WindowLifetime)
	if l.Currency != "EUR" || l.Spent != 0 {
		t.Fatalf("EUR limit = %+v", l)
	}
	// A reservation in dollars cannot be checked against a limit in euros.
	_, err := e.reserve(s.ID, usd(1), "")
	wantErr(t, err, store.ErrInvalidInput)
	set()
	st, _ = e.st.Spend().AgentStatus(e.ctx, s.AgentID)
	if len(st.Limits) != 0 {
		t.Fatalf("limits after removing all = %+v", st.Limits)
	}
	e.mustReserve(s.ID, usd(1_000_000), "")
	err = e.st.Spend().SetAgentLimits(e.ctx, s.AgentID, []store.SpendLimit{costLimit(1, ""), costLimit(2, store.WindowLifetime)})
	wantErr(t, err, store.ErrInvalidInput)
}

// at moves the clock to t (which must not be before it).
func (e *env) at(t time.Time) {
	e.clock.Advance(t.Sub(e.clock.Now()))
}

func testSpendHourWindow(t *testing.T, e *env) {
	s := e.spendSession(tokenLimit(store.MetricOutputTokens, 100, store.WindowHour))
	now := e.clock.Now()
	hourEnd := store.WindowHour.Start(now).Add(time.Hour)
	e.at(hourEnd.Add(-time.Millisecond))
	e.mustReserve(s.ID, store.SpendAmount{OutputTokens: 100}, "a")
	e.settle(s.ID, "a", store.SpendAmount{OutputTokens: 100})
	_, err := e.reserve(s.ID, store.SpendAmount{OutputTokens: 1}, "")
	wantSpendRefusal(t, err)
	e.clock.Advance(time.Millisecond)
	l := limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricOutputTokens, store.WindowHour)
	wantCounters(t, l, 0, 0)
	if !l.WindowStart.Equal(hourEnd) {
		t.Fatalf("window start %v, want %v", l.WindowStart, hourEnd)
	}
	e.mustReserve(s.ID, store.SpendAmount{OutputTokens: 100}, "b")
	_, err = e.reserve(s.ID, store.SpendAmount{OutputTokens: 1}, "")
	if se := wantSpendRefusal(t, err); !se.WindowStart.Equal(hourEnd) || se.Reserved != 100 {
		t.Fatalf("refusal = %+v", se)
	}
}

func testSpendDayMonthWindows(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowDay), costLimit(250, store.WindowMonth))
	spend := func(id string, n int64) {
		t.Helper()
		e.mustReserve(s.ID, usd(n), id)
		e.settle(s.ID, id, usd(n))
	}
	// The clock starts on 2 January 2026.
	e.at(time.Date(2026, 1, 30, 23, 59, 59, 999e6, time.UTC))
	spend("d1", 100)
	_, err := e.reserve(s.ID, usd(1), "")
	if se := wantSpendRefusal(t, err); se.Window != store.WindowDay {
		t.Fatalf("refused by the %s window, want the day", se.Window)
	}
	e.clock.Advance(time.Millisecond) // 31 January
	spend("d2", 100)
	e.at(time.Date(2026, 1, 31, 23, 59, 59, 999e6, time.UTC))
	_, err = e.reserve(s.ID, usd(1), "")
	if se := wantSpendRefusal(t, err); se.Window != store.WindowDay {
		t.Fatalf("refused by the %s window, want the day", se.Window)
	}
	e.clock.Advance(time.Millisecond) // 1 February: a new day and a new month
	spend("d3", 100)
	st := e.spendStatus(s.ID)
	l := limitIn(t, st, store.ScopeSession, store.MetricCost, store.WindowMonth)
	wantCounters(t, l, 100, 0)
	if want := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC); !l.WindowStart.Equal(want) {
		t.Fatalf("month window starts %v, want %v", l.WindowStart, want)
	}
	e.at(time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC))
	spend("d4", 100)
	e.at(time.Date(2026, 2, 3, 0, 0, 0, 0, time.UTC))
	_, err = e.reserve(s.ID, usd(51), "")
	if se := wantSpendRefusal(t, err); se.Window != store.WindowMonth || se.Spent != 200 || se.Limit != 250 {
		t.Fatalf("refusal = %+v, want the month's with 200 spent", se)
	}
	spend("d5", 50)
}

func testSpendLifetime(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	e.mustReserve(s.ID, usd(100), "a")
	e.settle(s.ID, "a", usd(100))
	for _, d := range []time.Duration{time.Hour, 24 * time.Hour, 40 * 24 * time.Hour} {
		e.clock.Advance(d)
		_, err := e.reserve(s.ID, usd(1), "")
		wantSpendRefusal(t, err)
	}
}

func testSpendSettleAcrossWindows(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowHour))
	hourEnd := store.WindowHour.Start(e.clock.Now()).Add(time.Hour)
	e.at(hourEnd.Add(-time.Second))
	e.mustReserve(s.ID, usd(60), "old")
	e.clock.Advance(2 * time.Second)
	// The new hour starts empty: the reservation counts in its own hour.
	e.mustReserve(s.ID, usd(100), "new")
	e.settle(s.ID, "old", usd(60))
	l := limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowHour)
	wantCounters(t, l, 0, 100)
	e.settle(s.ID, "new", usd(100))
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowHour), 100, 0)
}

func testSpendLapse(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	r, err := e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, RequestID: "r", Amount: usd(100), Currency: "USD", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !r.ExpiresAt.Equal(e.clock.Now().Add(time.Minute)) {
		t.Fatalf("expires %v", r.ExpiresAt)
	}
	_, err = e.reserve(s.ID, usd(1), "")
	wantSpendRefusal(t, err)
	e.clock.Advance(time.Minute - time.Millisecond)
	_, err = e.reserve(s.ID, usd(1), "")
	wantSpendRefusal(t, err)
	e.clock.Advance(time.Millisecond)
	// Lapsed: the status no longer counts it, before anything released it.
	st := e.spendStatus(s.ID)
	wantCounters(t, limitIn(t, st, store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 0)
	if st.Live != 0 {
		t.Fatalf("live = %d", st.Live)
	}
	e.mustReserve(s.ID, usd(100), "again")
	got, err := e.st.Spend().Reservation(e.ctx, s.ID, "r")
	if err != nil || got.Status != store.ReservationExpired || !got.ClosedAt.Equal(e.clock.Now()) {
		t.Fatalf("lapsed reservation = %+v, %v", got, err)
	}
	// Releasing a lapsed reservation changes nothing.
	if r := e.release(s.ID, "r"); r.Status != store.ReservationExpired {
		t.Fatalf("release of a lapsed reservation = %+v", r)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 100)
}

func testSpendLateSettle(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	if _, err := e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, RequestID: "slow", Amount: usd(80), Currency: "USD", TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	e.mustReserve(s.ID, usd(100), "next") // the lapsed one was released
	// The slow call ends after all: its usage happened and is counted.
	if r := e.settle(s.ID, "slow", usd(30)); r.Status != store.ReservationSettled || r.Actual != usd(30) {
		t.Fatalf("late settle = %+v", r)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 30, 100)
}

func testSpendReleaseExpired(t *testing.T, e *env) {
	var sessions []store.Session
	for i := range 3 {
		s := e.spendSession(costLimit(100, store.WindowLifetime))
		sessions = append(sessions, s)
		for j := range i + 1 {
			if _, err := e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, RequestID: fmt.Sprint("r", j),
				Amount: usd(10), Currency: "USD", TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, err := e.st.Spend().ReleaseExpired(e.ctx); err != nil || n != 0 {
		t.Fatalf("ReleaseExpired before expiry = %d, %v", n, err)
	}
	e.clock.Advance(time.Minute)
	if n, err := e.st.Spend().ReleaseExpired(e.ctx); err != nil || n != 6 {
		t.Fatalf("ReleaseExpired = %d, %v; want 6", n, err)
	}
	for _, s := range sessions {
		wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 0)
	}
	if n, err := e.st.Spend().ReleaseExpired(e.ctx); err != nil || n != 0 {
		t.Fatalf("second ReleaseExpired = %d, %v", n, err)
	}
}

func testSpendIdempotent(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	first := e.mustReserve(s.ID, usd(60), "r")
	e.clock.Advance(time.Second)
	again := e.mustReserve(s.ID, usd(60), "r")
	if again != first {
		t.Fatalf("retry returned %+v, first %+v", again, first)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 60)
	_, err := e.reserve(s.ID, usd(61), "r")
	wantErr(t, err, store.ErrConflict)
	e.settle(s.ID, "r", usd(50))
	if r := e.settle(s.ID, "r", usd(50)); r.Actual != usd(50) {
		t.Fatalf("settle retry = %+v", r)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 50, 0)
	_, err = e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r", Actual: usd(49)})
	wantErr(t, err, store.ErrConflict)
	_, err = e.st.Spend().Release(e.ctx, store.ReleaseRequest{SessionID: s.ID, RequestID: "r"})
	wantErr(t, err, store.ErrConflict)
	// A replay of a settled reservation's reserve returns it, settled.
	if r := e.mustReserve(s.ID, usd(60), "r"); r.Status != store.ReservationSettled {
		t.Fatalf("reserve replay after settle = %+v", r)
	}
	e.mustReserve(s.ID, usd(40), "q")
	e.release(s.ID, "q")
	if r := e.release(s.ID, "q"); r.Status != store.ReservationReleased {
		t.Fatalf("release retry = %+v", r)
	}
	_, err = e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "q", Actual: usd(1)})
	wantErr(t, err, store.ErrConflict)
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 50, 0)
	_, err = e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "never", Actual: usd(1)})
	wantErr(t, err, store.ErrNotFound)
}

func testSpendRefusalReplay(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	e.mustReserve(s.ID, usd(90), "big")
	_, err := e.reserve(s.ID, usd(20), "small")
	first := wantSpendRefusal(t, err)
	e.release(s.ID, "big")
	// Room has freed, but a retry of the refused id returns its outcome.
	_, err = e.reserve(s.ID, usd(20), "small")
	if again := wantSpendRefusal(t, err); *again != *first {
		t.Fatalf("replayed refusal %+v, first %+v", again, first)
	}
	if _, err := e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "small", Actual: usd(1)}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("settle of a refused reservation: %v", err)
	}
	e.mustReserve(s.ID, usd(20), "other")
}

func testSpendConcurrentRetries(t *testing.T, e *env) {
	s := e.spendSession(costLimit(1000, store.WindowLifetime))
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			if r, err := e.reserve(s.ID, usd(100), "same"); err != nil || r.Status != store.ReservationReserved {
				t.Errorf("retry: %+v, %v", r, err)
			}
		})
	}
	wg.Wait()
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 100)
}

func testSpendConcurrentSettle(t *testing.T, e *env) {
	s := e.spendSession(costLimit(1000, store.WindowLifetime))
	e.mustReserve(s.ID, usd(100), "r")
	second := e.open()
	var wg sync.WaitGroup
	for i := range 32 {
		sp := e.st.Spend()
		if i%2 == 1 {
			sp = second.Spend()
		}
		wg.Go(func() {
			if _, err := sp.Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r", Actual: usd(70)}); err != nil {
				t.Errorf("settle retry: %v", err)
			}
		})
	}
	wg.Wait()
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 70, 0)
}

func testSpendConversationUsage(t *testing.T, e *env) {
	s := e.spendSession(costLimit(5_000_000, store.WindowLifetime))
	if _, err := e.st.Conversations().Save(e.ctx, store.NewConversation("conv")); err != nil {
		t.Fatal(err)
	}
	e.mustReserve(s.ID, store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: 2_500_000}, "r")
	_, err := e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r", Conversation: "missing",
		Actual: store.SpendAmount{InputTokens: 800, OutputTokens: 200, CostMicros: 1_250_000}})
	wantErr(t, err, store.ErrNotFound)
	// What is missing is the conversation, not the session.
	var nf *store.NotFoundError
	if !errors.As(err, &nf) || nf.Resource != "conversation" || nf.ID != "missing" {
		t.Fatalf("settle into a missing conversation: %#v, want a NotFoundError of conversation \"missing\"", err)
	}
	if !strings.Contains(err.Error(), "conversation not found") {
		t.Fatalf("settle into a missing conversation says %q, want it to name the conversation", err)
	}
	// The failed settle changed nothing.
	if r, _ := e.st.Spend().Reservation(e.ctx, s.ID, "r"); r.Status != store.ReservationReserved {
		t.Fatalf("reservation after a failed settle = %+v", r)
	}
	if _, err := e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: "r", Conversation: "conv",
		Actual: store.SpendAmount{InputTokens: 800, OutputTokens: 200, CostMicros: 1_250_000}}); err != nil {
		t.Fatal(err)
	}
	info, err := e.st.Conversations().Info(e.ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	u := info.TotalUsage
	if u.PromptTokens != 800 || u.CompletionTokens != 200 || u.TotalTokens != 1000 || info.TotalCost != 1.25 {
		t.Fatalf("conversation usage %+v cost %v", u, info.TotalCost)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 1_250_000, 0)
}

func testSpendInvalid(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	e.mustReserve(s.ID, usd(10), "held")
	before := e.spendStatus(s.ID)
	events := e.auditCount()
	for _, req := range []store.ReserveRequest{
		{SessionID: s.ID, Amount: store.SpendAmount{CostMicros: -1}, Currency: "USD"},
		{SessionID: s.ID, Amount: store.SpendAmount{InputTokens: -1}},
		{SessionID: s.ID, Amount: usd(1)},                  // cost without a currency
		{SessionID: s.ID, Amount: usd(1), Currency: "usd"}, // not upper-case
		{SessionID: s.ID, Amount: usd(1), Currency: "US"},  // too short
		{SessionID: s.ID, Amount: usd(1), Currency: "EUR"}, // not the limit's
		{SessionID: s.ID, Amount: usd(1), Currency: "USD", TTL: -time.Second},
		{SessionID: s.ID, Amount: usd(1), Currency: "USD", TTL: time.Millisecond + time.Microsecond},
		{SessionID: s.ID, Amount: usd(1), Currency: "USD", TTL: 365 * 24 * time.Hour},
		{SessionID: "", Amount: usd(1), Currency: "USD"},
		{SessionID: s.ID, RequestID: "bad\x00id", Amount: usd(1), Currency: "USD"},
		// Names as governance takes them (store.ValidateName): no control
		// characters, no white space at either end.
		{SessionID: s.ID, RequestID: "req\u0085", Amount: usd(1), Currency: "USD"},
		{SessionID: s.ID, RequestID: " req", Amount: usd(1), Currency: "USD"},
		{SessionID: s.ID, AgentID: "agent\t", Amount: usd(1), Currency: "USD"},
		{SessionID: s.ID, Amount: store.SpendAmount{InputTokens: 1 << 62, OutputTokens: 1 << 62}},
	} {
		if _, err := e.st.Spend().Reserve(e.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Reserve(%+v) = %v, want ErrInvalidInput", req, err)
		}
	}
	for _, req := range []store.SettleRequest{
		{SessionID: s.ID, RequestID: "held", Actual: usd(11)}, // more than reserved
		{SessionID: s.ID, RequestID: "held", Actual: store.SpendAmount{InputTokens: 1}},
		{SessionID: s.ID, RequestID: "held", Actual: usd(-1)},
		{SessionID: s.ID, RequestID: "", Actual: usd(1)},
		{SessionID: s.ID, RequestID: "held", Actual: usd(1), Conversation: "\x01"},
	} {
		if _, err := e.st.Spend().Settle(e.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Settle(%+v) = %v, want ErrInvalidInput", req, err)
		}
	}
	if _, err := e.st.Spend().Release(e.ctx, store.ReleaseRequest{SessionID: s.ID}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Release without an id: %v", err)
	}
	if err := e.st.Spend().SetAgentLimits(e.ctx, "agent\u009b", []store.SpendLimit{costLimit(1, store.WindowDay)}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("SetAgentLimits of an agent name with a control character: %v", err)
	}
	for _, limits := range [][]store.SpendLimit{
		{{Metric: "calls", Limit: 1}},
		{{Metric: store.MetricCost, Limit: 1}},                         // no currency
		{{Metric: store.MetricInputTokens, Limit: 1, Currency: "USD"}}, // currency on tokens
		{{Metric: store.MetricCost, Limit: -1, Currency: "USD"}},
		{{Metric: store.MetricCost, Window: "week", Limit: 1, Currency: "USD"}},
		{costLimit(1, store.WindowDay), costLimit(2, store.WindowDay)},
	} {
		req := baseRequest()
		req.ID = "invalid-limits"
		req.SpendLimits = limits
		if _, err := e.gov().Create(e.ctx, req); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Create with limits %+v = %v, want ErrInvalidInput", limits, err)
		}
		if err := e.st.Spend().SetAgentLimits(e.ctx, s.AgentID, limits); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("SetAgentLimits(%+v) = %v, want ErrInvalidInput", limits, err)
		}
	}
	if _, err := e.gov().Get(e.ctx, "invalid-limits"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a create with invalid limits left a session: %v", err)
	}
	after := e.spendStatus(s.ID)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("invalid requests changed the spend:\n%+v\n%+v", before, after)
	}
	if n := e.auditCount(); n != events {
		t.Fatalf("invalid requests appended %d audit events", n-events)
	}
}

func testSpendCleanup(t *testing.T, e *env) {
	a := e.spendSession(costLimit(100, store.WindowLifetime))
	if err := e.st.Spend().SetAgentLimits(e.ctx, a.AgentID, []store.SpendLimit{costLimit(100, store.WindowLifetime)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: a.ID, RequestID: "held", Amount: usd(70),
		Currency: "USD", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.gov().Close(e.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.gov().Cleanup(e.ctx); err != nil || n != 0 {
		t.Fatalf("Cleanup with a live reservation = %d, %v; want 0", n, err)
	}
	e.clock.Advance(time.Hour)
	if n, err := e.gov().Cleanup(e.ctx); err != nil || n != 1 {
		t.Fatalf("Cleanup after the lapse = %d, %v; want 1", n, err)
	}
	if _, err := e.gov().Get(e.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("cleaned session: %v", err)
	}
	st, err := e.st.Spend().AgentStatus(e.ctx, a.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, limitIn(t, st, store.ScopeAgent, store.MetricCost, store.WindowLifetime), 0, 0)
	if _, err := e.st.Spend().Status(e.ctx, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("status of a removed session: %v", err)
	}
}

func testSpendReopen(t *testing.T, e *env) {
	s := e.spendSession(costLimit(100, store.WindowLifetime))
	e.mustReserve(s.ID, usd(30), "a")
	e.settle(s.ID, "a", usd(20))
	e.mustReserve(s.ID, usd(40), "b")
	e.reopen()
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 20, 40)
	e.settle(s.ID, "b", usd(40))
	_, err := e.reserve(s.ID, usd(41), "")
	wantSpendRefusal(t, err)
}

// spendHammer reserves amount against sess from workers goroutines until
// a refusal shows that nothing more can ever fit (Spent + Requested >
// Limit); every third reservation is released, the others settled in
// full. Every refusal must be justified by its own figures. It returns
// the reservations settled and released, and the unjustified refusals.
func spendHammer(ctx context.Context, sp store.Spend, sess, prefix string, workers int, amount int64, ttl time.Duration) (settled, released, falseRefusals int64, err error) {
	var s, r, f atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				_, err := sp.Reserve(ctx, store.ReserveRequest{SessionID: sess, RequestID: id, Amount: usd(amount), Currency: "USD", TTL: ttl})
				var se *store.SpendLimitError
				switch {
				case errors.As(err, &se):
					if se.Spent+se.Reserved+se.Requested <= se.Limit {
						f.Add(1)
					}
					if se.Spent+se.Requested > se.Limit {
						return // nothing more can ever fit
					}
					continue
				case err != nil:
					firstErr.CompareAndSwap(nil, fmt.Errorf("reserve %s: %w", id, err))
					return
				}
				if i%3 == 0 {
					_, err = sp.Release(ctx, store.ReleaseRequest{SessionID: sess, RequestID: id})
					r.Add(1)
				} else {
					_, err = sp.Settle(ctx, store.SettleRequest{SessionID: sess, RequestID: id, Actual: usd(amount)})
					s.Add(1)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("finish %s: %w", id, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if v := firstErr.Load(); v != nil {
		err = v.(error)
	}
	return s.Load(), r.Load(), f.Load(), err
}

func testSpendConcurrentExact(t *testing.T, e *env) {
	const amount, fits = 1000, 200
	limit := int64(amount*fits + amount - 1) // one micro-unit short of one more
	s := e.spendSession(costLimit(limit, store.WindowLifetime))
	settled, released, falseRefusals, err := spendHammer(e.ctx, e.st.Spend(), s.ID, "g", 32, amount, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if settled != fits || falseRefusals != 0 {
		t.Fatalf("%d reservations of %d settled against a limit of %d (%d released), %d refusals not justified; want exactly %d and 0",
			settled, amount, limit, released, falseRefusals, fits)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), fits*amount, 0)
	e.verifyAudit()
}

// testSpendConcurrentMixed: 16 goroutines reserve and settle amounts of
// five sizes against one lifetime limit; no refusal is unjustified, the
// counters hold exactly what was settled, and the spend never passes the
// limit. Each goroutine makes 100 attempts (1,600 in all): the settled
// amounts reach the limit within about the first ten attempts of each
// goroutine, and the rest are the contended attempts at and just under the
// limit, where the small amounts still fit and the large ones are refused
// (the test checks that some were). 400 attempts each repeated only the
// refusals at the full limit, 4,800 more of them, which took 54 s of the
// PostgreSQL race run.
func testSpendConcurrentMixed(t *testing.T, e *env) {
	const limit = 100_000
	s := e.spendSession(costLimit(limit, store.WindowLifetime))
	amounts := []int64{1, 7, 1000, 4999, 250}
	var spent, admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := 0; i < 100; i++ {
				a := amounts[(w+i)%len(amounts)]
				id := fmt.Sprintf("m-%d-%d", w, i)
				_, err := e.reserve(s.ID, usd(a), id)
				var se *store.SpendLimitError
				if errors.As(err, &se) {
					if se.Spent+se.Reserved+se.Requested <= se.Limit {
						t.Errorf("refusal %+v, but it fits", se)
					}
					refused.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("reserve: %v", err)
					return
				}
				admitted.Add(1)
				actual := a - a/3
				if _, err := e.st.Spend().Settle(e.ctx, store.SettleRequest{SessionID: s.ID, RequestID: id, Actual: usd(actual)}); err != nil {
					t.Errorf("settle: %v", err)
					return
				}
				spent.Add(actual)
			}
		})
	}
	wg.Wait()
	l := limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime)
	wantCounters(t, l, spent.Load(), 0)
	if l.Spent > limit {
		t.Fatalf("spent %d past the limit %d", l.Spent, limit)
	}
	if refused.Load() == 0 {
		t.Fatalf("no reservation refused (%d admitted, %d of %d micro-units spent): the run never reached the limit", admitted.Load(), l.Spent, limit)
	}
	t.Logf("%d reservations admitted, %d refused, %d of %d micro-units spent", admitted.Load(), refused.Load(), l.Spent, limit)
}

func testSpendConcurrentAgent(t *testing.T, e *env) {
	const amount, fits = 500, 60
	first := e.spendSession()
	if err := e.st.Spend().SetAgentLimits(e.ctx, first.AgentID, []store.SpendLimit{costLimit(amount*fits+amount-1, store.WindowDay)}); err != nil {
		t.Fatal(err)
	}
	sessions := []string{first.ID}
	for range 3 {
		req := baseRequest()
		req.AgentID = first.AgentID
		sessions = append(sessions, e.create(req).ID)
	}
	second := e.open()
	var total atomic.Int64
	var wg sync.WaitGroup
	for i, id := range sessions {
		sp := e.st.Spend()
		if i%2 == 1 {
			sp = second.Spend()
		}
		wg.Go(func() {
			settled, _, falseRefusals, err := spendHammer(e.ctx, sp, id, fmt.Sprint("s", i), 4, amount, time.Hour)
			if err != nil || falseRefusals != 0 {
				t.Errorf("session %d: %v, %d unjustified refusals", i, err, falseRefusals)
			}
			total.Add(settled)
		})
	}
	wg.Wait()
	if total.Load() != fits {
		t.Fatalf("%d reservations settled across the agent's %d sessions and two stores, want exactly %d", total.Load(), len(sessions), fits)
	}
}

func init() {
	registerRole("spend-hammer", spendHammerRole)
	registerRole("spend-reserve-and-hang", spendHangRole)
}

// spendHammerRole: args are session id, workers, amount, id prefix. It
// runs spendHammer and reports {"settled":N,"released":M,"false":F}.
func spendHammerRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 4 {
		return fmt.Errorf("spend-hammer wants 4 args, got %d", len(args))
	}
	workers, _ := strconv.Atoi(args[1])
	amount, _ := strconv.ParseInt(args[2], 10, 64)
	settled, released, falseRefusals, err := spendHammer(ctx, st.Spend(), args[0], args[3], workers, amount, time.Hour)
	if err != nil {
		return err
	}
	return report(out, map[string]int64{"settled": settled, "released": released, "false": falseRefusals})
}

// spendHangRole: args are session id, count, amount, TTL in ms. It makes
// count reservations, reports {"reserved":count}, and waits to be killed.
func spendHangRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 4 {
		return fmt.Errorf("spend-reserve-and-hang wants 4 args, got %d", len(args))
	}
	n, _ := strconv.Atoi(args[1])
	amount, _ := strconv.ParseInt(args[2], 10, 64)
	ttl, _ := strconv.ParseInt(args[3], 10, 64)
	for i := range n {
		if _, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: args[0], RequestID: fmt.Sprint("hang-", i),
			Amount: usd(amount), Currency: "USD", TTL: time.Duration(ttl) * time.Millisecond}); err != nil {
			return err
		}
	}
	if err := report(out, map[string]int{"reserved": n}); err != nil {
		return err
	}
	if f, ok := out.(interface{ Flush() error }); ok {
		f.Flush()
	}
	select {} // until killed
}

func testSpendMultiProcess(t *testing.T, e *env) {
	const procs, workers, amount, fits = 3, 6, 1000, 400
	limit := int64(amount*fits + amount - 1)
	// Every process judges expiry on the env's clock: spawned helpers run
	// on the wall clock shifted to agree with it at spawn.
	st := e.st
	req := baseRequest()
	req.TimeLimit = 100 * 365 * 24 * time.Hour // helpers' clocks move on with the wall clock
	req.SpendLimits = []store.SpendLimit{costLimit(limit, store.WindowLifetime)}
	s, err := st.Governance().Create(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	type result struct{ Settled, Released, False int64 }
	results := make([]result, procs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range procs {
		cmd, stdout := e.spawn("spend-hammer", s.ID, strconv.Itoa(workers), strconv.Itoa(amount), fmt.Sprint("p", i))
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var r map[string]int64
				if json.Unmarshal(sc.Bytes(), &r) == nil {
					results[i] = result{r["settled"], r["released"], r["false"]}
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper process %d: %v", i, err)
			}
		})
	}
	settled, released, falseRefusals, err := spendHammer(e.ctx, st.Spend(), s.ID, "parent", workers, amount, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, r := range results {
		settled += r.Settled
		released += r.Released
		falseRefusals += r.False
	}
	stat, err := st.Spend().Status(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	l := limitIn(t, stat, store.ScopeSession, store.MetricCost, store.WindowLifetime)
	t.Logf("%d processes x %d goroutines: %d reservations of %d micro-units settled (%d micro-units) against a limit of %d; %d released; %d unjustified refusals",
		procs+1, workers, settled, amount, l.Spent, limit, released, falseRefusals)
	if settled != fits || l.Spent != fits*amount || l.Reserved != 0 || falseRefusals != 0 {
		t.Fatalf("admitted %d (spent %d, reserved %d) against a limit of %d, %d unjustified refusals; want exactly %d admitted and 0",
			settled, l.Spent, l.Reserved, limit, falseRefusals, fits)
	}
	rep, err := st.Audit().Verify(e.ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("audit after the run: %+v, %v", rep, err)
	}
}

func testSpendKilledProcess(t *testing.T, e *env) {
	const n, amount, ttl = 5, 100, 10 * time.Minute
	st, clock := e.st, e.clock
	req := baseRequest()
	req.TimeLimit = 100 * 365 * 24 * time.Hour
	req.SpendLimits = []store.SpendLimit{costLimit(n*amount, store.WindowLifetime)}
	s, err := st.Governance().Create(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	spawned := time.Now()
	cmd, stdout := e.spawn("spend-reserve-and-hang", s.ID, strconv.Itoa(n), strconv.Itoa(amount), strconv.FormatInt(ttl.Milliseconds(), 10))
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"reserved":5`) {
		t.Fatalf("helper did not report its reservations: %q %v", sc.Text(), sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	cmd.Wait()
	// The dead process's reservations hold until they lapse...
	if _, err := st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, Amount: usd(1), Currency: "USD"}); !errors.Is(err, store.ErrSpendLimitExceeded) {
		t.Fatalf("reserve while the dead process's reservations hold: %v", err)
	}
	// ... and are released once they have: the helper's clock started at
	// this one's and moved on with the wall clock until it was killed.
	clock.Advance(time.Since(spawned) + ttl + time.Second)
	stat, err := st.Spend().Status(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantCounters(t, limitIn(t, stat, store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 0)
	if _, err := st.Spend().Reserve(e.ctx, store.ReserveRequest{SessionID: s.ID, Amount: usd(n * amount), Currency: "USD"}); err != nil {
		t.Fatalf("reserve of the whole limit after the lapse: %v", err)
	}
	for i := range n {
		r, err := st.Spend().Reservation(e.ctx, s.ID, fmt.Sprint("hang-", i))
		if err != nil || r.Status != store.ReservationExpired {
			t.Fatalf("reservation of the killed process = %+v, %v", r, err)
		}
	}
	page, err := st.Audit().List(e.ctx, store.AuditFilter{AgentID: s.AgentID, Kind: store.AuditLapse})
	if err != nil || len(page.Items) != n {
		t.Fatalf("lapse events = %d, %v; want %d", len(page.Items), err, n)
	}
}

func testSpendExportRestore(t *testing.T, e *env) {
	a := e.spendSession(costLimit(1000, store.WindowLifetime), tokenLimit(store.MetricTotalTokens, 500, store.WindowHour))
	b := e.create(func() store.CreateRequest { r := baseRequest(); r.AgentID = a.AgentID; return r }())
	other := e.spendSession(costLimit(10, store.WindowDay))
	if err := e.st.Spend().SetAgentLimits(e.ctx, a.AgentID, []store.SpendLimit{costLimit(5000, store.WindowMonth)}); err != nil {
		t.Fatal(err)
	}
	e.mustReserve(a.ID, store.SpendAmount{InputTokens: 100, CostMicros: 300}, "settled")
	e.settle(a.ID, "settled", store.SpendAmount{InputTokens: 90, CostMicros: 250})
	e.mustReserve(a.ID, usd(100), "released")
	e.release(a.ID, "released")
	e.mustReserve(b.ID, usd(400), "held")
	_, err := e.reserve(a.ID, usd(900), "refused")
	wantSpendRefusal(t, err)
	e.mustReserve(other.ID, usd(5), "other")
	all, err := e.st.Spend().Export(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Limits) != 4 || len(all.Reservations) != 5 {
		t.Fatalf("export: %d limits, %d reservations", len(all.Limits), len(all.Reservations))
	}
	one, err := e.st.Spend().Export(e.ctx, []string{b.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Limits) != 1 || one.Limits[0].SessionID != "" || len(one.Reservations) != 1 || one.Reservations[0].ID != "held" {
		t.Fatalf("export of one session: %+v", one)
	}
	var sessions []store.Session
	for _, id := range []string{a.ID, b.ID, other.ID} {
		sessions = append(sessions, e.get(id))
	}
	fresh := newEnv(t, e.h)
	fresh.clock = e.clock
	fresh.reopen()
	if _, err := fresh.gov().Restore(fresh.ctx, store.RestoreRequest{Sessions: sessions}); err != nil {
		t.Fatal(err)
	}
	n, err := fresh.st.Spend().Restore(fresh.ctx, store.SpendRestoreRequest{Records: all})
	if err != nil || n != 9 {
		t.Fatalf("Restore = %d, %v; want 9", n, err)
	}
	again, err := fresh.st.Spend().Export(fresh.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again) != fmt.Sprint(all) {
		t.Fatalf("restored spend differs:\n%+v\n%+v", again, all)
	}
	for _, id := range []string{a.ID, b.ID, other.ID} {
		if got, want := fresh.spendStatus(id), e.spendStatus(id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("status of %s after restore:\n%+v\nwant\n%+v", id, got, want)
		}
	}
	// The restored reservations go on: held can be settled, a replay of the
	// refused one returns its refusal, the limits keep counting.
	fresh.settle(b.ID, "held", usd(400))
	_, err = fresh.reserve(a.ID, usd(900), "refused")
	wantSpendRefusal(t, err)
	_, err = fresh.st.Spend().Restore(fresh.ctx, store.SpendRestoreRequest{Records: all})
	wantErr(t, err, store.ErrConflict)
	if n, err := fresh.st.Spend().Restore(fresh.ctx, store.SpendRestoreRequest{Records: all, SkipExisting: true}); err != nil || n != 0 {
		t.Fatalf("Restore with SkipExisting = %d, %v", n, err)
	}
}

// testSpendExportEach: ExportEach hands over what Export returns, in its
// order, from one snapshot (a reservation made while it streams is not
// part of it), and a callback's error stops it.
func testSpendExportEach(t *testing.T, e *env) {
	a := e.spendSession(costLimit(1000, store.WindowLifetime))
	b := e.spendSession(costLimit(500, store.WindowDay), tokenLimit(store.MetricTotalTokens, 500, store.WindowHour))
	e.mustReserve(a.ID, store.SpendAmount{InputTokens: 100, OutputTokens: 7, CostMicros: 10}, "r1")
	e.mustReserve(b.ID, store.SpendAmount{InputTokens: 30, OutputTokens: 90, CostMicros: 20}, "r2")
	e.settle(b.ID, "r2", store.SpendAmount{InputTokens: 20, OutputTokens: 60, CostMicros: 15})
	e.mustReserve(b.ID, usd(30), "r3")
	for _, ids := range [][]string{nil, {b.ID, a.ID}, {b.ID}, {}} {
		want, err := e.st.Spend().Export(e.ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		got := store.SpendRecords{Limits: []store.SpendLimitRecord{}, Reservations: []store.ReservationRecord{}}
		during := 0
		err = e.st.Spend().ExportEach(e.ctx, ids,
			func(l store.SpendLimitRecord) error {
				if len(got.Reservations) > 0 {
					t.Fatalf("limit %s after a reservation", l.ID)
				}
				got.Limits = append(got.Limits, l)
				return nil
			},
			func(r store.ReservationRecord) error {
				if len(got.Reservations) == 0 { // a write while the export streams
					during++
					e.mustReserve(b.ID, usd(1), fmt.Sprint("during-", len(ids), "-", during))
				}
				// Each record as Reservation reads it, by another path
				// (Export itself is built on ExportEach).
				if live, err := e.st.Spend().Reservation(e.ctx, r.SessionID, r.ID); err != nil || fmt.Sprint(live) != fmt.Sprint(r.Reservation) {
					t.Fatalf("exported reservation %+v; Reservation reads %+v, %v", r.Reservation, live, err)
				}
				got.Reservations = append(got.Reservations, r)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if ids == nil && len(got.Reservations) != 3 { // the first round: r1, r2, r3
			t.Fatalf("ExportEach streamed %d reservations, want the 3 made before it", len(got.Reservations))
		}
		if ids == nil && !slices.IsSortedFunc(got.Reservations, func(x, y store.ReservationRecord) int {
			return cmp.Or(cmp.Compare(x.SessionID, y.SessionID), cmp.Compare(x.ID, y.ID))
		}) {
			t.Fatalf("reservations not in (session, request) order: %+v", got.Reservations)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("ExportEach(%v):\n%+v\nExport:\n%+v", ids, got, want)
		}
	}
	stop := errors.New("stop")
	calls := 0
	err := e.st.Spend().ExportEach(e.ctx, nil,
		func(store.SpendLimitRecord) error { calls++; return stop },
		func(store.ReservationRecord) error { calls++; return nil })
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("ExportEach with a failing callback = %v after %d calls; want the callback's error after 1", err, calls)
	}
	err = e.st.Spend().ExportEach(e.ctx, []string{""},
		func(store.SpendLimitRecord) error { return nil }, func(store.ReservationRecord) error { return nil })
	wantErr(t, err, store.ErrInvalidInput)
	wantErr(t, e.st.Spend().ExportEach(e.ctx, nil, nil, nil), store.ErrInvalidInput)
}

func testSpendRestoreInvalid(t *testing.T, e *env) {
	s := e.spendSession()
	at := e.clock.Now()
	good := store.SpendRecords{
		Limits: []store.SpendLimitRecord{{ID: "l1", AgentID: s.AgentID, SessionID: s.ID, SpendLimit: costLimit(10, store.WindowLifetime), WindowStart: time.Unix(0, 0)}},
		Reservations: []store.ReservationRecord{{Reservation: store.Reservation{SessionID: s.ID, ID: "r", AgentID: s.AgentID,
			Status: store.ReservationReserved, Amount: usd(5), Currency: "USD", CreatedAt: at, ExpiresAt: at.Add(time.Minute)},
			Holds: []store.SpendHold{{LimitID: "l1", WindowStart: time.Unix(0, 0)}}}},
	}
	for _, edit := range []func(r *store.SpendRecords){
		func(r *store.SpendRecords) { r.Limits[0].Metric = "calls" },
		func(r *store.SpendRecords) { r.Limits[0].Spent = -1 },
		func(r *store.SpendRecords) { r.Limits[0].Currency = "" },
		func(r *store.SpendRecords) { r.Limits = append(r.Limits, r.Limits[0]) },
		func(r *store.SpendRecords) { r.Reservations[0].Status = "pending" },
		func(r *store.SpendRecords) { r.Reservations[0].Amount.CostMicros = -5 },
		func(r *store.SpendRecords) { r.Reservations[0].Refusal = json.RawMessage(`{}`) },
		func(r *store.SpendRecords) { r.Reservations[0].CreatedAt = at.Add(time.Microsecond) },
	} {
		bad := store.SpendRecords{Limits: slicesClone(good.Limits), Reservations: slicesClone(good.Reservations)}
		edit(&bad)
		if _, err := e.st.Spend().Restore(e.ctx, store.SpendRestoreRequest{Records: bad}); !errors.Is(err, store.ErrInvalidInput) {
			t.Fatalf("Restore of %+v: %v", bad, err)
		}
	}
	missing := store.SpendRecords{Limits: slicesClone(good.Limits), Reservations: slicesClone(good.Reservations)}
	missing.Reservations[0].SessionID = "no-such-session"
	if _, err := e.st.Spend().Restore(e.ctx, store.SpendRestoreRequest{Records: missing}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Restore for a missing session: %v", err)
	}
	if got, _ := e.st.Spend().Export(e.ctx, nil); len(got.Limits)+len(got.Reservations) != 0 {
		t.Fatalf("refused restores wrote %+v", got)
	}
	if n, err := e.st.Spend().Restore(e.ctx, store.SpendRestoreRequest{Records: good}); err != nil || n != 2 {
		t.Fatalf("Restore = %d, %v", n, err)
	}
	wantCounters(t, limitIn(t, e.spendStatus(s.ID), store.ScopeSession, store.MetricCost, store.WindowLifetime), 0, 0)
}

func slicesClone[T any](s []T) []T { return append([]T(nil), s...) }
