package benchkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/session"
)

// The comparison: the workloads of the performance table (issue 15), each
// run on a store under test and on ADK's database service, alternately,
// round after round, on the same file system, with the same bodies. The
// two services cannot share a test binary (both SQLite drivers register
// the name "sqlite"), so ADK's side runs in a worker process
// (internal/adkdbbench/adkworker) that answers one round per request.
//
// A round: copy the workload's seeded template database (built once per
// process at synchronous=OFF, through the target itself), open the copy at
// the synchronous level measured, prepare (untimed: handles, sessions),
// then run the workload's operation until RoundTime has passed, and
// report operations per second.

// Target is one store under comparison, seen through the operations of
// the workloads.
type Target interface {
	// Create creates a session with an initial state.
	Create(ctx context.Context, app, user, id string, state map[string]any) error
	// Handle returns a handle to append through (read with at most one
	// event).
	Handle(ctx context.Context, app, user, id string) (any, error)
	// Append appends ev through a handle of Handle or Create.
	Append(ctx context.Context, h any, ev *session.Event) error
	// Get reads a session with its recent events (0: all) and touches
	// every event as a runner building a prompt would; it returns the
	// number of events.
	Get(ctx context.Context, app, user, id string, recent int) (int, error)
	// Read reads a whole session (every event, touched as Get touches
	// them) and returns a handle to append through (the session read, as
	// a runner appends to the session it got) and the number of events.
	Read(ctx context.Context, app, user, id string) (any, int, error)
	// List lists every session of a user with its state; it returns the
	// number of sessions.
	List(ctx context.Context, app, user string) (int, error)
	// Close closes the store.
	Close() error
}

// Opener opens a Target on the database file(s) in dir at a synchronous
// level: "FULL", "NORMAL" or "OFF" (OFF is used only to seed templates).
type Opener func(ctx context.Context, dir, sync string) (Target, error)

// Workload is one row of the table.
type Workload struct {
	// Name identifies the workload, e.g. "append/history=1000".
	Name string
	// Seed is the name of the template the workload runs on (workloads
	// that read the same data share one).
	Seed string
	// seed fills a fresh template database.
	seed func(ctx context.Context, t Target) error
	// run prepares (untimed), then runs the operation for about d (or
	// until the prepared data is spent) and returns the number of
	// operations done and the time they took.
	run func(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error)
}

// The names of the workloads' app and users.
const (
	benchApp  = "bench"
	userBig   = "big"
	userSmall = "small"
	userU     = "u"
)

// historyCapacity is how many appends one round of an append/history
// workload can make: its template holds enough sessions that no session's
// history grows by more than a tenth (at least 10 events) during a round.
const historyCapacity = 3000

// historyStep is how many appends one session of history h takes before
// the workload moves on to the next one.
func historyStep(h int) int { return max(10, h/10) }

// Workloads returns the workloads of the table, in its order.
func Workloads() []Workload {
	ws := []Workload{
		{Name: "create", Seed: "empty", seed: func(context.Context, Target) error { return nil }, run: runCreate},
		{Name: "append/writers=4", Seed: "empty", seed: func(context.Context, Target) error { return nil }, run: runAppendWriters(4)},
	}
	for _, h := range []int{10, 1_000, 10_000} {
		ws = append(ws, Workload{
			Name: fmt.Sprintf("append/history=%d", h), Seed: fmt.Sprintf("history-%d", h),
			seed: seedHistory(h), run: runAppendHistory(h),
		})
	}
	ws = append(ws,
		Workload{Name: "get/events=1000", Seed: "events", seed: seedEvents, run: runGet(0, 1_000)},
		Workload{Name: "get/events=1000/recent=100", Seed: "events", seed: seedEvents, run: runGet(100, 100)},
		Workload{Name: "list/sessions=10000", Seed: "sessions", seed: seedSessions, run: runList(userBig, 10_000)},
		Workload{Name: "list/sessions=10", Seed: "sessions", seed: seedSessions, run: runList(userSmall, 10)},
		Workload{Name: "turn", Seed: "turn", seed: seedTurn, run: runTurn(false)},
		Workload{Name: "turn/get", Seed: "turn", seed: seedTurn, run: runTurn(true)},
	)
	return ws
}

