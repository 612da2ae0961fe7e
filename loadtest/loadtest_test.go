package loadtest_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/loadtest"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// progressLog records the steps a run reports.
type progressLog struct {
	mu    sync.Mutex
	steps []string
	fracs map[string]float64
}

func (p *progressLog) record(step string, frac float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fracs == nil {
		p.fracs = map[string]float64{}
	}
	if _, seen := p.fracs[step]; !seen {
		p.steps = append(p.steps, step)
	}
	p.fracs[step] = frac
}

// checkReport asserts what every run of the standard scenarios reports:
// one result per scenario in order, with operations, sane percentiles and
// a ratio to F, and the progress steps in the same order.
func checkReport(t *testing.T, rep loadtest.Report, backend, dir string, callers int, progress *progressLog, want []loadtest.Scenario) {
	t.Helper()
	if rep.Backend != backend || rep.Dir != dir || rep.Synchronous != "FULL" {
		t.Fatalf("report header: %+v", rep)
	}
	if rep.FsyncPerSec <= 0 || rep.FsyncP50 <= 0 || rep.FsyncP99 < rep.FsyncP50 {
		t.Fatalf("fsync probe: %v/s p50 %v p99 %v", rep.FsyncPerSec, rep.FsyncP50, rep.FsyncP99)
	}
	if len(rep.Results) != len(want) {
		t.Fatalf("%d results for %d scenarios", len(rep.Results), len(want))
	}
	steps := []string{"fsync probe"}
	for i, r := range rep.Results {
		wantCallers := want[i].Callers
		if wantCallers == 0 {
			wantCallers = callers
		}
		if r.Name != want[i].Name || r.Callers != wantCallers {
			t.Errorf("result %d: %s with %d callers, want %s with %d", i, r.Name, r.Callers, want[i].Name, wantCallers)
		}
		if r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50Micros <= 0 || r.P99Micros < r.P50Micros || r.RatioToF <= 0 {
			t.Errorf("scenario %s/callers=%d: %+v", r.Name, r.Callers, r)
		}
		steps = append(steps, r.Name+"/callers="+strconv.Itoa(r.Callers))
	}
	steps = append(steps, "")
	if strings.Join(progress.steps, "|") != strings.Join(steps, "|") {
		t.Errorf("progress steps %q, want %q", progress.steps, steps)
	}
	if progress.fracs[""] != 1 {
		t.Errorf("the end of the run was reported as %v, want 1", progress.fracs[""])
	}
}

// empty asserts that dir holds nothing: the run removed what it made.
func empty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("left in %s: %v", dir, left)
	}
}

// TestRunSQLite: every scenario runs on a SQLite database of its own in
// the directory, and the directory is left as it was.
func TestRunSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("volume: every scenario's seeding; skipped by -short (go test and ./test.sh run it)")
	}
	dir := t.TempDir()
	var progress progressLog
	rep, err := loadtest.Run(t.Context(), loadtest.Options{Dir: dir, Duration: 20 * time.Millisecond, Callers: 3, Progress: progress.record})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, "sqlite", dir, 3, &progress, loadtest.Scenarios())
	empty(t, dir)
}

