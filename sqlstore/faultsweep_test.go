package sqlstore_test

// The fault-point sweep: for each write operation, the k-th statement of
// its transaction (BEGIN and COMMIT included) fails, once or persistently,
// with a real I/O error (SQLITE_IOERR), SQLITE_FULL or SQLITE_BUSY, each as
// the driver reports it. The call must return an error matching the store's
// sentinel (ErrIO, ErrStorageFull, ErrBusy) and leave the state entirely
// old — or, when the store retried past a transient fault, return the
// normal outcome with the state entirely new — and the next call must
// succeed.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// sweepOp is one write operation under test. setup builds the old state
// on the manual clock; run, with the clock moved by at, is the write.
type sweepOp struct {
	name  string
	setup func(ctx context.Context, st store.Store) error
	at    time.Duration
	run   func(ctx context.Context, st store.Store) error
}

// faultKind is an error to inject and the sentinel the caller must see.
type faultKind struct {
	name     string
	err      error
	sentinel error
}

func faultKinds(t *testing.T) []faultKind {
	kinds := []faultKind{
		{"io", realIOErr(t), store.ErrIO},
		{"full", realFullErr(t), store.ErrStorageFull},
		{"busy", realBusyErr(t), store.ErrBusy},
	}
	if sampleReliability {
		return kinds[:1] // every statement still fails once; see sweepModes
	}
	return kinds
}

// sweepModes are the fault modes: once, and persistent. In the sampled
// configuration (sampleReliability: under the race detector, and in a plain
// `go test`) only "once" runs (./test.sh runs the full sweep without the
// detector; see also sweepSteps).
func sweepModes() []bool {
	if sampleReliability {
		return []bool{false}
	}
	return []bool{false, true}
}

// sweepSteps are the statements a sweep faults, 1 to n+1 (n+1: past the
// last, where no fault fires). In the sampled configuration (under the
// race detector, and in a plain `go test`) a sample: the
// first two, the middle and the last two, and n+1. Faulting each
// statement of an operation is sequential work that the detector only
// slows (it was most of the package's race run); ./test.sh sweeps every
// statement, kind and mode without it, and the race run keeps a sample so
// that the fault paths still run under the detector.
func sweepSteps(n int) []int {
	var ks []int
	if !sampleReliability {
		for k := 1; k <= n+1; k++ {
			ks = append(ks, k)
		}
		return ks
	}
	seen := map[int]bool{}
	for _, k := range []int{1, 2, (n + 1) / 2, n - 1, n, n + 1} {
		if k >= 1 && k <= n+1 && !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	return ks
}

// outcomeSentinels classify an operation's normal outcome.
var outcomeSentinels = []error{
	store.ErrNotFound, store.ErrExpired, store.ErrBudgetExceeded, store.ErrToolNotAuthorized,
	store.ErrClosed, store.ErrRateLimited, store.ErrAgentMismatch, store.ErrTooManySessions,
	store.ErrInvalidInput, store.ErrConflict, store.ErrSpendLimitExceeded,
}

func outcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range outcomeSentinels {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "error: " + err.Error()
}

func useReq(id string, n int, reqID string) store.UseRequest {
	tools := make([]string, n)
	for i := range tools {
		tools[i] = "read_file"
	}
	return store.UseRequest{SessionID: id, AgentID: "agent-1", Tools: tools, RequestID: reqID}
}

func sweepSession(id string, budget int64) store.CreateRequest {
	return store.CreateRequest{
		ID: id, AgentID: "agent-1", AuthorizedTools: []string{"read_file"},
		CallBudget: budget, RateLimit: 100, TimeLimit: time.Hour,
		DelegationChain: []string{"root"}, DeclaredIntent: "sweep",
	}
}

func createAll(ctx context.Context, st store.Store, reqs ...store.CreateRequest) error {
	for _, r := range reqs {
		if _, err := st.Governance().Create(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func governanceSweepOps() []sweepOp {
	ignore := func(_ store.Session, err error) error { return err }
	return []sweepOp{
		{name: "Create", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("other", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Create(ctx, sweepSession("new", 5)))
		}},
		{name: "CreateUnderCap", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("a", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			r := sweepSession("new", 5)
			r.MaxActivePerAgent = 2
			return ignore(st.Governance().Create(ctx, r))
		}},
		{name: "CreateCapReached", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("a", 5), sweepSession("b", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			r := sweepSession("new", 5)
			r.MaxActivePerAgent = 2
			return ignore(st.Governance().Create(ctx, r))
		}},
		{name: "Use", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("s", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 1, "")))
		}},
		{name: "UseBatch", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("s", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 3, "")))
		}},
		{name: "UseRequestID", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("s", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 2, "req-1")))
		}},
		{name: "UseReplay", setup: func(ctx context.Context, st store.Store) error {
			if err := createAll(ctx, st, sweepSession("s", 5)); err != nil {
				return err
			}
			return ignore(st.Governance().Use(ctx, useReq("s", 2, "req-1")))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 2, "req-1")))
		}},
		{name: "UseRefusalRecorded", setup: func(ctx context.Context, st store.Store) error {
			if err := createAll(ctx, st, sweepSession("s", 1)); err != nil {
				return err
			}
			return ignore(st.Governance().Use(ctx, useReq("s", 1, "")))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 1, "req-2")))
		}},
		{name: "UseMarksExpired", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("s", 5))
		}, at: 2 * time.Hour, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Use(ctx, useReq("s", 1, "")))
		}},
		{name: "Close", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("s", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			return ignore(st.Governance().Close(ctx, "s"))
		}},
		{name: "CloseAllForAgent", setup: func(ctx context.Context, st store.Store) error {
			return createAll(ctx, st, sweepSession("a", 5), sweepSession("b", 5), sweepSession("c", 5))
		}, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().CloseAllForAgent(ctx, "agent-1")
			return err
		}},
		{name: "Cleanup", setup: func(ctx context.Context, st store.Store) error {
			if err := createAll(ctx, st, sweepSession("a", 5), sweepSession("b", 5), sweepSession("c", 5)); err != nil {
				return err
			}
			if err := ignore(st.Governance().Use(ctx, useReq("a", 1, "req-a"))); err != nil {
				return err
			}
			return ignore(st.Governance().Close(ctx, "a"))
		}, at: 2 * time.Hour, run: func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Cleanup(ctx)
			return err
		}},
	}
}

