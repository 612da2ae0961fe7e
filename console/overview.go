package console

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"time"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// scanLimit bounds how many governed sessions and conversations one
// overview (or metrics scrape) reads: the counts of a larger store are
// those of its first scanLimit items in id order, and say so (Truncated).
const scanLimit = 100_000

// stats are the store-wide counts of the overview and of /metrics.
type stats struct {
	Governed struct {
		Total     int64            `json:"total"`
		ByStatus  map[string]int64 `json:"by_status"`
		Calls     int64            `json:"calls_made"`
		Budget    int64            `json:"call_budget"`
		Truncated bool             `json:"truncated"`
		byAgent   map[string]int64
	} `json:"governed"`
	Conversations struct {
		Total       int64            `json:"total"`
		ByState     map[string]int64 `json:"by_state"`
		Messages    int64            `json:"messages"`
		TotalTokens int64            `json:"total_tokens"`
		// TotalCost is the summed cost in US dollars, exact to the
		// micro-unit ("0.0864 USD"); TotalCostMicros the same in
		// micro-units. The store keeps a conversation's cost as a float:
		// the sum is rounded to micro-units once (humanize.MicrosOf).
		TotalCost       string `json:"total_cost"`
		TotalCostMicros int64  `json:"total_cost_micros"`
		Truncated       bool   `json:"truncated"`
		top             []store.ConversationSummary
		recent          []store.ConversationSummary
		days            map[string]*dayTotals
	} `json:"conversations"`
	Runtime struct {
		Total   int64            `json:"total"`
		ByAgent map[string]int64 `json:"by_agent"`
	} `json:"runtime"`
	Elapsed time.Duration `json:"-"`
}

type dayTotals struct {
	CostMicros int64
	Tokens     int64
}

// collect counts the store: by the database's own aggregates when the
// store is a store.Totaler (both backends are), else by reading the
// listings (bounded by scanLimit).
func (c *console) collect(ctx context.Context) (*stats, error) {
	if t, ok := c.st.(store.Totaler); ok {
		return c.collectTotals(ctx, t)
	}
	start := time.Now()
	s := &stats{}
	now := c.now()
	s.Governed.ByStatus = map[string]int64{string(store.StatusActive): 0, string(store.StatusClosed): 0, string(store.StatusExpired): 0}
	s.Governed.byAgent = map[string]int64{}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := c.st.Governance().List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, g := range page.Items {
			s.Governed.Total++
			s.Governed.ByStatus[string(g.EffectiveStatus(now))]++
			s.Governed.Calls += g.CallsMade
			s.Governed.Budget += g.CallBudget
			s.Governed.byAgent[g.AgentID] += g.CallsMade
		}
		if page.Next == "" {
			break
		}
		if s.Governed.Total >= scanLimit {
			s.Governed.Truncated = true
			break
		}
		f.After = page.Next
	}
	cs := &s.Conversations
	cs.ByState = map[string]int64{}
	cs.days = map[string]*dayTotals{}
	cf := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := c.st.Conversations().List(ctx, cf)
		if err != nil {
			return nil, err
		}
		for _, cv := range page.Items {
			cs.Total++
			cs.ByState[string(cv.State)]++
			cs.Messages += cv.MessageCount
			cs.TotalTokens += cv.TotalUsage.TotalTokens
			cs.TotalCostMicros += humanize.MicrosOf(cv.TotalCost)
			day := cv.UpdatedAt.UTC().Format("2006-01-02")
			d := cs.days[day]
			if d == nil {
				d = &dayTotals{}
				cs.days[day] = d
			}
			d.CostMicros += humanize.MicrosOf(cv.TotalCost)
			d.Tokens += cv.TotalUsage.TotalTokens
			cs.top = topN(cs.top, cv, 10, func(a, b store.ConversationSummary) bool { return a.TotalCost > b.TotalCost })
			cs.recent = topN(cs.recent, cv, 10, func(a, b store.ConversationSummary) bool { return a.UpdatedAt.After(b.UpdatedAt) })
		}
		if page.Next == "" {
			break
		}
		if cs.Total >= scanLimit {
			cs.Truncated = true
			break
		}
		cf.After = page.Next
	}
	cs.TotalCost = humanize.Money(cs.TotalCostMicros, "USD")
	var err error
	if s.Runtime.Total, err = c.st.Runtime().Count(ctx); err != nil {
		return nil, err
	}
	if s.Runtime.ByAgent, err = c.st.Runtime().CountByAgent(ctx); err != nil {
		return nil, err
	}
	s.Elapsed = time.Since(start)
	return s, nil
}

