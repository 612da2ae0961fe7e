package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunTotals checks store.Totaler where the backend's Store implements it:
// the aggregates equal what listing every governed session and
// conversation and counting them in Go gives, effective statuses at the
// store's clock included.
func RunTotals(t *testing.T, h Harness) {
	e := newEnv(t, h)
	tot, ok := e.st.(store.Totaler)
	if !ok {
		t.Skip("the backend's Store does not implement store.Totaler")
	}
	// Governed sessions of three agents: used, closed, one to expire.
	agents := []string{"agent-b", "agent-a", "agent-c"}
	var expiring string
	for i, agent := range agents {
		for j := range 3 {
			req := baseRequest()
			req.AgentID = agent
			req.CallBudget = 10
			if i == 2 && j == 0 {
				req.TimeLimit = time.Minute
			}
			s := e.create(req)
			if i == 2 && j == 0 {
				expiring = s.ID
			}
			for range (i + 1) * j { // agent-b 0+1+2, agent-a 0+2+4, agent-c 0+3+6
				if _, err := e.use(s.ID, "read_file"); err != nil {
					t.Fatal(err)
				}
			}
			if j == 2 {
				if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Conversations in three states over three days.
	for i := range 7 {
		c := store.NewConversation(fmt.Sprintf("conv-%d", i))
		c.State = []store.ConversationState{store.StateActive, store.StateCompleted, store.StateError}[i%3]
		c.TotalUsage = store.TokenUsage{PromptTokens: int64(100 * i), CompletionTokens: int64(10 * i), TotalTokens: int64(110 * i)}
		c.TotalCost = float64(i%4) * 0.25
		c.Messages = []store.Message{store.UserMessage(strings.Repeat("x", i))}
		if _, err := e.st.Conversations().Save(e.ctx, c); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			e.clock.Advance(24 * time.Hour)
		}
	}
	e.clock.Advance(2 * time.Minute) // past the expiring session's limit
	since := e.clock.Now().Add(-36 * time.Hour)

	got, err := tot.Totals(e.ctx, store.TotalsRequest{Since: since, Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := e.totalsByListing(since, 2)
	if s, ok := got.Governed.ByStatus[store.StatusExpired]; !ok || s < 1 {
		t.Errorf("the session past its limit (%s) is not counted as expired: %v", expiring, got.Governed.ByStatus)
	}
	gj, wj := dumpJSON(t, got), dumpJSON(t, want)
	if gj != wj {
		t.Fatalf("Totals:\n%s\nwant (by listing):\n%s", gj, wj)
	}
	if len(got.Governed.TopAgents) != 2 || got.Governed.TopAgents[0].AgentID != "agent-c" {
		t.Errorf("top agents %+v, want agent-c first and two of them", got.Governed.TopAgents)
	}
	if len(got.Conversations.Days) < 2 {
		t.Errorf("days %+v: want the two days since %v", got.Conversations.Days, since)
	}

	for _, bad := range []store.TotalsRequest{{Top: -1}, {Top: 101}} {
		if _, err := tot.Totals(e.ctx, bad); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("Totals(%+v) = %v, want ErrInvalidInput", bad, err)
		}
	}
	// An empty store has zero totals with every status present.
	empty := newEnv(t, h)
	z, err := empty.st.(store.Totaler).Totals(empty.ctx, store.TotalsRequest{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if z.Governed.Total != 0 || len(z.Governed.ByStatus) != 3 || z.Conversations.Total != 0 ||
		len(z.Conversations.Days) != 0 || len(z.Conversations.TopByCost) != 0 || z.Governed.TopAgents == nil {
		t.Errorf("totals of an empty store: %+v", z)
	}
	if err := empty.st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := empty.st.(store.Totaler).Totals(empty.ctx, store.TotalsRequest{}); !errors.Is(err, store.ErrStoreClosed) {
		t.Errorf("Totals after Close: %v, want ErrStoreClosed", err)
	}
}

// dumpJSON is v as indented JSON, for comparisons that show the
// difference.
func dumpJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// totalsByListing computes store.Totals the slow way, from the listings.
func (e *env) totalsByListing(since time.Time, top int) store.Totals {
	e.t.Helper()
	now := e.clock.Now()
	var t store.Totals
	g := &t.Governed
	g.ByStatus = map[store.Status]int64{store.StatusActive: 0, store.StatusClosed: 0, store.StatusExpired: 0}
	calls := map[string]int64{}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := e.gov().List(e.ctx, f)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, s := range page.Items {
			g.Total++
			g.ByStatus[s.EffectiveStatus(now)]++
			g.CallsMade += s.CallsMade
			g.CallBudget += s.CallBudget
			if s.CallsMade > 0 {
				calls[s.AgentID] += s.CallsMade
			}
		}
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	g.TopAgents = []store.AgentCalls{}
	for _, a := range slices.Sorted(maps.Keys(calls)) {
		g.TopAgents = append(g.TopAgents, store.AgentCalls{AgentID: a, CallsMade: calls[a]})
	}
	slices.SortStableFunc(g.TopAgents, func(a, b store.AgentCalls) int { return int(b.CallsMade - a.CallsMade) })
	g.TopAgents = g.TopAgents[:min(top, len(g.TopAgents))]

	c := &t.Conversations
	c.ByState = map[store.ConversationState]int64{}
	days := map[time.Time]*store.DayTotals{}
	var all []store.ConversationSummary
	cf := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := e.st.Conversations().List(e.ctx, cf)
		if err != nil {
			e.t.Fatal(err)
		}
		all = append(all, page.Items...)
		if page.Next == "" {
			break
		}
		cf.After = page.Next
	}
	for _, cv := range all {
		c.Total++
		c.ByState[cv.State]++
		c.Messages += cv.MessageCount
		c.TotalTokens += cv.TotalUsage.TotalTokens
		c.TotalCost += cv.TotalCost
		if !cv.UpdatedAt.Before(since) {
			day := cv.UpdatedAt.UTC().Truncate(24 * time.Hour)
			d := days[day]
			if d == nil {
				d = &store.DayTotals{Day: day}
				days[day] = d
			}
			d.Conversations++
			d.TotalTokens += cv.TotalUsage.TotalTokens
			d.TotalCost += cv.TotalCost
		}
	}
	c.Days = []store.DayTotals{}
	for _, day := range slices.SortedFunc(maps.Keys(days), func(a, b time.Time) int { return a.Compare(b) }) {
		c.Days = append(c.Days, *days[day])
	}
	byCost := slices.Clone(all)
	slices.SortStableFunc(byCost, func(a, b store.ConversationSummary) int { // all is in id order
		switch {
		case a.TotalCost > b.TotalCost:
			return -1
		case a.TotalCost < b.TotalCost:
			return 1
		}
		return 0
	})
	c.TopByCost = byCost[:min(top, len(byCost))]
	recent := slices.Clone(all)
	slices.SortFunc(recent, func(a, b store.ConversationSummary) int {
		if n := b.UpdatedAt.Compare(a.UpdatedAt); n != 0 {
			return n
		}
		return strings.Compare(b.ID, a.ID)
	})
	c.Recent = recent[:min(top, len(recent))]
	return t
}