// WorkloadByName returns the named workload.
func WorkloadByName(name string) (Workload, bool) {
	for _, w := range Workloads() {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

var createSeq atomic.Int64

func runCreate(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error) {
	n := 0
	prefix := fmt.Sprintf("c%d-", createSeq.Add(1))
	start := begin(ctx)
	for deadline := start.Add(d); time.Now().Before(deadline); n++ {
		if err := t.Create(ctx, benchApp, userU, prefix+strconv.Itoa(n), nil); err != nil {
			return n, 0, err
		}
	}
	return n, time.Since(start), nil
}

// runAppendWriters appends from writers goroutines, each to a session of
// its own (created before the timed part).
func runAppendWriters(writers int) func(context.Context, Target, time.Duration) (int, time.Duration, error) {
	return func(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error) {
		handles := make([]any, writers)
		for i := range handles {
			id := fmt.Sprintf("w%d-%d", createSeq.Add(1), i)
			if err := t.Create(ctx, benchApp, userU, id, nil); err != nil {
				return 0, 0, err
			}
			h, err := t.Handle(ctx, benchApp, userU, id)
			if err != nil {
				return 0, 0, err
			}
			handles[i] = h
		}
		start := begin(ctx)
		deadline := start.Add(d)
		var total atomic.Int64
		var firstErr error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				i := 0
				for time.Now().Before(deadline) {
					if err := t.Append(ctx, handles[w], Event(i)); err != nil {
						mu.Lock()
						firstErr = cmp(firstErr, err)
						mu.Unlock()
						return
					}
					i++
					total.Add(1)
				}
			})
		}
		wg.Wait()
		return int(total.Load()), time.Since(start), firstErr
	}
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func historySessions(h int) int { return (historyCapacity + historyStep(h) - 1) / historyStep(h) }