// collectTotals fills the stats from store.Totaler: grouped queries, no
// listing read whole, so the overview and /metrics cost the same at any
// store size (never truncated).
func (c *console) collectTotals(ctx context.Context, t store.Totaler) (*stats, error) {
	start := time.Now()
	today := c.now().UTC().Truncate(24 * time.Hour)
	// The operator's console counts the default tenant's rows, the
	// rows its lists show (a tenant's console: the tenant's, whatever
	// the flag says).
	tot, err := t.Totals(ctx, store.TotalsRequest{Since: today.AddDate(0, 0, -(overviewDays - 1)), Top: 10, DefaultTenantOnly: true})
	if err != nil {
		return nil, err
	}
	s := &stats{}
	g := &s.Governed
	g.Total, g.Calls, g.Budget = tot.Governed.Total, tot.Governed.CallsMade, tot.Governed.CallBudget
	g.ByStatus = map[string]int64{}
	for st, n := range tot.Governed.ByStatus {
		g.ByStatus[string(st)] = n
	}
	g.byAgent = map[string]int64{}
	for _, a := range tot.Governed.TopAgents {
		g.byAgent[a.AgentID] = a.CallsMade
	}
	cs := &s.Conversations
	ct := tot.Conversations
	cs.Total, cs.Messages, cs.TotalTokens, cs.TotalCostMicros = ct.Total, ct.Messages, ct.TotalTokens, humanize.MicrosOf(ct.TotalCost)
	cs.TotalCost = humanize.Money(cs.TotalCostMicros, "USD")
	cs.ByState = map[string]int64{}
	for st, n := range ct.ByState {
		cs.ByState[string(st)] = n
	}
	cs.days = map[string]*dayTotals{}
	for _, d := range ct.Days {
		cs.days[d.Day.UTC().Format("2006-01-02")] = &dayTotals{CostMicros: humanize.MicrosOf(d.TotalCost), Tokens: d.TotalTokens}
	}
	cs.top, cs.recent = ct.TopByCost, ct.Recent
	if s.Runtime.Total, err = c.st.Runtime().Count(ctx); err != nil {
		return nil, err
	}
	if s.Runtime.ByAgent, err = c.st.Runtime().CountByAgent(ctx); err != nil {
		return nil, err
	}
	s.Elapsed = time.Since(start)
	return s, nil
}

// topN keeps the n greatest items by less-is-greater order.
func topN[T any](list []T, v T, n int, greater func(a, b T) bool) []T {
	i, _ := slices.BinarySearchFunc(list, v, func(a, b T) int {
		if greater(a, b) {
			return -1
		}
		return 1
	})
	if i >= n {
		return list
	}
	list = slices.Insert(list, i, v)
	if len(list) > n {
		list = list[:n]
	}
	return list
}

type overviewPage struct {
	// Tenant is Options.Tenant: every figure is of its rows.
	Tenant string `json:"tenant,omitempty"`
	// OtherTenants, on the operator's console, are the tenants that own
	// rows besides the default tenant: none of the figures counts them
	// (see the package documentation).
	OtherTenants []string `json:"other_tenants,omitempty"`
	// UnknownTenant is true when no row of the store belongs to Tenant:
	// a mistyped name, or a tenant that has written nothing yet.
	UnknownTenant bool          `json:"unknown_tenant,omitempty"`
	Stats         *stats        `json:"stats"`
	TopByCost     convList      `json:"top_conversations_by_cost"`
	RecentlyMoved convList      `json:"recent_conversations"`
	SpendByDay    []daySpend    `json:"spend_by_day"`
	StatusChart   template.HTML `json:"-"`
	AgentChart    template.HTML `json:"-"`
	// RecentRefusals and UsesByDay come from the use records (uses with a
	// request id) when the store keeps them (store.UseRecorder); their
	// outcomes are named as the audit trail names them.
	RecentRefusals []store.UseRecord       `json:"recent_refusals"`
	UsesByDay      []store.UseOutcomeCount `json:"uses_by_day"`
	// DecisionsByDay counts every decision of the audit trail, allowed or
	// refused, by UTC day, kind and outcome, over the chart's days.
	DecisionsByDay     []store.AuditDayCount `json:"decisions_by_day"`
	DecisionsTruncated bool                  `json:"decisions_truncated,omitempty"`
	DecisionChart      template.HTML         `json:"-"`
	SpendChart         template.HTML         `json:"-"`
	TokenChart         template.HTML         `json:"-"`
}

// daySpend is one day of the spend charts: its cost exact to the
// micro-unit with its currency ("0.0864 USD") and in micro-units.
type daySpend struct {
	Day        string `json:"day"`
	Cost       string `json:"cost"`
	CostMicros int64  `json:"cost_micros"`
	Tokens     int64  `json:"tokens"`
}

func (p *overviewPage) live() bool { return true }