// sweepTotals counts what the sweeps did, for the closing report.
var sweepTotals struct {
	sync.Mutex
	cases, faults int
}

// facetSweeps are the fault-sweep operations of each registered facet.
// TestFaultSweep walks the facet registry: a facet without an entry here
// fails it, so a new facet cannot skip the sweep.
var facetSweeps = map[facet.Name]func() []sweepOp{
	// Spend limits and reservations are tables of the governance facet
	// (faultsweep_spend_test.go).
	facet.Governance:    func() []sweepOp { return append(governanceSweepOps(), spendSweepOps()...) },
	facet.Runtime:       runtimeSweepOps,
	facet.Conversations: conversationSweepOps,
	facet.AgentSessions: agentSweepOps,
	facet.Audit:         auditSweepOps,
}

// TestFaultSweep injects every fault kind at every statement of every
// write operation of every registered facet (see sweepOne).
func TestFaultSweep(t *testing.T) {
	skipShort(t)
	for _, f := range facet.All() {
		ops, ok := facetSweeps[f.Name]
		if !ok {
			t.Errorf("facet %s has no fault sweep (add it to facetSweeps)", f.Name)
			continue
		}
		t.Run(string(f.Name), func(t *testing.T) { runSweep(t, ops()) })
	}
}

func runSweep(t *testing.T, ops []sweepOp) {
	kinds := faultKinds(t)
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			sweepOne(t, op, kinds)
		})
	}
}

