package console

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// ---- the audit page -------------------------------------------------------

// auditPage is /audit: the report of Verify (the digest over every chain
// head and the problems found), the chains with their heads (paged), and
// the events of one chain or session when asked (?agent=, ?session=).
type auditPage struct {
	Report store.AuditReport `json:"report"`
	// Heads is one page of the heads of every chain Verify checks (the
	// agents' own chains and the governed sessions' chains, removed
	// sessions' final heads included), in (agent, chain) order; the
	// report's digest is over all of them.
	Heads []store.AuditHead `json:"heads"`
	// NextHead and NextHeadChain resume the heads after this page (the
	// heads_after and heads_after_chain parameters).
	NextHead      string `json:"next_head,omitempty"`
	NextHeadChain string `json:"next_head_chain,omitempty"`
	Filter        struct {
		Agent   string `json:"agent,omitempty"`
		Session string `json:"session,omitempty"`
		Kind    string `json:"kind,omitempty"`
		Outcome string `json:"outcome,omitempty"`
	} `json:"filter"`
	// Events are the events the filter selects (none without an agent
	// or a session), one page.
	Events      []auditEvent      `json:"events"`
	Next        string            `json:"next,omitempty"`
	NextHeadURL string            `json:"-"`
	NextURL     string            `json:"-"`
	Kinds       []store.AuditKind `json:"-"`
	Outcomes    []string          `json:"-"`
}

// auditKinds are the kinds of audit events, for the filter.
var auditKinds = []store.AuditKind{store.AuditCreate, store.AuditUse, store.AuditReserve, store.AuditSettle, store.AuditRelease,
	store.AuditClose, store.AuditExpire, store.AuditLapse, store.AuditCleanup, store.AuditLimits, store.AuditCheckpoint}

func (c *console) auditPage(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	limit, err := pageLimit(r, 50, store.MaxPageSize)
	if err != nil {
		return err
	}
	p := &auditPage{Kinds: auditKinds, Outcomes: append([]string{store.OutcomeAllowed}, refusalOrder...), Events: []auditEvent{}}
	p.Filter.Agent, p.Filter.Session, p.Filter.Kind, p.Filter.Outcome = q.Get("agent"), q.Get("session"), q.Get("kind"), q.Get("outcome")
	f, err := store.AuditFilter{AgentID: p.Filter.Agent, SessionID: p.Filter.Session, Kind: store.AuditKind(p.Filter.Kind),
		Outcome: p.Filter.Outcome, After: q.Get("after"), Limit: limit}.Normalize()
	if err != nil {
		return err
	}
	audit := c.st.Audit()
	if p.Report, err = audit.Verify(ctx); err != nil {
		return err
	}
	if p.Report.Problems == nil {
		p.Report.Problems = []store.AuditProblem{}
	}
	heads, err := audit.Heads(ctx)
	if err != nil {
		return err
	}
	// Every chain, paged: the agents' own and one per governed session.
	var next *store.AuditHead
	p.Heads, next = pageHeads(heads, q.Get("heads_after"), q.Get("heads_after_chain"), limit)
	if next != nil {
		p.NextHead, p.NextHeadChain = next.AgentID, next.Chain
		p.NextHeadURL = withQuery(c.link("audit"), "heads_after", p.NextHead, "heads_after_chain", p.NextHeadChain,
			"agent", p.Filter.Agent, "session", p.Filter.Session, "kind", p.Filter.Kind, "outcome", p.Filter.Outcome, "limit", q.Get("limit"))
	}
	if f.AgentID != "" || f.SessionID != "" {
		page, err := audit.List(ctx, f)
		if err != nil {
			return err
		}
		p.Events, p.Next = auditEvents(page.Items), page.Next
		if p.Next != "" {
			p.NextURL = withQuery(c.link("audit"), "agent", p.Filter.Agent, "session", p.Filter.Session, "kind", p.Filter.Kind,
				"outcome", p.Filter.Outcome, "after", p.Next, "limit", q.Get("limit"), "heads_after", q.Get("heads_after"))
		}
	}
	c.render(w, r, http.StatusOK, "audit", "Audit trail", "audit", p)
	return nil
}

