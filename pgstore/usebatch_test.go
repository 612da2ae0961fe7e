package pgstore_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// TestUseBatchesAreExact: 32 goroutines spend one session at once, a
// fifth of their calls with a tool the session does not allow. Concurrent
// calls share transactions (at least one transaction decides several),
// and the outcome is exactly what one call at a time gives: exactly the
// budget's worth of calls succeeds, every refusal has its own reason
// (budget or tool, each consuming nothing), and the stored counter is the
// budget.
func TestUseBatchesAreExact(t *testing.T) {
	st := open(t, newSchema(t))
	ctx := context.Background()
	const budget, callers, each = 600, 32, 25
	sess, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "a", AuthorizedTools: []string{"read_file"}, CallBudget: budget, TimeLimit: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ok, budgetRefused, toolRefused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range callers {
		wg.Go(func() {
			<-start
			for i := range each {
				tool := "read_file"
				if (c*each+i)%5 == 0 {
					tool = "delete_file"
				}
				s, err := st.Governance().Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "a", Tools: []string{tool}})
				var be *store.BudgetError
				switch {
				case err == nil:
					if s.CallsMade < 1 || s.CallsMade > budget {
						t.Errorf("calls made %d after a success", s.CallsMade)
					}
					ok.Add(1)
				case errors.As(err, &be):
					if be.Used != budget {
						t.Errorf("budget refusal with %d used", be.Used)
					}
					budgetRefused.Add(1)
				case errors.Is(err, store.ErrToolNotAuthorized):
					toolRefused.Add(1)
				default:
					t.Errorf("use: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	allowed := int64(callers * each * 4 / 5)
	if ok.Load() != budget || budgetRefused.Load()+toolRefused.Load() != callers*each-budget {
		t.Fatalf("%d allowed, %d budget and %d tool refusals; want %d allowed of %d", ok.Load(), budgetRefused.Load(), toolRefused.Load(), budget, allowed)
	}
	if toolRefused.Load() == 0 || budgetRefused.Load() < allowed-budget {
		t.Fatalf("%d tool and %d budget refusals", toolRefused.Load(), budgetRefused.Load())
	}
	got, err := st.Governance().Get(ctx, sess.ID)
	if err != nil || got.CallsMade != budget {
		t.Fatalf("stored calls made %d, %v; want %d", got.CallsMade, err, budget)
	}
	if n, calls := st.UseBatchStats(); n == 0 || calls < 2*n {
		t.Fatalf("%d shared transactions deciding %d calls: concurrent calls were not batched", n, calls)
	}
}

// TestUseBatchCanceledCallers: among concurrent calls of one session, the
// calls whose context has ended are refused with the context's error and
// consume nothing; the stored counter is exactly the successful calls.
func TestUseBatchCanceledCallers(t *testing.T) {
	st := open(t, newSchema(t))
	ctx := context.Background()
	sess, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "a", AuthorizedTools: []string{"t"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	var ok, canceled atomic.Int64
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := range 20 {
				cctx, cancel := context.WithCancel(ctx)
				if (c+i)%3 == 0 {
					cancel()
				}
				_, err := st.Governance().Use(cctx, store.UseRequest{SessionID: sess.ID, Tools: []string{"t"}})
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, context.Canceled):
					canceled.Add(1)
				default:
					t.Errorf("use: %v", err)
				}
			}
		})
	}
	wg.Wait()
	got, err := st.Governance().Get(ctx, sess.ID)
	if err != nil || got.CallsMade != ok.Load() {
		t.Fatalf("stored calls made %d, %v; %d calls succeeded", got.CallsMade, err, ok.Load())
	}
	if canceled.Load() == 0 {
		t.Fatal("no call was canceled")
	}
}
