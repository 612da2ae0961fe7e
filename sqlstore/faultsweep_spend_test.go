package sqlstore_test

// Fault-sweep operations of spend limits (part of the governance facet)
// and of the audit facet: every statement of a reserve, settle, release
// and of the audit's maintenance fails in turn (see sweepOne). Every run
// names its reservations: the state after a retried call must equal the
// reference state byte for byte.

import (
	"context"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func spendSession(id string, limit int64) store.CreateRequest {
	r := sweepSession(id, 5)
	r.SpendLimits = []store.SpendLimit{{Metric: store.MetricCost, Limit: limit, Currency: "USD"},
		{Metric: store.MetricTotalTokens, Window: store.WindowHour, Limit: 10_000}}
	return r
}

func sweepReserve(id string, cost int64, ttl time.Duration) store.ReserveRequest {
	return store.ReserveRequest{SessionID: "s", AgentID: "agent-1", RequestID: id,
		Amount: store.SpendAmount{InputTokens: 100, OutputTokens: 50, CostMicros: cost}, Currency: "USD", TTL: ttl}
}

// withAgentLimit creates session s with limits and sets an agent limit.
func withAgentLimit(ctx context.Context, st store.Store, limit int64) error {
	if err := createAll(ctx, st, spendSession("s", limit)); err != nil {
		return err
	}
	return st.Spend().SetAgentLimits(ctx, "agent-1", []store.SpendLimit{
		{Metric: store.MetricCost, Window: store.WindowDay, Limit: 5000, Currency: "USD"},
		{Metric: store.MetricInputTokens, Limit: 1 << 20}})
}

func spendSweepOps() []sweepOp {
	ignore := func(_ store.Reservation, err error) error { return err }
	reserved := func(ctx context.Context, st store.Store) error {
		if err := withAgentLimit(ctx, st, 1000); err != nil {
			return err
		}
		return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Hour)))
	}
	return []sweepOp{
		{name: "Reserve", setup: func(ctx context.Context, st store.Store) error {
			return withAgentLimit(ctx, st, 1000)
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Hour)))
		}},
		{name: "ReserveRefused", setup: func(ctx context.Context, st store.Store) error {
			return withAgentLimit(ctx, st, 100)
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Hour)))
		}},
		{name: "ReserveReplay", setup: reserved, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Hour)))
		}},
		{name: "ReserveReleasesLapsed", setup: func(ctx context.Context, st store.Store) error {
			if err := withAgentLimit(ctx, st, 1000); err != nil {
				return err
			}
			if err := ignore(st.Spend().Reserve(ctx, sweepReserve("r0", 600, time.Second))); err != nil {
				return err
			}
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r00", 300, time.Second)))
		}, at: 2 * time.Second, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 900, time.Hour)))
		}},
		{name: "ReserveMarksExpired", setup: func(ctx context.Context, st store.Store) error {
			return withAgentLimit(ctx, st, 1000)
		}, at: 2 * time.Hour, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Hour)))
		}},
		{name: "Settle", setup: reserved, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Settle(ctx, store.SettleRequest{SessionID: "s", RequestID: "r1",
				Actual: store.SpendAmount{InputTokens: 80, OutputTokens: 20, CostMicros: 300}}))
		}},
		{name: "SettleWithConversation", setup: func(ctx context.Context, st store.Store) error {
			if err := reserved(ctx, st); err != nil {
				return err
			}
			_, err := st.Conversations().Save(ctx, store.NewConversation("conv"))
			return err
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Settle(ctx, store.SettleRequest{SessionID: "s", RequestID: "r1", Conversation: "conv",
				Actual: store.SpendAmount{InputTokens: 80, OutputTokens: 20, CostMicros: 300}}))
		}},
		{name: "SettleLate", setup: func(ctx context.Context, st store.Store) error {
			if err := withAgentLimit(ctx, st, 1000); err != nil {
				return err
			}
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Second)))
		}, at: time.Minute, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Settle(ctx, store.SettleRequest{SessionID: "s", RequestID: "r1",
				Actual: store.SpendAmount{CostMicros: 200}}))
		}},
		{name: "Release", setup: reserved, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Spend().Release(ctx, store.ReleaseRequest{SessionID: "s", RequestID: "r1"}))
		}},
		{name: "SetAgentLimits", setup: func(ctx context.Context, st store.Store) error {
			return reserved(ctx, st)
		}, run: func(ctx context.Context, st store.Store) error {
			// Changes one limit and drops the other: no new rows, so the
			// state after a retry is the reference state exactly.
			return st.Spend().SetAgentLimits(ctx, "agent-1", []store.SpendLimit{
				{Metric: store.MetricCost, Window: store.WindowDay, Limit: 7000, Currency: "USD"}})
		}},
		{name: "ReleaseExpired", setup: func(ctx context.Context, st store.Store) error {
			if err := withAgentLimit(ctx, st, 1000); err != nil {
				return err
			}
			return ignore(st.Spend().Reserve(ctx, sweepReserve("r1", 500, time.Second)))
		}, at: time.Minute, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Spend().ReleaseExpired(ctx)
			return err
		}},
		{name: "CleanupWithReservations", setup: func(ctx context.Context, st store.Store) error {
			if err := reserved(ctx, st); err != nil {
				return err
			}
			if err := createAll(ctx, st, sweepSession("held", 5)); err != nil {
				return err
			}
			_, err := st.Governance().Close(ctx, "s")
			return err
		}, at: 2 * time.Hour, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Cleanup(ctx)
			return err
		}},
	}
}

func auditSweepOps() []sweepOp {
	return []sweepOp{
		{name: "Checkpoint", setup: func(ctx context.Context, st store.Store) error {
			if err := createAll(ctx, st, sweepSession("a", 5)); err != nil {
				return err
			}
			r := sweepSession("b", 5)
			r.AgentID = "agent-2"
			return createAll(ctx, st, r)
		}, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Audit().Checkpoint(ctx, "")
			return err
		}},
		{name: "Prune", setup: func(ctx context.Context, st store.Store) error {
			if err := createAll(ctx, st, sweepSession("a", 5)); err != nil {
				return err
			}
			if _, err := st.Governance().Use(ctx, useReq("a", 1, "")); err != nil {
				return err
			}
			if _, err := st.Audit().Checkpoint(ctx, "agent-1"); err != nil {
				return err
			}
			_, err := st.Governance().Use(ctx, useReq("a", 1, ""))
			return err
		}, at: time.Second, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Audit().Prune(ctx, store.AuditPruneRequest{Before: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)})
			return err
		}},
	}
}
