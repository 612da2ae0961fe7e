package console

import (
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestPageHeads(t *testing.T) {
	heads := []store.AuditHead{{AgentID: "a"}, {AgentID: "a", Chain: "s1"}, {AgentID: "a", Chain: "s2"}, {AgentID: "b"},
		{AgentID: "c", Chain: "s3"}, {AgentID: "d"}, {AgentID: "e"}}
	var got []string
	agent, chain := "", ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		page, next := pageHeads(heads, agent, chain, 2)
		for _, h := range page {
			got = append(got, h.AgentID+"/"+h.Chain)
		}
		if next == nil {
			break
		}
		agent, chain = next.AgentID, next.Chain
	}
	if strings.Join(got, " ") != "a/ a/s1 a/s2 b/ c/s3 d/ e/" {
		t.Errorf("paged heads %v, want every chain once, in order", got)
	}
	if page, next := pageHeads(heads, "bb", "", 10); len(page) != 3 || page[0].Chain != "s3" || next != nil {
		t.Errorf("after an agent without a chain: %+v %v", page, next)
	}
	if page, next := pageHeads(heads, "a", "s15", 10); len(page) != 5 || page[0].Chain != "s2" || next != nil {
		t.Errorf("after a session chain that is gone: %+v %v", page, next)
	}
	if page, next := pageHeads(nil, "", "", 10); len(page) != 0 || next != nil {
		t.Errorf("no heads: %+v %v", page, next)
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