// overviewDays is how many days the spend charts cover.
const overviewDays = 14

func (c *console) overview(w http.ResponseWriter, r *http.Request) error {
	s, err := c.collect(r.Context())
	if err != nil {
		return err
	}
	show := c.showContent(r)
	p := &overviewPage{Tenant: c.opt.Tenant, Stats: s, TopByCost: s.Conversations.top, RecentlyMoved: s.Conversations.recent}
	if tr, ok := c.st.(store.Tenanter); ok && !c.tenant {
		if p.OtherTenants, err = tr.Tenants(r.Context()); err != nil {
			return err
		}
	}
	if v, ok := c.st.(store.TenantView); ok && c.tenant {
		if tr, ok := v.Store.(store.Tenanter); ok {
			names, err := tr.Tenants(r.Context())
			if err != nil {
				return err
			}
			p.UnknownTenant = !slices.Contains(names, c.opt.Tenant)
		}
	}
	for _, l := range [][]store.ConversationSummary{p.TopByCost, p.RecentlyMoved} {
		for i := range l {
			l[i].Name = c.cleanText("conversation.name", l[i].Name, show)
		}
	}
	if p.TopByCost == nil {
		p.TopByCost = []store.ConversationSummary{}
	}
	if p.RecentlyMoved == nil {
		p.RecentlyMoved = []store.ConversationSummary{}
	}
	g := s.Governed.ByStatus
	p.StatusChart = barChart("status", "Governed sessions by status", "sessions", []bar{
		{"active", float64(g["active"])}, {"closed", float64(g["closed"])}, {"expired", float64(g["expired"])}})
	type agentCalls struct {
		agent string
		calls int64
	}
	var ac []agentCalls
	for a, n := range s.Governed.byAgent {
		ac = append(ac, agentCalls{a, n})
	}
	slices.SortFunc(ac, func(a, b agentCalls) int {
		if a.calls != b.calls {
			return int(b.calls - a.calls)
		}
		if a.agent < b.agent {
			return -1
		}
		return 1
	})
	var bars []bar
	for _, a := range ac[:min(len(ac), 10)] {
		bars = append(bars, bar{a.agent, float64(a.calls)})
	}
	p.AgentChart = barChart("agents", "Tool calls made by agent (top 10)", "calls", bars)
	today := c.now().UTC().Truncate(24 * time.Hour)
	var cost, tokens []point
	for i := overviewDays - 1; i >= 0; i-- {
		day := today.AddDate(0, 0, -i)
		key := day.Format("2006-01-02")
		d := s.Conversations.days[key]
		if d == nil {
			d = &dayTotals{}
		}
		p.SpendByDay = append(p.SpendByDay, daySpend{key, humanize.Money(d.CostMicros, "USD"), d.CostMicros, d.Tokens})
		cost = append(cost, point{day, float64(d.CostMicros) / 1e6})
		tokens = append(tokens, point{day, float64(d.Tokens)})
	}
	since := today.AddDate(0, 0, -(overviewDays - 1))
	p.RecentRefusals, p.UsesByDay = []store.UseRecord{}, []store.UseOutcomeCount{}
	if ur, ok := c.st.Governance().(store.UseRecorder); ok {
		if p.RecentRefusals, err = ur.RecentRefusals(r.Context(), 20); err != nil {
			return err
		}
		p.RecentRefusals = auditNamed(p.RecentRefusals)
		if p.UsesByDay, err = ur.UseOutcomes(r.Context(), since); err != nil {
			return err
		}
		for i := range p.UsesByDay {
			p.UsesByDay[i].Outcome = auditOutcome(p.UsesByDay[i].Outcome)
		}
	}
	if p.DecisionsByDay, p.DecisionsTruncated, err = c.decisionCounts(r.Context(), since); err != nil {
		return err
	}
	p.DecisionChart = decisionChart(today, p.DecisionsByDay)
	p.SpendChart = lineChart("spend", "Cost by day of last update", "US dollars", cost, 0, false, daysDesc("Cost (USD) of the conversations last updated on each day", p.SpendByDay, true))
	p.TokenChart = lineChart("tokens", "Tokens by day of last update", "tokens", tokens, 0, false, daysDesc("Tokens of the conversations last updated on each day", p.SpendByDay, false))
	c.render(w, r, http.StatusOK, "overview", "Overview", "overview", p)
	return nil
}

func daysDesc(title string, days []daySpend, cost bool) string {
	out := title + ": "
	for i, d := range days {
		if i > 0 {
			out += ", "
		}
		if cost {
			out += d.Day + " " + d.Cost
		} else {
			out += d.Day + " " + fmtNum(d.Tokens)
		}
	}
	return out + "."
}
