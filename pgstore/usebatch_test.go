package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
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

// TestUseBatchCanceledCallers: among concurrent calls of four sessions,
// the calls whose context has ended are refused with the context's error
// and consume nothing; each stored counter is exactly its successful
// calls.
func TestUseBatchCanceledCallers(t *testing.T) {
	st := open(t, newSchema(t))
	ctx := context.Background()
	var ids []string
	for i := range 4 {
		sess, err := st.Governance().Create(ctx, store.CreateRequest{
			AgentID: fmt.Sprintf("a%d", i%2), AuthorizedTools: []string{"t"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	var ok [4]atomic.Int64
	var canceled atomic.Int64
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := range 20 {
				cctx, cancel := context.WithCancel(ctx)
				if (c+i)%3 == 0 {
					cancel()
				}
				_, err := st.Governance().Use(cctx, store.UseRequest{SessionID: ids[c%4], Tools: []string{"t"}})
				cancel()
				switch {
				case err == nil:
					ok[c%4].Add(1)
				case errors.Is(err, context.Canceled):
					canceled.Add(1)
				default:
					t.Errorf("use: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		got, err := st.Governance().Get(ctx, id)
		if err != nil || got.CallsMade != ok[i].Load() {
			t.Fatalf("session %d: stored calls made %d, %v; %d calls succeeded", i, got.CallsMade, err, ok[i].Load())
		}
	}
	if canceled.Load() == 0 {
		t.Fatal("no call was canceled")
	}
}

// TestUseBatchSpansSessions: 32 goroutines spread their calls over the
// sessions of one agent and of eight agents; concurrent calls of different
// sessions share transactions (at least one transaction decides calls of
// several sessions), and every session's counter is exactly its calls.
func TestUseBatchSpansSessions(t *testing.T) {
	st := open(t, newSchema(t))
	ctx := context.Background()
	var ids []string
	for i := range 16 {
		agent := "fleet"
		if i >= 8 {
			agent = fmt.Sprintf("agent-%d", i)
		}
		sess, err := st.Governance().Create(ctx, store.CreateRequest{
			AgentID: agent, AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	const callers, each = 32, 20
	want := make([]int64, len(ids))
	for c := range callers {
		for i := range each {
			want[(c+i)%len(ids)]++
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range callers {
		wg.Go(func() {
			<-start
			for i := range each {
				if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: ids[(c+i)%len(ids)], Tools: []string{"read_file"}}); err != nil {
					t.Errorf("use: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, id := range ids {
		got, err := st.Governance().Get(ctx, id)
		if err != nil || got.CallsMade != want[i] {
			t.Fatalf("session %d: stored calls made %d, %v; want %d", i, got.CallsMade, err, want[i])
		}
	}
	if mixed, _ := st.UseBatchMixed(); mixed == 0 {
		t.Fatal("calls of different sessions never shared a transaction")
	}
}

// batchFixture opens a store on a manual clock with sessions s-a and s-b
// of agent A (read_file only, budget 5), s-c of agent B and s-x, which
// has expired; the clock is past s-x's time.
func batchFixture(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	loc := newSchema(t)
	clock := storetest.NewClock()
	st, err := pgstore.Open(context.Background(), loc, pgstore.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, s := range []struct {
		id, agent string
		limit     time.Duration
	}{{"s-a", "A", time.Hour}, {"s-b", "A", time.Hour}, {"s-c", "B", time.Hour}, {"s-x", "B", time.Second}} {
		if _, err := st.Governance().Create(context.Background(), store.CreateRequest{
			ID: s.id, AgentID: s.agent, AuthorizedTools: []string{"read_file"}, CallBudget: 5, TimeLimit: s.limit,
		}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Second)
	return st, loc
}

// useEvents counts the use events of each session, by outcome.
func useEvents(t *testing.T, st *pgstore.Store) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	f := store.AuditFilter{Limit: 100}
	for {
		page, err := st.Audit().List(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Items {
			if ev.Kind != store.AuditUse {
				continue
			}
			if out[ev.SessionID] == nil {
				out[ev.SessionID] = map[string]int{}
			}
			out[ev.SessionID][ev.Outcome]++
		}
		if page.Next == "" {
			break
		}
		f.After = page.Next
	}
	rep, err := st.Audit().Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("audit verify: %+v, %v", rep.Problems, err)
	}
	return out
}

// wantCalls checks the stored calls made of sessions.
func wantCalls(t *testing.T, st *pgstore.Store, want map[string]int64) {
	t.Helper()
	for id, n := range want {
		got, err := st.Governance().Get(context.Background(), id)
		if err != nil || got.CallsMade != n {
			t.Fatalf("%s: stored calls made %d, %v; want %d", id, got.CallsMade, err, n)
		}
	}
}

// refusedBatch is a batch whose calls are granted and refused in a mix:
// sorted by session, refusals (s-a's intruder, s-b's forbidden tool) come
// before the granted call of s-c, so the batch reruns with its rows locked
// first.
var refusedBatch = []store.UseRequest{
	{SessionID: "s-c", Tools: []string{"read_file"}},
	{SessionID: "s-b", Tools: []string{"delete_file"}},
	{SessionID: "s-a", Tools: []string{"read_file"}},
	{SessionID: "s-b", Tools: []string{"read_file"}},
	{SessionID: "s-missing", Tools: []string{"read_file"}},
	{SessionID: "s-x", Tools: []string{"read_file"}},
	{SessionID: "s-a", AgentID: "intruder", Tools: []string{"read_file"}},
}

// checkRefusedBatch checks the outcomes of refusedBatch, decided once.
func checkRefusedBatch(t *testing.T, st *pgstore.Store, sessions []store.Session, errs []error) {
	t.Helper()
	wantErrs := []error{nil, store.ErrToolNotAuthorized, nil, nil, store.ErrNotFound, store.ErrExpired, store.ErrAgentMismatch}
	for i, want := range wantErrs {
		if want == nil && (errs[i] != nil || sessions[i].CallsMade != 1 || sessions[i].ID != refusedBatch[i].SessionID) {
			t.Errorf("call %d: %+v, %v; want granted, 1 call made", i, sessions[i], errs[i])
		}
		if want != nil && !errors.Is(errs[i], want) {
			t.Errorf("call %d: %v; want %v", i, errs[i], want)
		}
	}
	wantCalls(t, st, map[string]int64{"s-a": 1, "s-b": 1, "s-c": 1, "s-x": 0})
	if got, err := st.Governance().Get(context.Background(), "s-x"); err != nil || got.Status != store.StatusExpired {
		t.Fatalf("s-x: %s, %v; want expired", got.Status, err)
	}
	events := useEvents(t, st)
	want := map[string]map[string]int{
		"s-a": {store.OutcomeAllowed: 1, "agent_mismatch": 1},
		"s-b": {store.OutcomeAllowed: 1, "tool_not_authorized": 1},
		"s-c": {store.OutcomeAllowed: 1},
		"s-x": {store.OutcomeExpired: 1},
	}
	if fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("use events %v; want %v", events, want)
	}
}

// TestUseBatchRefusalsAmongGranted: one batch of calls of four sessions
// and a missing one, granted and refused in a mix (a forbidden tool, an
// intruding agent, an expired session, a missing one): every call gets
// the outcome it gets alone, the refusals consume nothing and are audited
// once each, the expired session is marked so durably, and the batch
// commits once, its rows locked first (its calls of one tool are decided
// in one statement). A batch of calls of two tools decides each call in
// its own statement, on rows locked first too, whatever the order of its
// refusals: no call is taken out of its batch.
func TestUseBatchRefusalsAmongGranted(t *testing.T) {
	st, _ := batchFixture(t)
	ctx := context.Background()
	sessions, errs := st.DecideUseBatch(ctx, refusedBatch)
	checkRefusedBatch(t, st, sessions, errs)
	if n, calls := st.UseBatchStats(); n != 1 || calls != int64(len(refusedBatch)) {
		t.Fatalf("%d batches of %d calls; want 1 of %d", n, calls, len(refusedBatch))
	}
	if mixed, apart := st.UseBatchMixed(); mixed != 1 || apart != 0 {
		t.Fatalf("%d mixed batches, %d calls decided apart; want 1 and 0", mixed, apart)
	}

	two := func(tool string) []string { return []string{"read_file", tool} }
	sessions, errs = st.DecideUseBatch(ctx, []store.UseRequest{
		{SessionID: "s-c", Tools: two("read_file")},
		{SessionID: "s-a", Tools: two("delete_file")},
	})
	if errs[0] != nil || sessions[0].CallsMade != 3 || !errors.Is(errs[1], store.ErrToolNotAuthorized) {
		t.Fatalf("batch of two tools: %v, %+v", errs, sessions)
	}
	if _, apart := st.UseBatchMixed(); apart != 0 {
		t.Fatalf("%d calls decided apart; want none", apart)
	}

	sessions, errs = st.DecideUseBatch(ctx, []store.UseRequest{
		{SessionID: "s-c", Tools: two("delete_file")},
		{SessionID: "s-b", Tools: two("read_file")},
		{SessionID: "s-a", Tools: two("read_file")},
	})
	if errs[1] != nil || errs[2] != nil || sessions[1].CallsMade != 3 || sessions[2].CallsMade != 3 || !errors.Is(errs[0], store.ErrToolNotAuthorized) {
		t.Fatalf("last batch: %v, %+v", errs, sessions)
	}
	if _, apart := st.UseBatchMixed(); apart != 0 {
		t.Fatalf("%d calls decided apart; want none", apart)
	}
	wantCalls(t, st, map[string]int64{"s-a": 3, "s-b": 3, "s-c": 3})
	if n, _ := st.UseBatchStats(); n != 3 {
		t.Fatalf("%d batches committed; want 3", n)
	}
}

// TestUseBatchRetriedWhole: the server aborts a batch's transaction with
// a serialization failure, then with a deadlock, just before its COMMIT;
// the whole batch reruns and its calls get the outcomes of one decision:
// no call counted or audited twice.
func TestUseBatchRetriedWhole(t *testing.T) {
	st, _ := batchFixture(t)
	var runs atomic.Int32
	st.SetUseBatchHook(func(ctx context.Context, tx pgstore.Execer) error {
		switch runs.Add(1) {
		case 1:
			_, err := tx.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '40001'; END $$`)
			return err
		case 2:
			_, err := tx.Exec(ctx, `DO $$ BEGIN RAISE EXCEPTION 'injected' USING ERRCODE = '40P01'; END $$`)
			return err
		}
		return nil
	})
	sessions, errs := st.DecideUseBatch(context.Background(), refusedBatch)
	if n := runs.Load(); n != 3 {
		t.Fatalf("the batch ran %d times; want 3 (two aborted)", n)
	}
	checkRefusedBatch(t, st, sessions, errs)
	if n, _ := st.UseBatchStats(); n != 1 {
		t.Fatalf("%d batches committed; want 1", n)
	}
}

// TestUseBatchFailingCallStaysItsOwn: a call whose statement fails (its
// session's counters tampered with, so that the budget check overflows)
// rolls its batch back; the other calls of the batch are then decided
// alone and granted once each, and only the failing call gets an error.
func TestUseBatchFailingCallStaysItsOwn(t *testing.T) {
	st, loc := batchFixture(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE governed_sessions SET calls_made = 9223372036854775807, call_budget = 9223372036854775807 WHERE id = 's-b'`); err != nil {
		t.Fatal(err)
	}
	sessions, errs := st.DecideUseBatch(ctx, []store.UseRequest{
		{SessionID: "s-c", Tools: []string{"read_file"}},
		{SessionID: "s-b", Tools: []string{"read_file"}},
		{SessionID: "s-a", Tools: []string{"read_file"}},
	})
	if errs[0] != nil || errs[2] != nil || sessions[0].CallsMade != 1 || sessions[2].CallsMade != 1 {
		t.Fatalf("the other calls: %v, %v; %+v, %+v", errs[0], errs[2], sessions[0], sessions[2])
	}
	if errs[1] == nil || errors.Is(errs[1], store.ErrBudgetExceeded) {
		t.Fatalf("the failing call: %v", errs[1])
	}
	if n, _ := st.UseBatchStats(); n != 0 {
		t.Fatalf("%d batches committed; want none", n)
	}
	wantCalls(t, st, map[string]int64{"s-a": 1, "s-c": 1})
	events := useEvents(t, st)
	if len(events) != 2 || events["s-a"][store.OutcomeAllowed] != 1 || events["s-c"][store.OutcomeAllowed] != 1 {
		t.Fatalf("use events %v", events)
	}
}

// TestUseBatchConnectionLost: a batch's connection dies before its COMMIT
// (its backend is terminated): nothing of the batch was committed, so its
// calls are decided alone, once each, on the other connections.
func TestUseBatchConnectionLost(t *testing.T) {
	st, _ := batchFixture(t)
	var runs atomic.Int32
	st.SetUseBatchHook(func(ctx context.Context, tx pgstore.Execer) error {
		if runs.Add(1) == 1 {
			_, err := tx.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return err
		}
		return nil
	})
	sessions, errs := st.DecideUseBatch(context.Background(), refusedBatch)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the batch ran %d times; want 1", n)
	}
	checkRefusedBatch(t, st, sessions, errs)
	if n, _ := st.UseBatchStats(); n != 0 {
		t.Fatalf("%d batches committed; want none", n)
	}
}

// retryCounter is a slog handler that counts the store's retries of
// transactions the server aborted, by SQLSTATE.
type retryCounter struct {
	mu    sync.Mutex
	codes map[string]int
}

func (h *retryCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retryCounter) WithGroup(string) slog.Handler            { return h }
func (h *retryCounter) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "sqlstate" {
			h.mu.Lock()
			h.codes[a.Value.String()]++
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// TestUseBatchesNeverDeadlock: two stores (two processes' stand-ins) decide
// batches of calls of the same eight sessions at once, each batch's calls
// in a different order, some refused, each batch holding its locks a few
// milliseconds before its COMMIT: rows are locked in one order, so no
// batch is ever aborted as a deadlock, and every session's counter is
// exactly its granted calls. It runs again without the wait before the
// COMMIT: the batches without sessions of several calls then send their
// COMMIT with their statements, and decide their refused calls after it.
func TestUseBatchesNeverDeadlock(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run(map[bool]string{true: "a wait before the commit", false: "commit with the statements"}[wait], func(t *testing.T) {
			testUseBatchesNeverDeadlock(t, wait)
		})
	}
}

func testUseBatchesNeverDeadlock(t *testing.T, wait bool) {
	loc := newSchema(t)
	ctx := context.Background()
	counters := []*retryCounter{{codes: map[string]int{}}, {codes: map[string]int{}}}
	var stores []*pgstore.Store
	for _, h := range counters {
		st, err := pgstore.Open(ctx, loc, pgstore.WithLogger(slog.New(h)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if wait {
			st.SetUseBatchHook(func(ctx context.Context, tx pgstore.Execer) error {
				_, err := tx.Exec(ctx, `SELECT pg_sleep(0.003)`)
				return err
			})
		}
		stores = append(stores, st)
	}
	var ids []string
	for i := range 8 {
		s, err := stores[0].Governance().Create(ctx, store.CreateRequest{
			AgentID: fmt.Sprintf("a%d", i%3), AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	var granted [8]atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		st := stores[w%2]
		wg.Go(func() {
			for round := range 12 {
				var reqs []store.UseRequest
				var which []int
				for k := range 5 {
					i := (w*5 + round*3 + k*(1+w%3)) % len(ids)
					if w%2 == 1 {
						i = len(ids) - 1 - i
					}
					tool := "read_file"
					if (w+round+k)%4 == 0 {
						tool = "delete_file"
					}
					reqs = append(reqs, store.UseRequest{SessionID: ids[i], Tools: []string{tool}})
					which = append(which, i)
				}
				_, errs := st.DecideUseBatch(ctx, reqs)
				for k, err := range errs {
					switch {
					case err == nil:
						granted[which[k]].Add(1)
					case !errors.Is(err, store.ErrToolNotAuthorized):
						t.Errorf("use: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, h := range counters {
		if n := h.codes["40P01"]; n != 0 {
			t.Errorf("%d batches aborted as deadlocks", n)
		}
	}
	for i, id := range ids {
		got, err := stores[1].Governance().Get(ctx, id)
		if err != nil || got.CallsMade != granted[i].Load() {
			t.Fatalf("session %d: stored calls made %d, %v; %d granted", i, got.CallsMade, err, granted[i].Load())
		}
	}
}

// waitFor fails t unless done is closed within a generous bound (a
// deadlock guard, not a speed goal: the calls it waits for need no lock
// held by the test).
func waitFor(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting after 30s", what)
	}
}

// TestUseBatchLeavesHeldRowsApart: one session's row is held by another
// transaction (a sessionctl operation's stand-in). With four calls decided
// at once and blocked (so that every other call queues and batches), the
// calls on the held session are taken out of their batches, and the calls
// of 16 other sessions, of the same agent and of others, all complete,
// exactly, while the row is still held; once it is released, the held
// session's calls complete, each counted and audited once.
func TestUseBatchLeavesHeldRowsApart(t *testing.T) {
	loc := newSchema(t)
	st := open(t, loc)
	ctx := context.Background()
	create := func(id, agent string) {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: id, AgentID: agent, AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 40, TimeLimit: time.Hour,
		}); err != nil {
			t.Fatal(err)
		}
	}
	create("held", "A")
	var others []string
	for i := range 16 {
		agent := "A"
		if i%2 == 1 {
			agent = fmt.Sprintf("B%d", i)
		}
		others = append(others, fmt.Sprintf("s-%02d", i))
		create(others[i], agent)
	}
	for i := range pgstore.DirectUses {
		create(fmt.Sprintf("direct-%d", i), "C")
	}
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx := holdRow(t, conn, "held")
	defer tx.Rollback(ctx)
	// Four calls decided at once, held before their decision: every
	// later call sees more than pgstore.DirectUses calls in flight, and queues.
	releaseDirect := holdDirectUses(t, ctx, st)
	const heldCalls = 3
	heldDone := make(chan struct{})
	var held sync.WaitGroup
	for range heldCalls {
		held.Go(func() {
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: "held", AgentID: "A", Tools: []string{"read_file"}}); err != nil {
				t.Errorf("held session's use: %v", err)
			}
		})
	}
	go func() { held.Wait(); close(heldDone) }()
	const each = 10
	othersDone := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := range each {
				if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: others[(c+i)%len(others)], Tools: []string{"read_file"}}); err != nil {
					t.Errorf("use: %v", err)
				}
			}
		})
	}
	go func() { wg.Wait(); close(othersDone) }()
	waitFor(t, othersDone, "calls of other sessions, with one session's row held")
	for _, id := range others {
		wantCalls(t, st, map[string]int64{id: each})
	}
	select {
	case <-heldDone:
		t.Fatal("the held session's calls completed while its row was held")
	default:
	}
	if _, apart := st.UseBatchMixed(); apart < heldCalls {
		t.Fatalf("%d calls decided apart; want the held session's %d", apart, heldCalls)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, heldDone, "the held session's calls, its row released")
	releaseDirect()
	wantCalls(t, st, map[string]int64{"held": heldCalls, "direct-0": 1})
	events := useEvents(t, st)
	if n := events["held"][store.OutcomeAllowed]; n != heldCalls || len(events["held"]) != 1 {
		t.Fatalf("held session's use events %v; want %d allowed", events["held"], heldCalls)
	}
	for _, id := range others {
		if n := events[id][store.OutcomeAllowed]; n != each {
			t.Fatalf("%s: %d allowed events; want %d", id, n, each)
		}
	}
}

// holdDirectUses starts pgstore.DirectUses calls (sessions direct-0,
// direct-1, ...) that are decided at once but held before their decision,
// and returns when all are in flight: every later call of the tenant
// sees more than pgstore.DirectUses calls in flight, and queues. release
// lets them finish and waits for them.
func holdDirectUses(t *testing.T, ctx context.Context, st *pgstore.Store) (release func()) {
	t.Helper()
	gate := make(chan struct{})
	st.SetUseDirectHook(func(string) { <-gate })
	var direct sync.WaitGroup
	for i := range pgstore.DirectUses {
		direct.Go(func() {
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: fmt.Sprintf("direct-%d", i), Tools: []string{"read_file"}}); err != nil {
				t.Errorf("direct use: %v", err)
			}
		})
	}
	for st.UseDirect() < pgstore.DirectUses {
		runtime.Gosched()
	}
	return func() {
		close(gate)
		direct.Wait()
	}
}

// TestUseFewCallsDoNotQueue: up to pgstore.DirectUses calls of a tenant in flight
// are each decided at once, without the leader's turn: with the turn held
// (a batch running its statements), a lone call completes; with
// pgstore.DirectUses calls in flight (held before their decision), the next call
// queues, and completes as a batch once the turn is free.
func TestUseFewCallsDoNotQueue(t *testing.T) {
	st, _ := batchFixture(t)
	ctx := context.Background()
	use := func(id string) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read_file"}}); err != nil {
				t.Errorf("use %s: %v", id, err)
			}
		}()
		return done
	}
	turn := st.HoldUseTurn()
	waitFor(t, use("s-a"), "a lone call, the turn held")
	if n := st.UseDirect(); n != 1 {
		t.Fatalf("%d calls decided at once; want 1", n)
	}
	gate := make(chan struct{})
	st.SetUseDirectHook(func(string) { <-gate })
	var held []<-chan struct{}
	for range pgstore.DirectUses {
		held = append(held, use("s-c"))
	}
	for st.UseDirect() < 1+pgstore.DirectUses {
		runtime.Gosched()
	}
	next := use("s-b")
	turn()
	waitFor(t, next, "the queued call, the turn released")
	close(gate)
	for _, done := range held {
		waitFor(t, done, "the calls decided at once")
	}
	if n := st.UseDirect(); n != 1+pgstore.DirectUses {
		t.Fatalf("%d calls decided at once; want %d", n, 1+pgstore.DirectUses)
	}
	wantCalls(t, st, map[string]int64{"s-a": 1, "s-b": 1, "s-c": pgstore.DirectUses})
}

// statementLog records the statements a pool's connections send, each
// statement of a pipeline too, and counts the round trips: each statement
// sent by itself, and each pipeline (a pgx batch).
type statementLog struct {
	mu    sync.Mutex
	sqls  []string
	trips int
}

func (l *statementLog) add(sql string) {
	l.mu.Lock()
	l.sqls = append(l.sqls, sql)
	l.mu.Unlock()
}

func (l *statementLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	l.mu.Lock()
	l.trips++
	l.mu.Unlock()
	l.add(data.SQL)
	return ctx
}
func (l *statementLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *statementLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	l.mu.Lock()
	l.trips++
	l.mu.Unlock()
	return ctx
}
func (l *statementLog) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	l.add(data.SQL)
}
func (l *statementLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns the statements logged since the last take.
func (l *statementLog) take() []string {
	out, _ := l.takeTrips()
	return out
}

// takeTrips returns the statements logged since the last take, and the
// round trips that sent them.
func (l *statementLog) takeTrips() ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out, trips := l.sqls, l.trips
	l.sqls, l.trips = nil, 0
	return out, trips
}

// TestUseBatchStatements pins the statements of a batch of governed Use
// calls, counted as its connection sends them, and its round trips: the
// BEGIN, the lock-first step (which also bounds the lock waits of the
// statements after it), the calls' statements and the COMMIT in one
// round trip; no statement of its own for the lock wait. The calls of
// sessions with one call in the batch are one statement for several
// sessions, one each otherwise; the calls of sessions with several are
// two statements whatever their number (their rows read, then written
// with their audit events in the COMMIT's round trip, a second one). A batch that follows one holding
// all its rows while it commits (the steady state of one session's
// callers) locks them waiting for that COMMIT instead, with no lock-first
// step, and by the read of its rows when all are of sessions with several
// calls. A later change that adds a statement or a round trip to every
// batch must change these counts on purpose.
func TestUseBatchStatements(t *testing.T) {
	loc := newSchema(t)
	ctx := context.Background()
	pc, err := pgxpool.ParseConfig(loc)
	if err != nil {
		t.Fatal(err)
	}
	log := &statementLog{}
	pc.ConnConfig.Tracer = log
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := pgstore.OpenPool(ctx, pool, pgstore.WithoutIndexer())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{"s-a", "s-b", "s-c"} {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{
			ID: id, AgentID: "A", AuthorizedTools: []string{"read_file"}, CallBudget: 100, TimeLimit: time.Hour,
		}); err != nil {
			t.Fatal(err)
		}
	}
	use := func(id string) store.UseRequest { return store.UseRequest{SessionID: id, Tools: []string{"read_file"}} }
	for _, c := range []struct {
		name        string
		reqs        []store.UseRequest
		afterCommit bool // the batch follows one holding its rows while it commits
		want, trips int
	}{
		{"three sessions", []store.UseRequest{use("s-a"), use("s-b"), use("s-c")}, false, 3, 1},
		{"one session", []store.UseRequest{use("s-a"), use("s-a"), use("s-a")}, false, 5, 2},
		{"one session, eight calls", slices.Repeat([]store.UseRequest{use("s-c")}, 8), false, 5, 2},
		{"two sessions", []store.UseRequest{use("s-b"), use("s-c"), use("s-b")}, false, 6, 2},
		{"after a commit, one session", []store.UseRequest{use("s-a"), use("s-a"), use("s-a")}, true, 4, 2},
		{"after a commit, three sessions", []store.UseRequest{use("s-a"), use("s-b"), use("s-c")}, true, 4, 1},
		{"after a commit, two sessions", []store.UseRequest{use("s-b"), use("s-c"), use("s-b")}, true, 6, 2},
	} {
		log.take()
		decide := st.DecideUseBatch
		if c.afterCommit {
			decide = st.DecideUseBatchAfterCommit
		}
		_, errs := decide(ctx, c.reqs)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: call %d: %v", c.name, i, err)
			}
		}
		sqls, trips := log.takeTrips()
		if len(sqls) != c.want || trips != c.trips {
			var heads []string
			for _, sql := range sqls {
				heads = append(heads, strings.Join(strings.Fields(sql), " ")[:min(40, len(sql))])
			}
			t.Errorf("%s: %d statements in %d round trips; want %d in %d: %q", c.name, len(sqls), trips, c.want, c.trips, heads)
		}
		for _, sql := range sqls {
			if strings.HasPrefix(strings.TrimSpace(sql), "SET") {
				t.Errorf("%s: a statement of its own for a setting: %q", c.name, sql)
			}
		}
	}
	wantCalls(t, st, map[string]int64{"s-a": 8, "s-b": 6, "s-c": 12})

	// s-a's row held elsewhere: the batch, without the lock-first step,
	// sends its statement, which gives up on s-a's row after its lock
	// wait (the server skips the COMMIT after it, unanswered and so not
	// logged), and rolls back; rerun with the lock-first step, it finds
	// the row held and rolls back the same way, reruns without s-a's
	// call (four statements), and s-a's side queue decides it in one
	// transaction that waits for the row.
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx := holdRow(t, conn, "s-a")
	defer tx.Rollback(ctx)
	log.take()
	done := make(chan []error, 1)
	busy, wary := st.UseBusy(), st.UseWary()
	go func() {
		_, errs := st.DecideUseBatch(ctx, []store.UseRequest{use("s-a"), use("s-b")})
		done <- errs
	}()
	// The first batches' statements on s-a wait for the row too, for
	// their lock wait (1 ms): the row is given back only once both have
	// given up, so that the waiter found is the side batch.
	waitBusy(t, st, busy+1)
	if n := st.UseWary(); n != wary+1 {
		t.Fatalf("%d batches rerun with the lock-first step; want %d", n, wary+1)
	}
	waitBlocked(t, tx, "the side batch of s-a waiting for its row")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("a row held: call %d: %v", i, err)
		}
	}
	var heads []string
	for _, sql := range log.take() {
		heads = append(heads, strings.Join(strings.Fields(sql), " ")[:min(20, len(sql))])
	}
	want := []string{
		"BEGIN ISOLATION LEVE", "WITH lw AS MATERIALI", "ROLLBACK",
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "WITH u AS (UPDATE go", "ROLLBACK",
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "WITH u AS (UPDATE go", "COMMIT",
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "WITH u AS (UPDATE go", "COMMIT",
	}
	if !slices.Equal(heads, want) {
		t.Errorf("a row held: %d statements %q; want %d %q", len(heads), heads, len(want), want)
	}
	wantCalls(t, st, map[string]int64{"s-a": 9, "s-b": 7})

	// The same with two calls of s-a: the first batch's read of s-a's
	// row gives up after the lock wait (the server skips the statements
	// after it: s-b's is reported or not, as the error's answer arrives
	// before or after the batch is closed), and the side batch reads the
	// row, waiting for it, and writes it once with both calls' events.
	tx = holdRow(t, conn, "s-a")
	defer tx.Rollback(ctx)
	log.take()
	busy = st.UseBusy()
	go func() {
		_, errs := st.DecideUseBatch(ctx, []store.UseRequest{use("s-a"), use("s-b"), use("s-a")})
		done <- errs
	}()
	waitBusy(t, st, busy+1)
	waitBlocked(t, tx, "the side batch of s-a's two calls waiting for its row")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, err := range <-done {
		if err != nil {
			t.Fatalf("a row held, two calls: call %d: %v", i, err)
		}
	}
	heads = nil
	for _, sql := range log.take() {
		head := strings.Join(strings.Fields(sql), " ")[:min(20, len(sql))]
		if len(heads) == 3 && head == "WITH u AS (UPDATE go" {
			continue // skipped by the server after the read gave up
		}
		heads = append(heads, head)
	}
	want = []string{
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "SELECT id, agent_id,", "ROLLBACK",
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "WITH u AS (UPDATE go", "COMMIT",
		"BEGIN ISOLATION LEVE", "WITH locked AS MATER", "SELECT id, agent_id,", "WITH e AS ( INSERT I", "COMMIT",
	}
	if !slices.Equal(heads, want) {
		t.Errorf("a row held, two calls: %d statements %q; want %d %q", len(heads), heads, len(want), want)
	}
	wantCalls(t, st, map[string]int64{"s-a": 11, "s-b": 8})
	if rep, err := st.Audit().Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("audit verify: %+v, %v", rep, err)
	}
}

// waitBusy waits until st has rerun n batches after their lock-first step
// found a row held (UseBusy); a deadlock guard bounds it.
func waitBusy(t *testing.T, st *pgstore.Store, n int64) {
	t.Helper()
	for guard := time.Now().Add(30 * time.Second); st.UseBusy() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(guard) {
			t.Fatalf("no batch gave up on a held row in 30s (%d reruns, want %d)", st.UseBusy(), n)
		}
	}
}

// TestUseBatchWithdrawnCallerPassesNoTurn: with more than
// pgstore.DirectUses calls in flight (those decided at once held), two
// calls queue while the leader's turn is held; the first one's context
// ends while it waits. It is withdrawn (context.Canceled, nothing
// consumed), and the turn given back goes to the caller of the call
// queued after it, which leads its batch: the queue does not stall on a
// withdrawn call. A caller that took the turn from a leader and was
// withdrawn before leading would leave the other call waiting for ever.
func TestUseBatchWithdrawnCallerPassesNoTurn(t *testing.T) {
	st, _ := batchFixture(t)
	ctx := context.Background()
	gate := make(chan struct{})
	st.SetUseDirectHook(func(string) { <-gate })
	use := func(ctx context.Context, id string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read_file"}})
			done <- err
		}()
		return done
	}
	var held []<-chan error
	for range pgstore.DirectUses {
		held = append(held, use(ctx, "s-c"))
	}
	for st.UseDirect() < pgstore.DirectUses {
		runtime.Gosched()
	}
	turn := st.HoldUseTurn()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := use(cctx, "s-a")
	for st.UseQueued() < 1 {
		runtime.Gosched()
	}
	second := use(ctx, "s-b")
	for st.UseQueued() < 2 {
		runtime.Gosched()
	}
	cancel()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the withdrawn call: %v; want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the withdrawn call: still waiting after 30s")
	}
	turn()
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("the call queued after it: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call queued after the withdrawn one: still waiting after 30s, the turn given back")
	}
	close(gate)
	for i, done := range held {
		if err := <-done; err != nil {
			t.Fatalf("call %d decided at once: %v", i, err)
		}
	}
	wantCalls(t, st, map[string]int64{"s-a": 0, "s-b": 1, "s-c": pgstore.DirectUses})
}