// pageHeads returns the heads after the chain (agent, chain) — every
// head when agent is empty — at most limit, and the last head returned
// when more follow (the page after resumes there). The store returns
// every head at once, in (agent, chain) byte order (store.Audit.Heads);
// the console pages them.
func pageHeads(heads []store.AuditHead, agent, chain string, limit int) ([]store.AuditHead, *store.AuditHead) {
	i := 0
	if agent != "" || chain != "" {
		i, _ = slices.BinarySearchFunc(heads, [2]string{agent, chain}, func(h store.AuditHead, k [2]string) int {
			if c := strings.Compare(h.AgentID, k[0]); c != 0 {
				return c
			}
			return strings.Compare(h.Chain, k[1])
		})
		if i < len(heads) && heads[i].AgentID == agent && heads[i].Chain == chain {
			i++
		}
	}
	rest := heads[i:]
	if len(rest) <= limit {
		return rest, nil
	}
	return rest[:limit], &rest[limit-1]
}

// ---- decisions per day ----------------------------------------------------

// decisionCounts counts the audit trail's events made at or after since,
// by UTC day, kind and outcome: by the database when the Audit facet is a
// store.AuditCounter (both backends' are), else by listing the events
// (bounded by scanLimit; truncated says so).
func (c *console) decisionCounts(ctx context.Context, since time.Time) (counts []store.AuditDayCount, truncated bool, err error) {
	audit := c.st.Audit()
	if ac, ok := audit.(store.AuditCounter); ok {
		counts, err = ac.DecisionCounts(ctx, since)
		return counts, false, err
	}
	tally := map[store.AuditDayCount]int64{}
	f := store.AuditFilter{Since: since, Limit: store.MaxPageSize}
	n := 0
	for {
		page, err := audit.List(ctx, f)
		if err != nil {
			return nil, false, err
		}
		for _, e := range page.Items {
			tally[store.AuditDayCount{Day: e.At.UTC().Truncate(24 * time.Hour), Kind: e.Kind, Outcome: e.Outcome}]++
		}
		n += len(page.Items)
		if page.Next == "" {
			break
		}
		if n >= scanLimit {
			truncated = true
			break
		}
		f.After = page.Next
	}
	counts = []store.AuditDayCount{}
	for k, v := range tally {
		k.Count = v
		counts = append(counts, k)
	}
	slices.SortFunc(counts, func(a, b store.AuditDayCount) int {
		if d := a.Day.Compare(b.Day); d != 0 {
			return d
		}
		if a.Kind != b.Kind {
			return cmpString(string(a.Kind), string(b.Kind))
		}
		return cmpString(a.Outcome, b.Outcome)
	})
	return counts, truncated, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decisionSeries names the series a count belongs to in the decisions
// chart: the kind of an allowed decision ("use", "reserve", ...), the
// outcome of a refused one ("budget_exceeded", ...). Checkpoints are not
// decisions: "".
func decisionSeries(c store.AuditDayCount) string {
	switch {
	case c.Kind == store.AuditCheckpoint:
		return ""
	case c.Outcome == store.OutcomeAllowed:
		return string(c.Kind)
	}
	return c.Outcome
}

// decisionChart stacks the audit trail's decisions of the last
// overviewDays days: allowed ones by kind, refused ones by refusal.
func decisionChart(today time.Time, counts []store.AuditDayCount) template.HTML {
	days := make([]time.Time, overviewDays)
	index := map[time.Time]int{}
	for i := range days {
		days[i] = today.AddDate(0, 0, i-(overviewDays-1))
		index[days[i]] = i
	}
	series := map[string][]float64{}
	var order []string
	for _, k := range auditKinds {
		if k != store.AuditCheckpoint {
			order = append(order, string(k))
		}
	}
	order = append(order, refusalOrder...)
	for _, c := range counts {
		name := decisionSeries(c)
		if name == "" {
			continue
		}
		if series[name] == nil {
			series[name] = make([]float64, overviewDays)
			if !slices.Contains(order, name) {
				order = append(order, name)
			}
		}
		if i, ok := index[c.Day.UTC()]; ok {
			series[name][i] += float64(c.Count)
		}
	}
	// Only the series with a decision in the period get a colour and a
	// legend entry.
	order = slices.DeleteFunc(order, func(name string) bool {
		return series[name] == nil || !slices.ContainsFunc(series[name], func(v float64) bool { return v > 0 })
	})
	return stackedDays("decisions", "Decisions per day: allowed by kind, refused by refusal (audit trail)", "decisions", days, order, series)
}
