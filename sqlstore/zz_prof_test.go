package sqlstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

func BenchmarkZZReserveSettle(b *testing.B) {
	st, err := sqlstore.Open(context.Background(), filepath.Join(b.TempDir(), "x.db"), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	s, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: 1 << 50, TimeLimit: time.Hour,
		SpendLimits: []store.SpendLimit{{Metric: store.MetricCost, Limit: 1 << 60, Currency: "USD"}, {Metric: store.MetricTotalTokens, Window: store.WindowDay, Limit: 1 << 60}}})
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprint("r", i)
		if _, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: s.ID, AgentID: "a", RequestID: id, Amount: store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: 2500}, Currency: "USD"}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: s.ID, AgentID: "a", RequestID: id, Actual: store.SpendAmount{InputTokens: 900, OutputTokens: 300, CostMicros: 1800}}); err != nil {
			b.Fatal(err)
		}
	}
}
