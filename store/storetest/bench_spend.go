package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchSpend benchmarks what the spend limits and the audit trail cost:
//
//   - AuditAndReserve/callers=1: one governed Use on a store that appends
//     no audit events (the baseline; Options.NoAudit), one Use on a store
//     that does, and one Reserve followed by its Settle on that store,
//     each iteration doing all three in rotating order, so that the
//     ratios come from one run under the same load. It reports the median
//     of each (use-µs, use-audited-µs, reserve+settle-µs) and the ratios
//     of the medians: audit-ratio (audited Use / Use, goal <= 1.2) and
//     reserve+settle-ratio (Reserve+Settle / audited Use, goal <= 2.5).
//   - ReserveSettle/session=per-caller/callers=8: eight goroutines, each
//     reserving and settling on a session of its own agent.
//
// A backend without Options.NoAudit in its harness fails the first.
func BenchSpend(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	b.Run("AuditAndReserve/callers=1", func(b *testing.B) {
		plain := e.openWith(b, Options{Durability: o.Durability, NoAudit: true})
		defer closeBench(b, plain)
		audited := e.open(b)
		defer closeBench(b, audited)
		ctx := context.Background()
		useOf := func(st store.Store) store.UseRequest {
			req := benchGovSession("bench")
			req.SpendLimits = []store.SpendLimit{{Metric: store.MetricCost, Limit: 1 << 60, Currency: "USD"},
				{Metric: store.MetricTotalTokens, Window: store.WindowDay, Limit: 1 << 60}}
			sess, err := st.Governance().Create(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			return store.UseRequest{SessionID: sess.ID, AgentID: "bench", Tools: []string{"read_file"}}
		}
		plainUse, auditedUse := useOf(plain), useOf(audited)
		if n, err := plain.Audit().Verify(ctx); err != nil || n.Events != 0 {
			b.Fatalf("the baseline store audits (%d events, %v): the harness ignores Options.NoAudit", n.Events, err)
		}
		var next int
		reserveSettle := func() error {
			next++
			id := fmt.Sprint("r", next)
			amount := store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: 2500}
			if _, err := audited.Spend().Reserve(ctx, store.ReserveRequest{SessionID: auditedUse.SessionID, AgentID: "bench",
				RequestID: id, Amount: amount, Currency: "USD"}); err != nil {
				return err
			}
			_, err := audited.Spend().Settle(ctx, store.SettleRequest{SessionID: auditedUse.SessionID, AgentID: "bench",
				RequestID: id, Actual: store.SpendAmount{InputTokens: 900, OutputTokens: 300, CostMicros: 1800}})
			return err
		}
		ops := []func() error{
			func() error { _, err := plain.Governance().Use(ctx, plainUse); return err },
			func() error { _, err := audited.Governance().Use(ctx, auditedUse); return err },
			reserveSettle,
		}
		// Warm up every path (statements prepared, connections open).
		for range 3 {
			for _, op := range ops {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
		}
		lat := make([][]time.Duration, len(ops))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := range ops {
				j := (i + k) % len(ops)
				t0 := time.Now()
				if err := ops[j](); err != nil {
					b.Fatal(err)
				}
				lat[j] = append(lat[j], time.Since(t0))
			}
		}
		b.StopTimer()
		med := make([]float64, len(ops))
		for j := range lat {
			slices.Sort(lat[j])
			med[j] = float64(lat[j][len(lat[j])/2].Nanoseconds()) / 1e3
		}
		b.ReportMetric(med[0], "use-µs")
		b.ReportMetric(med[1], "use-audited-µs")
		b.ReportMetric(med[2], "reserve+settle-µs")
		b.ReportMetric(med[1]/med[0], "audit-ratio")
		b.ReportMetric(med[2]/med[1], "reserve+settle-ratio")
		if rep, err := audited.Audit().Verify(ctx); err != nil || !rep.OK() {
			b.Fatalf("audit after the benchmark: %+v, %v", rep.Problems, err)
		}
	})
	b.Run("ReserveSettle/session=per-caller/callers=8", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		ctx := context.Background()
		const callers = 8
		sessions := make([]string, callers)
		next := make([]int, callers)
		for i := range sessions {
			req := benchGovSession(fmt.Sprintf("bench-%d", i))
			req.SpendLimits = []store.SpendLimit{{Metric: store.MetricCost, Limit: 1 << 60, Currency: "USD"}}
			sess, err := st.Governance().Create(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			sessions[i] = sess.ID
		}
		benchCallers(b, callers, "pairs", func(ctx context.Context, caller int) error {
			next[caller]++
			id := fmt.Sprint("r", next[caller])
			if _, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: sessions[caller], RequestID: id,
				Amount: store.SpendAmount{CostMicros: 2500}, Currency: "USD"}); err != nil {
				return err
			}
			_, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: sessions[caller], RequestID: id,
				Actual: store.SpendAmount{CostMicros: 1800}})
			return err
		})
	})
}

// openWith opens a store with opts on a fresh location (see open).
func (e benchEnv) openWith(b *testing.B, opts Options) store.Store {
	b.Helper()
	if e.h.OpenWith == nil {
		b.Fatal("storetest: the harness has no OpenWith")
	}
	st, err := e.h.OpenWith(context.Background(), e.h.NewLocation(b), time.Now, opts)
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	return st
}
