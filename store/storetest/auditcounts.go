package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunAuditCounts checks store.AuditCounter where the backend's Audit facet
// implements it: every decision, allowed or refused, of every agent is
// counted once, on its UTC day (an event at the last millisecond of a day
// and one at the first of the next fall on two days), by kind and outcome;
// since bounds the count inclusively; and the counts agree with the
// events List returns.
func RunAuditCounts(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ac, ok := e.st.Audit().(store.AuditCounter)
	if !ok {
		t.Skip("the backend's Audit facet does not implement store.AuditCounter")
	}
	empty, err := ac.DecisionCounts(e.ctx, time.Time{})
	if err != nil || len(empty) != 0 {
		t.Fatalf("counts of an empty trail: %+v, %v; want none", empty, err)
	}

	// Day 0 (2026-01-02): a create, a use, a refused tool, and a use at
	// the day's last millisecond.
	day0 := e.clock.Now().UTC().Truncate(24 * time.Hour)
	req := baseRequest()
	req.CallBudget = 2
	req.TimeLimit = 48 * time.Hour
	s := e.create(req)
	if _, err := e.use(s.ID, "read_file"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.use(s.ID, "rm_rf"); !errors.Is(err, store.ErrToolNotAuthorized) {
		t.Fatalf("use of an unauthorized tool: %v", err)
	}
	e.clock.Advance(day0.Add(24*time.Hour - time.Millisecond).Sub(e.clock.Now()))
	if _, err := e.use(s.ID, "read_file"); err != nil {
		t.Fatal(err)
	}
	// Day 1, at its first millisecond: the budget is spent; another
	// agent creates a session.
	e.clock.Advance(time.Millisecond)
	day1 := day0.Add(24 * time.Hour)
	if !e.clock.Now().Equal(day1) {
		t.Fatalf("clock at %v, want %v", e.clock.Now(), day1)
	}
	if _, err := e.use(s.ID, "read_file"); !errors.Is(err, store.ErrBudgetExceeded) {
		t.Fatalf("use past the budget: %v", err)
	}
	e.create(baseRequest())

	all, err := ac.DecisionCounts(e.ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.AuditDayCount{
		{Day: day0, Kind: store.AuditCreate, Outcome: store.OutcomeAllowed, Count: 1},
		{Day: day0, Kind: store.AuditUse, Outcome: store.OutcomeAllowed, Count: 2},
		{Day: day0, Kind: store.AuditUse, Outcome: store.OutcomeToolDenied, Count: 1},
		{Day: day1, Kind: store.AuditCreate, Outcome: store.OutcomeAllowed, Count: 1},
		{Day: day1, Kind: store.AuditUse, Outcome: store.OutcomeBudgetExceeded, Count: 1},
	}
	checkAuditCounts(t, "all", all, want)
	since, err := ac.DecisionCounts(e.ctx, day1)
	if err != nil {
		t.Fatal(err)
	}
	checkAuditCounts(t, "since day 1", since, want[3:])
	// A since in another time zone names the same instant.
	east := day1.In(time.FixedZone("UTC+5", 5*3600))
	if again, err := ac.DecisionCounts(e.ctx, east); err != nil {
		t.Fatal(err)
	} else {
		checkAuditCounts(t, "since day 1 (UTC+5)", again, want[3:])
	}

	// The counts agree with the events themselves.
	tally := map[store.AuditDayCount]int64{}
	for _, ev := range e.auditAll("") {
		tally[store.AuditDayCount{Day: ev.At.UTC().Truncate(24 * time.Hour), Kind: ev.Kind, Outcome: ev.Outcome}]++
	}
	var sum int64
	for _, c := range all {
		key := c
		key.Count = 0
		key.Day = key.Day.UTC()
		if tally[key] != c.Count {
			t.Errorf("%+v: the events listed count %d", c, tally[key])
		}
		sum += c.Count
	}
	if sum != int64(len(e.auditAll(""))) {
		t.Errorf("the counts sum to %d, the trail holds %d events", sum, len(e.auditAll("")))
	}
}

func checkAuditCounts(t *testing.T, what string, got, want []store.AuditDayCount) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: counts %+v, want %+v", what, got, want)
	}
	for i := range want {
		g := got[i]
		if !g.Day.Equal(want[i].Day) || g.Day.Location() != time.UTC || g.Kind != want[i].Kind || g.Outcome != want[i].Outcome || g.Count != want[i].Count {
			t.Errorf("%s: count %d is %+v, want %+v", what, i, g, want[i])
		}
	}
}