// TestRunPostgres: each scenario runs in a schema of its own, named by
// the prefix, and every schema is dropped at the end. One scenario of
// each facet runs here (sessionctl's TestBenchPostgres runs them all on
// PostgreSQL through this package; their seeding is what takes the time
// under the race detector).
func TestRunPostgres(t *testing.T) {
	u := pgtest.ServerURL(t)
	dir := t.TempDir()
	prefix := "lt_" + strings.ReplaceAll(strings.ToLower(time.Now().Format("150405.000000")), ".", "_") + "_"
	scenarios, err := loadtest.Select("use", "append@10", "agent-append")
	if err != nil {
		t.Fatal(err)
	}
	var progress progressLog
	rep, err := loadtest.Run(t.Context(), loadtest.Options{Dir: dir, PostgresURL: u, SchemaPrefix: prefix,
		Duration: 20 * time.Millisecond, Callers: 3, Progress: progress.record, Scenarios: scenarios})
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, "postgres", dir, 3, &progress, scenarios)
	empty(t, dir)
	conn, err := pgx.Connect(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var left int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_namespace WHERE starts_with(nspname, $1)`, prefix).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d schemas left behind (%v)", left, err)
	}
}

// TestSelect: scenarios are picked by name, in their standard order; an
// unknown name is invalid input; a run of a selection reports only it.
func TestSelect(t *testing.T) {
	got, err := loadtest.Select("get", "use")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range got {
		names = append(names, sc.Name)
	}
	if strings.Join(names, ",") != "use,use,get" {
		t.Fatalf("Select(get, use) = %v", names)
	}
	if all, err := loadtest.Select(); err != nil || len(all) != len(loadtest.Scenarios()) {
		t.Fatalf("Select() = %d scenarios, %v", len(all), err)
	}
	if _, err := loadtest.Select("get", "nope"); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Select(nope): %v, want ErrInvalidInput", err)
	}
	only, _ := loadtest.Select("get")
	rep, err := loadtest.Run(t.Context(), loadtest.Options{Dir: t.TempDir(), Duration: 10 * time.Millisecond, Scenarios: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Name != "get" || rep.Results[0].Ops <= 0 {
		t.Fatalf("results: %+v", rep.Results)
	}
}

// TestRunOwnScenario: a caller's own scenarios each get a fresh store
// and the caller count, and an operation's error ends the run with that
// error.
func TestRunOwnScenario(t *testing.T) {
	boom := errors.New("boom")
	var gotCallers []int
	mine := func(fail bool) loadtest.Scenario {
		return loadtest.Scenario{Name: "mine", Setup: func(ctx context.Context, st store.Store, callers int) (loadtest.Op, error) {
			gotCallers = append(gotCallers, callers)
			// The same id in each scenario: a conflict if the store were not fresh.
			if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: "fixed", AgentID: "a", CallBudget: 1}); err != nil {
				return nil, err
			}
			return func(ctx context.Context, _ int) error {
				if fail {
					return boom
				}
				_, err := st.Governance().Get(ctx, "fixed")
				return err
			}, nil
		}}
	}
	dir := t.TempDir()
	_, err := loadtest.Run(t.Context(), loadtest.Options{Dir: dir, Duration: 10 * time.Millisecond, Callers: 5,
		Scenarios: []loadtest.Scenario{mine(false), mine(true)}})
	if !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want the operation's error", err)
	}
	if len(gotCallers) != 2 || gotCallers[0] != 5 || gotCallers[1] != 5 {
		t.Fatalf("setups got callers %v, want [5 5]", gotCallers)
	}
	empty(t, dir)
}

// TestRunBadOptions: each bad option is invalid input; nothing runs and
// nothing is created.
func TestRunBadOptions(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	good := func(setup func(*loadtest.Options)) loadtest.Options {
		o := loadtest.Options{Dir: dir, Duration: time.Millisecond}
		setup(&o)
		return o
	}
	noop := func(context.Context, store.Store, int) (loadtest.Op, error) { return nil, nil }
	cases := map[string]loadtest.Options{
		"negative duration": good(func(o *loadtest.Options) { o.Duration = -time.Second }),
		"negative callers":  good(func(o *loadtest.Options) { o.Callers = -1 }),
		"synchronous OFF":   good(func(o *loadtest.Options) { o.Synchronous = sqlstore.SyncOff }),
		"missing dir":       good(func(o *loadtest.Options) { o.Dir = dir + "/nope" }),
		"dir is a file":     good(func(o *loadtest.Options) { o.Dir = file }),
		"bad postgres url":  good(func(o *loadtest.Options) { o.PostgresURL = "postgres://[::1" }),
		"upper-case prefix": good(func(o *loadtest.Options) { o.SchemaPrefix = "Bench_" }),
		"quoting prefix":    good(func(o *loadtest.Options) { o.SchemaPrefix = `x"; drop` }),
		"pg_ prefix":        good(func(o *loadtest.Options) { o.SchemaPrefix = "pg_x" }),
		"long prefix":       good(func(o *loadtest.Options) { o.SchemaPrefix = strings.Repeat("a", 41) }),
		"scenario no name":  good(func(o *loadtest.Options) { o.Scenarios = []loadtest.Scenario{{Setup: noop}} }),
		"scenario no setup": good(func(o *loadtest.Options) { o.Scenarios = []loadtest.Scenario{{Name: "x"}} }),
		"scenario callers":  good(func(o *loadtest.Options) { o.Scenarios = []loadtest.Scenario{{Name: "x", Setup: noop, Callers: -2}} }),
	}
	for name, o := range cases {
		called := false
		o.Progress = func(string, float64) { called = true }
		if _, err := loadtest.Run(t.Context(), o); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
		if called {
			t.Errorf("%s: the run started", name)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("bad options left %v in the directory", left)
	}
}

// TestRunCancelled: a run whose context is done returns its error and
// leaves nothing behind.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	if _, err := loadtest.Run(ctx, loadtest.Options{Dir: dir, Duration: time.Hour}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	empty(t, dir)
}
