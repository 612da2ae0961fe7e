package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// startTurn opens a store on loc with the given poll interval, creates a
// runtime session in it and begins a turn.
func startTurn(t *testing.T, loc string, poll time.Duration) (*pgstore.Store, string, uint64, context.Context) {
	t.Helper()
	ctx := context.Background()
	st, err := pgstore.Open(ctx, loc, pgstore.WithCancelPollInterval(poll))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sess, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat})
	if err != nil {
		t.Fatal(err)
	}
	gen, turnCtx, err := st.Runtime().BeginTurn(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	return st, sess.ID, gen, turnCtx
}

// A cancel made through another store (another process, another host)
// reaches the turn by NOTIFY, long before the poll interval.
func TestCancelArrivesByNotify(t *testing.T) {
	loc := pgtest.NewStore(t)
	_, id, gen, turnCtx := startTurn(t, loc, 10*time.Second)
	other := open(t, loc)
	time.Sleep(200 * time.Millisecond) // let the listener connect (the poll would take 10s)
	if ok, err := other.Runtime().Cancel(context.Background(), id, store.CauseClientRequest); err != nil || !ok {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	select {
	case <-turnCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the cancel did not reach the turn within 5s (poll interval 10s): no notification")
	}
	var tc *store.TurnCancelledError
	if err := context.Cause(turnCtx); !errors.As(err, &tc) || tc.Cause != store.CauseClientRequest || tc.Generation != gen {
		t.Fatalf("turn cancelled with %v", err)
	}
}

// Without a notification (here: a cancel written behind the store's back),
// the poll still finds it.
func TestCancelArrivesByPollWithoutNotify(t *testing.T) {
	loc := newSchema(t)
	_, id, gen, turnCtx := startTurn(t, loc, 50*time.Millisecond)
	schema := schemaOf(t, loc)
	ctx := context.Background()
	if _, err := adminPool(t).Exec(ctx, "UPDATE "+schema+".runtime_sessions SET turn_cancel = 'admin_kill' WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	select {
	case <-turnCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the poll did not find the cancel within 5s")
	}
	var tc *store.TurnCancelledError
	if err := context.Cause(turnCtx); !errors.As(err, &tc) || tc.Cause != store.CauseAdminKill || tc.Generation != gen {
		t.Fatalf("turn cancelled with %v", err)
	}
}

// BenchmarkCancelDeliveryAcrossStores measures how long a cancel made
// through one store takes to reach the turn context of another (in this
// process; the path is the same between hosts): NOTIFY on commit, the
// listener's check of the turn, the context's cancel.
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench CancelDelivery
func BenchmarkCancelDeliveryAcrossStores(b *testing.B) {
	ctx := context.Background()
	loc := newSchema(b)
	a, err := pgstore.Open(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	other, err := pgstore.Open(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	if _, err := a.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "s", AgentAlias: "x", WorkspaceDir: ".", ChatMode: store.ChatModeChat}); err != nil {
		b.Fatal(err)
	}
	var delays []time.Duration
	for b.Loop() {
		gen, tctx, err := a.Runtime().BeginTurn(ctx, "s")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if ok, err := other.Runtime().Cancel(ctx, "s", store.CauseClientRequest); err != nil || !ok {
			b.Fatal(ok, err)
		}
		<-tctx.Done()
		delays = append(delays, time.Since(start))
		if _, err := a.Runtime().EndTurn(ctx, "s", gen); err != nil {
			b.Fatal(err)
		}
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median-ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "worst-ms")
	}
}
