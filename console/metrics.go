package console

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentstore/sessionstore/store"
)

// storeCollector reads the store's counts at each scrape (bounded: see
// scanLimit).
type storeCollector struct {
	c                                                  *console
	governed, calls, budget, convs, messages           *prometheus.Desc
	tokens, cost, runtime, truncated, scrape, scrapeOK *prometheus.Desc
	uses, decisions                                    *prometheus.Desc
}

func newStoreCollector(c *console) *storeCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("sessionstore_"+name, help, labels, nil)
	}
	return &storeCollector{
		c:         c,
		governed:  d("governed_sessions", "Governed sessions by effective status.", "status"),
		calls:     d("governed_calls_made", "Tool calls made, summed over the governed sessions."),
		budget:    d("governed_call_budget", "Call budgets, summed over the governed sessions."),
		convs:     d("conversations", "Conversations by state.", "state"),
		messages:  d("conversation_messages", "Messages stored in conversations."),
		tokens:    d("conversation_tokens", "Total tokens used, summed over the conversations."),
		cost:      d("conversation_cost_usd", "Total cost in US dollars, summed over the conversations."),
		runtime:   d("runtime_sessions", "Runtime sessions by agent alias.", "agent"),
		truncated: d("scan_truncated", "1 when the store held more items than one scrape reads (the counts are partial)."),
		scrape:    d("scrape_duration_seconds", "How long reading the store's counts took."),
		scrapeOK:  d("scrape_success", "1 when the store answered the scrape."),
		uses:      d("governed_use_records", "Recorded uses (those with a request id) by outcome: ok or the refusal, named as the audit trail names it.", "outcome"),
		decisions: d("audit_decisions", "Events of the audit trail (every decision, allowed or refused) by kind and outcome: ok or the refusal.", "kind", "outcome"),
	}
}

// Describe sends the descriptors of every metric.
func (s *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.governed, s.calls, s.budget, s.convs, s.messages, s.tokens, s.cost, s.runtime, s.truncated, s.scrape, s.scrapeOK, s.uses, s.decisions} {
		ch <- d
	}
}

// Collect reads the store and sends the metrics.
func (s *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s.c.collect(ctx)
	if err != nil {
		s.c.log.Error("console: metrics scrape failed", "err", err)
		ch <- prometheus.MustNewConstMetric(s.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	byOutcome := map[string]int64{}
	if ur, ok := s.c.st.Governance().(store.UseRecorder); ok {
		counts, err := ur.UseOutcomes(ctx, time.Time{})
		if err != nil {
			s.c.log.Error("console: metrics scrape failed", "err", err)
			ch <- prometheus.MustNewConstMetric(s.scrapeOK, prometheus.GaugeValue, 0)
			return
		}
		for _, c := range counts {
			byOutcome[auditOutcome(c.Outcome)] += c.Count
		}
	}
	type kindOutcome struct{ kind, outcome string }
	decisions := map[kindOutcome]int64{}
	dcounts, dtrunc, err := s.c.decisionCounts(ctx, time.Time{})
	if err != nil {
		s.c.log.Error("console: metrics scrape failed", "err", err)
		ch <- prometheus.MustNewConstMetric(s.scrapeOK, prometheus.GaugeValue, 0)
		return
	}
	for _, c := range dcounts {
		decisions[kindOutcome{string(c.Kind), c.Outcome}] += c.Count
	}
	g := prometheus.GaugeValue
	ch <- prometheus.MustNewConstMetric(s.scrapeOK, g, 1)
	for outcome, n := range byOutcome {
		ch <- prometheus.MustNewConstMetric(s.uses, g, float64(n), outcome)
	}
	for k, n := range decisions {
		ch <- prometheus.MustNewConstMetric(s.decisions, g, float64(n), k.kind, k.outcome)
	}
	for status, n := range st.Governed.ByStatus {
		ch <- prometheus.MustNewConstMetric(s.governed, g, float64(n), status)
	}
	ch <- prometheus.MustNewConstMetric(s.calls, g, float64(st.Governed.Calls))
	ch <- prometheus.MustNewConstMetric(s.budget, g, float64(st.Governed.Budget))
	for state, n := range st.Conversations.ByState {
		ch <- prometheus.MustNewConstMetric(s.convs, g, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(s.messages, g, float64(st.Conversations.Messages))
	ch <- prometheus.MustNewConstMetric(s.tokens, g, float64(st.Conversations.TotalTokens))
	ch <- prometheus.MustNewConstMetric(s.cost, g, float64(st.Conversations.TotalCostMicros)/1e6) // from micro-units: 0.3, not a float sum's 0.30000000000000004
	for agent, n := range st.Runtime.ByAgent {
		ch <- prometheus.MustNewConstMetric(s.runtime, g, float64(n), agent)
	}
	trunc := 0.0
	if st.Governed.Truncated || st.Conversations.Truncated || dtrunc {
		trunc = 1
	}
	ch <- prometheus.MustNewConstMetric(s.truncated, g, trunc)
	ch <- prometheus.MustNewConstMetric(s.scrape, g, st.Elapsed.Seconds())
}

// newMetrics builds the console's registry (the store collector, Go
// runtime and process metrics) and its handler.
func (c *console) newMetrics(extra prometheus.Registerer) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	sc := newStoreCollector(c)
	for _, col := range []prometheus.Collector{sc, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(col); err != nil {
			return nil, err
		}
	}
	if extra != nil {
		if err := extra.Register(sc); err != nil {
			return nil, err
		}
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil, ErrorHandling: promhttp.ContinueOnError})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	}), nil
}