func seedHistory(h int) func(context.Context, Target) error {
	return func(ctx context.Context, t Target) error {
		for s := range historySessions(h) {
			id := fmt.Sprintf("h%d", s)
			if err := t.Create(ctx, benchApp, userU, id, nil); err != nil {
				return err
			}
			hd, err := t.Handle(ctx, benchApp, userU, id)
			if err != nil {
				return err
			}
			for i := range h {
				if err := t.Append(ctx, hd, Event(i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// runAppendHistory appends to sessions of h events, historyStep(h) to
// each, one after the other.
func runAppendHistory(h int) func(context.Context, Target, time.Duration) (int, time.Duration, error) {
	return func(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error) {
		handles := make([]any, historySessions(h))
		for s := range handles {
			hd, err := t.Handle(ctx, benchApp, userU, fmt.Sprintf("h%d", s))
			if err != nil {
				return 0, 0, err
			}
			handles[s] = hd
		}
		step := historyStep(h)
		n := 0
		start := begin(ctx)
		for deadline := start.Add(d); n < historyCapacity && time.Now().Before(deadline); n++ {
			if err := t.Append(ctx, handles[n/step], Event(h+n%step)); err != nil {
				return n, 0, err
			}
		}
		return n, time.Since(start), nil
	}
}

// seedEvents: the session "e0" of 1,000 events, and three more sessions of
// 1,000 events in the same table.
func seedEvents(ctx context.Context, t Target) error {
	for s := range 4 {
		id := fmt.Sprintf("e%d", s)
		if err := t.Create(ctx, benchApp, userU, id, nil); err != nil {
			return err
		}
		hd, err := t.Handle(ctx, benchApp, userU, id)
		if err != nil {
			return err
		}
		for i := range 1_000 {
			if err := t.Append(ctx, hd, Event(i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func runGet(recent, want int) func(context.Context, Target, time.Duration) (int, time.Duration, error) {
	return func(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error) {
		n := 0
		start := begin(ctx)
		for deadline := start.Add(d); time.Now().Before(deadline); n++ {
			got, err := t.Get(ctx, benchApp, userU, "e0", recent)
			if err != nil {
				return n, 0, err
			}
			if got != want {
				return n, 0, fmt.Errorf("got %d events, want %d", got, want)
			}
		}
		return n, time.Since(start), nil
	}
}

// seedSessions: user "big" has 10,000 sessions, user "small" 10, each
// with a one-key session state.
func seedSessions(ctx context.Context, t Target) error {
	for _, u := range []struct {
		user string
		n    int
	}{{userBig, 10_000}, {userSmall, 10}} {
		for i := range u.n {
			if err := t.Create(ctx, benchApp, u.user, fmt.Sprintf("s%05d", i), map[string]any{"turn": float64(i)}); err != nil {
				return err
			}
		}
	}
	return nil
}

func runList(user string, want int) func(context.Context, Target, time.Duration) (int, time.Duration, error) {
	return func(ctx context.Context, t Target, d time.Duration) (int, time.Duration, error) {
		n := 0
		start := begin(ctx)
		for deadline := start.Add(d); time.Now().Before(deadline); n++ {
			got, err := t.List(ctx, benchApp, user)
			if err != nil {
				return n, 0, err
			}
			if got != want {
				return n, 0, fmt.Errorf("listed %d sessions, want %d", got, want)
			}
		}
		return n, time.Since(start), nil
	}
}

// Templates builds and keeps the seeded template databases of one opener,
// in a directory of their own.
type Templates struct {
	dir  string
	open Opener
	mu   sync.Mutex
	made map[string]string // seed name -> directory
}

// NewTemplates returns the templates of open, kept under dir.
func NewTemplates(dir string, open Opener) *Templates {
	return &Templates{dir: dir, open: open, made: map[string]string{}}
}

func (tp *Templates) template(ctx context.Context, w Workload) (string, error) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if d, ok := tp.made[w.Seed]; ok {
		return d, nil
	}
	d := filepath.Join(tp.dir, "template-"+w.Seed)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", err
	}
	t, err := tp.open(ctx, d, "OFF")
	if err != nil {
		return "", err
	}
	err = w.seed(ctx, t)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("seed %s: %w", w.Seed, err)
	}
	tp.made[w.Seed] = d
	return d, nil
}

// Result is one round of one target.
type Result struct {
	Ops     int     `json:"ops"`
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the process's CPU time (user and system, every
	// goroutine) from the start of the round's timed part to the end of
	// the target's Close: the work the operations caused, also what a
	// store does for them in the background or at close (0 where unknown,
	// and for turn/get, whose timed part is the reads within the turns).
	CPUSeconds float64 `json:"cpu_seconds,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// CPUPerOp is the round's CPU time per operation, in microseconds (0 when
// unknown).
func (r Result) CPUPerOp() float64 {
	if r.Ops <= 0 {
		return 0
	}
	return r.CPUSeconds * 1e6 / float64(r.Ops)
}

// PerSecond is the round's throughput.
func (r Result) PerSecond() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Seconds
}

// RoundTime is the timed part of one round: $BENCH_ROUND_TIME (a Go
// duration) when set, else one second.
func RoundTime() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BENCH_ROUND_TIME")); err == nil && d > 0 {
		return d
	}
	return time.Second
}

// Rounds is the number of alternating rounds: $BENCH_ROUNDS when set,
// else 5.
func Rounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// Round runs one round of w on a copy of its template, opened at sync.
func (tp *Templates) Round(ctx context.Context, w Workload, sync string, d time.Duration) (Result, error) {
	return tp.RoundOn(ctx, tp.open, w, sync, d)
}

// RoundOn is Round with the copy opened by open, another view of the
// same database format (the facet of the store whose service seeded it).
func (tp *Templates) RoundOn(ctx context.Context, open Opener, w Workload, sync string, d time.Duration) (Result, error) {
	tpl, err := tp.template(ctx, w)
	if err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp(tp.dir, "round-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	if err := copyDir(tpl, dir); err != nil {
		return Result{}, err
	}
	t, err := open(ctx, dir, sync)
	if err != nil {
		return Result{}, err
	}
	rec := &cpuMark{}
	n, elapsed, err := w.run(context.WithValue(ctx, cpuMarkKey{}, rec), t, d)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", w.Name, err)
	}
	res := Result{Ops: n, Seconds: elapsed.Seconds()}
	if rec.set {
		res.CPUSeconds = (processCPU() - rec.at).Seconds()
	}
	return res, nil
}

func copyDir(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// LoadAverage returns the one-minute load average of the machine (0 where
// /proc/loadavg cannot be read).
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ErrWorker reports a failed round of the worker process.
var ErrWorker = errors.New("benchkit: worker round failed")