func sweepOne(t *testing.T, op sweepOp, kinds []faultKind) {
	ctx := context.Background()
	dir := t.TempDir()
	// The op's starting state, from a copy of the migrated template (what
	// is swept is the op, not the creation of a store); the cases open
	// copies of it at synchronous=NORMAL, as the faults are errors
	// returned to the store's statements, which the synchronous level
	// does not change (crashes and lost writes are TestCrashTrials').
	template := filepath.Join(dir, "template.db")
	copyFile(t, sqlstore.FreshDBPath(t, "fresh.db"), template)
	{
		st := openWithClock(t, template, storetest.NewClock())
		if err := op.setup(ctx, st); err != nil {
			t.Fatalf("setup: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	old := dumpState(t, template)

	plan := &faultPlan{}
	open := func(path string) *sqlstore.Store {
		clock := storetest.NewClock()
		clock.Advance(op.at)
		copyFile(t, template, path)
		return openWithClock(t, path, clock, sqlstore.WithFaults(plan.hook), sqlstore.WithBusyRetry(20*time.Millisecond),
			sqlstore.WithoutIndexer(), // the faults count the op's statements only
			sqlstore.WithSynchronous(sqlstore.SyncNormal))
	}

	// Reference run: no fault, count the statements.
	ref := filepath.Join(dir, "ref.db")
	st := open(ref)
	plan.arm(0, false, nil)
	refErr := op.run(ctx, st)
	n, stmts, _ := plan.count()
	plan.disarm()
	// The state before Close: Close folds the search queue, and the
	// cases compare with their stores open.
	newState := dumpState(t, ref)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	want := outcomeOf(refErr)
	if strings.HasPrefix(want, "error") || n == 0 {
		t.Fatalf("reference run failed or never reached the writer: %v", refErr)
	}
	t.Logf("%d statements, outcome %s, writes: %v", n, want, newState != old)

	cases, fired := 0, 0
	for _, kind := range kinds {
		for _, persistent := range sweepModes() {
			for _, k := range sweepSteps(n) {
				cases++
				name := fmt.Sprintf("%s k=%d persistent=%v", kind.name, k, persistent)
				path := filepath.Join(dir, fmt.Sprintf("%s-%d-%v.db", kind.name, k, persistent))
				st := open(path)
				plan.arm(k, persistent, kind.err)
				err := op.run(ctx, st)
				_, seen, f := plan.count()
				plan.disarm()
				fired += f
				state := dumpState(t, path)
				switch {
				case f == 0:
					if k <= n {
						t.Fatalf("%s: statement %d not reached; ran %q, reference %q", name, k, seen, stmts)
					}
					if outcomeOf(err) != want || state != newState {
						t.Fatalf("%s: no fault fired, but outcome %v (want %s) or state differs", name, err, want)
					}
				case err != nil && outcomeOf(err) != want:
					// The fault reached the caller: a clear error, nothing written.
					if !errors.Is(err, kind.sentinel) {
						t.Fatalf("%s: error %v does not match %v", name, err, kind.sentinel)
					}
					if state != old {
						t.Fatalf("%s: failed call left a partial state:\n--- old\n%s\n--- now\n%s", name, old, state)
					}
					// The next call succeeds and does the whole change.
					if err := op.run(ctx, st); outcomeOf(err) != want {
						t.Fatalf("%s: next call: %v, want %s", name, err, want)
					}
					if state := dumpState(t, path); state != newState {
						t.Fatalf("%s: next call left state\n%s\nwant\n%s", name, state, newState)
					}
				default:
					// The store absorbed the fault (a busy retry).
					if kind.sentinel != store.ErrBusy {
						t.Fatalf("%s: fault fired (%d) but the call returned %v", name, f, err)
					}
					if state != newState {
						t.Fatalf("%s: retried call left state\n%s\nwant\n%s", name, state, newState)
					}
				}
				if err := st.HealthCheck(ctx); err != nil {
					t.Fatalf("%s: health check after the fault: %v", name, err)
				}
				if err := st.Close(); err != nil {
					t.Fatalf("%s: close: %v", name, err)
				}
				if !sampleReliability {
					integrityCheck(t, path)
				}
			}
		}
	}
	sweepTotals.Lock()
	sweepTotals.cases += cases
	sweepTotals.faults += fired
	sweepTotals.Unlock()
	t.Logf("%d fault cases, %d faults injected", cases, fired)
}

// batchReq is one caller's request in a group-committed batch, with the
// check that its change is visible.
type batchReq struct {
	name    string
	run     func(ctx context.Context, st store.Store) error
	visible func(ctx context.Context, st store.Store) (bool, error)
}

func mixedBatch() (setup func(ctx context.Context, st store.Store) error, reqs []batchReq) {
	setup = func(ctx context.Context, st store.Store) error {
		if err := createAll(ctx, st, sweepSession("s0", 5), sweepSession("s2", 5), sweepSession("s3", 5)); err != nil {
			return err
		}
		_, err := st.Conversations().Save(ctx, store.NewConversation("conv"))
		return err
	}
	calls := func(id string, want int64) func(ctx context.Context, st store.Store) (bool, error) {
		return func(ctx context.Context, st store.Store) (bool, error) {
			s, err := st.Governance().Get(ctx, id)
			return s.CallsMade == want, err
		}
	}
	reqs = []batchReq{
		{"use", func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Use(ctx, useReq("s0", 1, ""))
			return err
		}, calls("s0", 1)},
		{"create", func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Create(ctx, sweepSession("s1", 5))
			return err
		}, func(ctx context.Context, st store.Store) (bool, error) {
			_, err := st.Governance().Get(ctx, "s1")
			if errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
			return err == nil, err
		}},
		{"use-request-id", func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Use(ctx, useReq("s2", 2, "r"))
			return err
		}, calls("s2", 2)},
		{"append", func(ctx context.Context, st store.Store) error {
			_, err := st.Conversations().AppendMessages(ctx, "conv", store.UserMessage("hello"))
			return err
		}, func(ctx context.Context, st store.Store) (bool, error) {
			n, err := st.Conversations().MessageCount(ctx, "conv")
			return n == 1, err
		}},
		{"close", func(ctx context.Context, st store.Store) error {
			_, err := st.Governance().Close(ctx, "s3")
			return err
		}, func(ctx context.Context, st store.Store) (bool, error) {
			s, err := st.Governance().Get(ctx, "s3")
			return s.Status == store.StatusClosed, err
		}},
	}
	return setup, reqs
}

