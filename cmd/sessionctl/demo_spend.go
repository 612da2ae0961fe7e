package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// demoSpend shows a cost limit stopping an agent: a governed session of
// the demo agent may spend 0.05 USD; each model call reserves an upper
// bound of 0.02 USD and settles what it cost (also recorded on the
// conversation of id, in the same transaction, whose new totals it
// prints), until the next reservation would pass the limit. Then it
// verifies the audit trail that recorded every decision.
func demoSpend(ctx context.Context, out io.Writer, st cliStore, id string) error {
	sess, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID:         "demo-agent",
		DeclaredIntent:  "answer questions with a paid model",
		AuthorizedTools: []string{"read_file"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      100,
		SpendLimits: []store.SpendLimit{{Metric: store.MetricCost, Limit: 50_000, Currency: "USD"},
			{Metric: store.MetricTotalTokens, Window: store.WindowHour, Limit: 100_000}},
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(out, "\nspend-limited session %s\n  agent %s, at most 0.05 USD and 100000 tokens per hour\n", sess.ID, sess.AgentID)
	bound := store.SpendAmount{InputTokens: 4000, OutputTokens: 1000, CostMicros: 20_000}
	actual := store.SpendAmount{InputTokens: 3100, OutputTokens: 420, CostMicros: 13_000}
	for call := 1; ; call++ {
		rid := fmt.Sprintf("model-call-%d", call)
		_, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: sess.ID, AgentID: "demo-agent", RequestID: rid,
			Amount: bound, Currency: "USD", TTL: 2 * time.Minute})
		var se *store.SpendLimitError
		if errors.As(err, &se) {
			fmt.Fprintf(out, "  call %d: reserve %s refused (%v): %s spent, %s reserved of %s\n", call, moneyText(bound.CostMicros, "USD"),
				err, moneyText(se.Spent, se.Currency), moneyText(se.Reserved, se.Currency), moneyText(se.Limit, se.Currency))
			break
		}
		if err != nil {
			return fmt.Errorf("reserve: %w", err)
		}
		if _, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: sess.ID, AgentID: "demo-agent", RequestID: rid,
			Actual: actual, Conversation: id}); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
		fmt.Fprintf(out, "  call %d: reserved %s, settled %s (%d tokens)\n", call, moneyText(bound.CostMicros, "USD"),
			moneyText(actual.CostMicros, "USD"), actual.TotalTokens())
	}
	info, err := st.Conversations().Info(ctx, id)
	if err != nil {
		return fmt.Errorf("conversation info: %w", err)
	}
	fmt.Fprintf(out, "  conversation %s now: %d tokens, %s (the settled calls' usage added)\n",
		id, info.TotalUsage.TotalTokens, usd(info.TotalCost))
	status, err := st.Spend().Status(ctx, sess.ID)
	if err != nil {
		return fmt.Errorf("spend status: %w", err)
	}
	cost := status.Limits[0]
	fmt.Fprintf(out, "  stored durably: %s spent of %s, nothing reserved; the agent is stopped\n",
		moneyText(cost.Spent, cost.Currency), moneyText(cost.Limit, cost.Currency))
	rep, err := st.Audit().Verify(ctx)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	events, err := st.Audit().List(ctx, store.AuditFilter{AgentID: "demo-agent", SessionID: sess.ID})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	verdict := "verify"
	if !rep.OK() {
		verdict = "DO NOT verify"
	}
	fmt.Fprintf(out, "  audit: %d decisions of this session recorded; %d %s with %d %s %s\n", len(events.Items),
		rep.Chains, plural(int(rep.Chains), "chain", "chains"), rep.Events, plural(int(rep.Events), "event", "events"), verdict)
	return nil
}
