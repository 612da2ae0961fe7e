package console

import (
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestPageHeads(t *testing.T) {
	heads := []store.AuditHead{{AgentID: "a"}, {AgentID: "b"}, {AgentID: "c"}, {AgentID: "d"}, {AgentID: "e"}}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, next := pageHeads(heads, after, 2)
		for _, h := range page {
			got = append(got, h.AgentID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if strings.Join(got, "") != "abcde" {
		t.Errorf("paged heads %v, want a to e once each", got)
	}
	if page, next := pageHeads(heads, "bb", 10); len(page) != 3 || page[0].AgentID != "c" || next != "" {
		t.Errorf("after an agent without a chain: %+v %q", page, next)
	}
	if page, next := pageHeads(nil, "", 10); len(page) != 0 || next != "" {
		t.Errorf("no heads: %+v %q", page, next)
	}
}

func TestDecisionChart(t *testing.T) {
	today := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	day := today.AddDate(0, 0, -1)
	counts := []store.AuditDayCount{
		{Day: day, Kind: store.AuditCreate, Outcome: store.OutcomeAllowed, Count: 2},
		{Day: day, Kind: store.AuditUse, Outcome: store.OutcomeAllowed, Count: 3},
		{Day: day, Kind: store.AuditUse, Outcome: store.OutcomeBudgetExceeded, Count: 1},
		{Day: day, Kind: store.AuditReserve, Outcome: store.OutcomeBudgetExceeded, Count: 1},
		{Day: today, Kind: store.AuditReserve, Outcome: store.OutcomeSpendExceeded, Count: 4},
		{Day: today, Kind: store.AuditCheckpoint, Outcome: store.OutcomeAllowed, Count: 9},
		{Day: today.AddDate(0, 0, -overviewDays), Kind: store.AuditUse, Outcome: store.OutcomeAllowed, Count: 7},
	}
	out := string(decisionChart(today, counts))
	for _, want := range []string{
		"2026-01-02: 2 create, 3 use, 2 budget_exceeded",
		"2026-01-03: 4 spend_limit_exceeded; no other day",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("decision chart lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "checkpoint") || strings.Contains(out, " 7 ") {
		t.Errorf("the chart counts a checkpoint or a day before its period:\n%s", out)
	}
	// Only the series with decisions have a legend entry.
	if strings.Contains(out, ">settle<") || !strings.Contains(out, ">create<") {
		t.Errorf("legend entries:\n%s", out)
	}
}