func TestFaultSweepGroupCommit(t *testing.T) {
	skipShort(t)
	setup, reqs := mixedBatch()
	// The writer's batch as it runs first (no savepoints), and as it
	// reruns after a request failed (a savepoint per request).
	t.Run("unguarded", func(t *testing.T) { sweepBatch(t, setup, reqs, false) })
	t.Run("guarded", func(t *testing.T) { sweepBatch(t, setup, reqs, true) })
}

// sweepBatch commits reqs together in one transaction (the writer is
// paused while they queue, in order) and sweeps the faults over that
// transaction. Each caller's outcome must match what is visible: success
// iff its whole change is there. Retrying the failed requests then gives
// the reference state. Guarded (each request in a savepoint, as a batch
// reruns after a failure), a one-off fault in one request's own statement
// fails that request only; unguarded (as a batch first runs), it fails no
// request: the batch rolls back and reruns guarded, where the fault does
// not recur.
func sweepBatch(t *testing.T, setup func(context.Context, store.Store) error, reqs []batchReq, guarded bool) {
	ctx := context.Background()
	dir := t.TempDir()
	template := filepath.Join(dir, "template.db")
	{
		st := openWithClock(t, template, storetest.NewClock())
		if err := setup(ctx, st); err != nil {
			t.Fatalf("setup: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	plan := &faultPlan{}
	openAs := func(path string, guarded bool) *sqlstore.Store {
		copyFile(t, template, path)
		opts := []sqlstore.Option{sqlstore.WithFaults(plan.hook), sqlstore.WithBusyRetry(20 * time.Millisecond),
			sqlstore.WithoutIndexer()} // the faults count the op's statements only
		if guarded {
			opts = append(opts, sqlstore.WithGuardedBatches())
		}
		return openWithClock(t, path, storetest.NewClock(), opts...)
	}
	open := func(path string) *sqlstore.Store { return openAs(path, guarded) }
	// runBatch queues reqs behind a paused writer, in order, arms the plan
	// and lets the batch run.
	runBatch := func(st *sqlstore.Store, k int, persistent bool, ferr error) []error {
		queued, resume, err := st.PauseWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() { errs[i] = r.run(ctx, st) })
			for queued() < i+1 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		plan.arm(k, persistent, ferr)
		resume()
		wg.Wait()
		return errs
	}
	ref := filepath.Join(dir, "ref.db")
	st := open(ref)
	for i, err := range runBatch(st, 0, false, nil) {
		if err != nil {
			t.Fatalf("reference %s: %v", reqs[i].name, err)
		}
	}
	n, stmts, _ := plan.count()
	plan.disarm()
	// Audit chains compared as sets of events; the state before Close,
	// which folds the search queue (the cases compare with their stores
	// open).
	newState := batchState(t, ref)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// The guarded layout names each statement's request (its savepoint);
	// without the savepoints it is the unguarded layout, statement for
	// statement.
	gstmts := stmts
	if !guarded {
		gref := openAs(filepath.Join(dir, "guarded-ref.db"), true)
		for i, err := range runBatch(gref, 0, false, nil) {
			if err != nil {
				t.Fatalf("guarded reference %s: %v", reqs[i].name, err)
			}
		}
		_, gstmts, _ = plan.count()
		plan.disarm()
		if err := gref.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(gstmts[1], "SAVEPOINT") {
		t.Fatalf("the requests were not batched in one transaction: %q", gstmts)
	}
	t.Logf("%d requests in one transaction of %d statements", len(reqs), n)
	// owner[k] is the request whose own statement k is (1-based), or -1
	// for the transaction's control statements.
	owner := []int{-1}
	var layout []string
	cur := -1
	for _, q := range gstmts {
		switch {
		case strings.HasPrefix(q, "SAVEPOINT"):
			cur++
			if !guarded {
				continue
			}
			owner = append(owner, -1)
		case strings.HasPrefix(q, "RELEASE"):
			if !guarded {
				continue
			}
			owner = append(owner, -1)
		case strings.HasPrefix(q, "ROLLBACK"), q == "BEGIN IMMEDIATE", q == "COMMIT":
			owner = append(owner, -1)
		default:
			owner = append(owner, cur)
		}
		layout = append(layout, q)
	}
	owner = append(owner, -1) // k = n+1: no fault fires
	if !slices.Equal(layout, stmts) {
		t.Fatalf("the batch's statements are not the guarded layout's without savepoints:\n%q\nwant\n%q", stmts, layout)
	}
	cases, fired := 0, 0
	for _, kind := range faultKinds(t) {
		for _, persistent := range sweepModes() {
			for _, k := range sweepSteps(n) {
				cases++
				name := fmt.Sprintf("%s k=%d persistent=%v", kind.name, k, persistent)
				path := filepath.Join(dir, fmt.Sprintf("%s-%d-%v.db", kind.name, k, persistent))
				st := open(path)
				errs := runBatch(st, k, persistent, kind.err)
				_, _, f := plan.count()
				plan.disarm()
				fired += f
				for i, r := range reqs {
					vis, err := r.visible(ctx, st)
					if err != nil {
						t.Fatalf("%s: %s: check: %v", name, r.name, err)
					}
					if errs[i] == nil && !vis {
						t.Fatalf("%s: %s acknowledged but not visible", name, r.name)
					}
					if errs[i] != nil {
						if vis {
							t.Fatalf("%s: %s failed (%v) but its change is visible", name, r.name, errs[i])
						}
						if !errors.Is(errs[i], kind.sentinel) {
							t.Fatalf("%s: %s: error %v does not match %v", name, r.name, errs[i], kind.sentinel)
						}
					}
				}
				if f > 0 && !persistent && k <= n && owner[k] >= 0 && (!guarded || kind.sentinel != store.ErrBusy) {
					// Guarded, a fault in one request's statement fails
					// that request only; unguarded, the batch reruns
					// guarded, where the fault does not recur, and no
					// request fails.
					for i := range reqs {
						if (errs[i] != nil) != (guarded && i == owner[k]) {
							t.Fatalf("%s: fault in %s's statement %q, but outcomes are %v", name, reqs[owner[k]].name, stmts[k-1], errs)
						}
					}
				}
				for i, r := range reqs {
					if errs[i] != nil {
						if err := r.run(ctx, st); err != nil {
							t.Fatalf("%s: retry of %s: %v", name, r.name, err)
						}
					}
				}
				if state := batchState(t, path); state != newState {
					t.Fatalf("%s: after retries the state is\n%s\nwant\n%s", name, state, newState)
				}
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				verifyAuditFile(t, path)
				if !sampleReliability {
					integrityCheck(t, path)
				}
			}
		}
	}
	sweepTotals.Lock()
	sweepTotals.cases += cases
	sweepTotals.faults += fired
	sweepTotals.Unlock()
	t.Logf("%d fault cases, %d faults injected", cases, fired)
}
