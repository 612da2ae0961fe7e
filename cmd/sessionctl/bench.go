package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// benchOptions are the flags of "sessionctl bench".
type benchOptions struct {
	dir      string
	duration time.Duration
	callers  int
	sync     string
	json     bool
}

// benchResult is one measured scenario.
type benchResult struct {
	Name      string  `json:"name"`
	Callers   int     `json:"callers"`
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Micros float64 `json:"p50_us"`
	P99Micros float64 `json:"p99_us"`
	RatioToF  float64 `json:"ratio_to_fsync"`
}

// benchReport is the whole output of a run.
type benchReport struct {
	Backend     string        `json:"backend"`
	Dir         string        `json:"dir"`
	Synchronous string        `json:"synchronous"`
	FsyncPerSec float64       `json:"fsync_per_sec"`
	FsyncP50    float64       `json:"fsync_p50_us"`
	FsyncP99    float64       `json:"fsync_p99_us"`
	Results     []benchResult `json:"results"`
}

// benchScenario prepares a store and returns the operation to time.
type benchScenario struct {
	name    string
	callers func(o *benchOptions) int
	setup   func(ctx context.Context, st store.Store, callers int) (func(ctx context.Context, worker int) error, error)
}

func benchScenarios() []benchScenario {
	one := func(*benchOptions) int { return 1 }
	many := func(o *benchOptions) int { return o.callers }
	four := func(*benchOptions) int { return 4 }
	return []benchScenario{
		{"use", one, setupUse},
		{"use", many, setupUse},
		{"append@10", one, setupAppend(1000, 10)},
		{"append@10000", one, setupAppend(1, 10000)},
		{"get", one, setupGet},
		{"list-100-of-10000", one, setupList},
		{"agent-create", one, setupAgentCreate},
		{"agent-append", one, setupAgentAppend},
		{"agent-append", four, setupAgentAppend},
		{"agent-get-100-of-1000", one, setupAgentGet},
		{"agent-list-100-of-1000", one, setupAgentList},
	}
}

// benchEvent is an agent-session event of about 1 KiB: model text, usage
// metadata, the turn-complete flag.
var benchEvent = func() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"author":        "model",
		"content":       map[string]any{"role": "model", "parts": []any{map[string]any{"text": strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)}}},
		"usageMetadata": map[string]any{"promptTokenCount": 120, "candidatesTokenCount": 60, "totalTokenCount": 180},
		"turnComplete":  true,
	})
	return b
}()

func agentKey(id string) store.SessionKey {
	return store.SessionKey{App: "bench", User: "u", Session: id}
}

// appendAgentEvent appends the i-th event of a session with a one-key
// state delta, as a model turn leaves.
func appendAgentEvent(ctx context.Context, st store.Store, key store.SessionKey, i int) error {
	_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{
		Key:   key,
		Event: store.AgentEvent{ID: fmt.Sprintf("ev-%d", i), InvocationID: fmt.Sprintf("inv-%d", i/4), Data: benchEvent},
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}},
	})
	return err
}

func setupAgentCreate(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	var next atomic.Int64
	return func(ctx context.Context, _ int) error {
		_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: agentKey(fmt.Sprintf("c-%d", next.Add(1)))})
		return err
	}, nil
}

// setupAgentAppend: each caller appends to a session of its own.
func setupAgentAppend(ctx context.Context, st store.Store, callers int) (func(context.Context, int) error, error) {
	keys := make([]store.SessionKey, callers)
	next := make([]int, callers) // each worker its own element
	for w := range keys {
		keys[w] = agentKey(fmt.Sprintf("w-%d", w))
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: keys[w]}); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, worker int) error {
		i := next[worker]
		next[worker]++
		return appendAgentEvent(ctx, st, keys[worker], i)
	}, nil
}

// seedAgentEvents appends n events to the session key (created first).
func seedAgentEvents(ctx context.Context, st store.Store, key store.SessionKey, n int) error {
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		return err
	}
	for i := range n {
		if err := appendAgentEvent(ctx, st, key, i); err != nil {
			return err
		}
	}
	return nil
}

func setupAgentGet(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	key := agentKey("history")
	if err := seedAgentEvents(ctx, st, key, 1000); err != nil {
		return nil, err
	}
	req := store.GetAgentSessionRequest{Key: key, IncludeEvents: true, Recent: 100}
	return func(ctx context.Context, _ int) error {
		s, err := st.AgentSessions().GetSession(ctx, req)
		if err == nil && len(s.Events) != 100 {
			err = fmt.Errorf("get returned %d events", len(s.Events))
		}
		return err
	}, nil
}

func setupAgentList(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	const n = 1000
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				_, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: agentKey(fmt.Sprintf("s-%04d", i)),
					State: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage("0")}}})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	cursor := store.SessionCursor{User: "u", Session: "s-0499"}.Encode()
	return func(ctx context.Context, _ int) error {
		p, err := st.AgentSessions().ListSessions(ctx, store.ListAgentSessionsRequest{App: "bench", User: "u", Cursor: cursor, Limit: 100})
		if err == nil && len(p.Items) != 100 {
			err = fmt.Errorf("list returned %d sessions", len(p.Items))
		}
		return err
	}, nil
}

func setupUse(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	s, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "bench", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 50, TimeLimit: 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	req := store.UseRequest{SessionID: s.ID, AgentID: "bench", Tools: []string{"read_file"}}
	return func(ctx context.Context, _ int) error {
		_, err := st.Governance().Use(ctx, req)
		return err
	}, nil
}

// setupAppend seeds convs conversations with history messages each; the
// operation appends one message, cycling over the conversations so that
// the history stays near its starting length during the run.
func setupAppend(convs, history int) func(context.Context, store.Store, int) (func(context.Context, int) error, error) {
	return func(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
		msg := store.Message{Role: "user", Content: []store.ContentBlock{store.TextBlock("how many files are in the repository?")}}
		seed := make([]store.Message, history)
		for i := range seed {
			seed[i] = msg
		}
		var wg sync.WaitGroup
		var firstErr atomic.Value
		for w := range 16 {
			wg.Go(func() {
				for i := w; i < convs; i += 16 {
					_, err := st.Conversations().Save(ctx, store.Conversation{ID: fmt.Sprintf("conv-%05d", i), Messages: seed})
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			return nil, err
		}
		var next atomic.Int64
		return func(ctx context.Context, _ int) error {
			id := fmt.Sprintf("conv-%05d", next.Add(1)%int64(convs))
			_, err := st.Conversations().AppendMessages(ctx, id, msg)
			return err
		}, nil
	}
}

func setupGet(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	s, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "bench", CallBudget: 1, TimeLimit: time.Hour})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ int) error {
		_, err := st.Governance().Get(ctx, s.ID)
		return err
	}, nil
}

func setupList(ctx context.Context, st store.Store, _ int) (func(context.Context, int) error, error) {
	const n = 10000
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				_, err := st.Governance().Create(ctx, store.CreateRequest{
					ID: fmt.Sprintf("bench-%05d", i), AgentID: "bench", CallBudget: 1, TimeLimit: time.Hour,
				})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, err
	}
	return func(ctx context.Context, worker int) error {
		p, err := st.Governance().List(ctx, store.ListFilter{After: "bench-05000", Limit: 100})
		if err == nil && len(p.Items) != 100 {
			err = fmt.Errorf("list returned %d items", len(p.Items))
		}
		return err
	}, nil
}

var benchSpec = spec{
	name: "bench",
	about: `Measures the fsync rate F of DIR, then Use (1 and N callers), a message
append at 10 and at 10,000 messages of history, get by id and a list page
(100 of 10,000) of governed sessions, and agent sessions (ADK's model):
create, event append (1 caller, and 4 callers on sessions of their own: group
commit puts their appends in one fsync), the last 100 of 1,000 events, a
list page (100 of 1,000); prints ops/s, p50, p99 and the ratio to F. On
SQLite each scenario gets a temporary database in DIR; the database of --db is
not touched and its directory is the default DIR. With a postgres:// --db,
each scenario runs in a temporary schema of that database, dropped at the
end (--sync FULL is synchronous_commit=on, NORMAL is off), and F is the
fsync rate of DIR (default: the system's temporary directory), meaningful
when the server's data is on that disk.`,
	examples: []string{"sessionctl bench --dir /var/lib/agent --duration 5s",
		"sessionctl --db postgres://localhost/agents bench --duration 5s"},
}

// runBench measures the store on the user's disk, like pgbench or
// redis-benchmark: first the fsync rate F of the directory, then each
// scenario on a temporary database in that directory.
func runBench(ctx context.Context, g *globals, args []string) error {
	o := benchOptions{}
	sp := benchSpec
	fs := g.newFlags(sp)
	fs.StringVar(&o.dir, "dir", "", "measure the disk of directory `DIR` (default: the directory of --db)")
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "time per scenario")
	fs.IntVar(&o.callers, "callers", 32, "concurrent callers for the contended scenarios")
	fs.StringVar(&o.sync, "sync", "FULL", "synchronous level: FULL or NORMAL")
	fs.BoolVar(&o.json, "json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	if o.duration <= 0 || o.callers < 1 {
		return g.usageErr(sp.name, "want a positive --duration and --callers")
	}
	syncLevel := sqlstore.Synchronous(strings.ToUpper(o.sync))
	if syncLevel != sqlstore.SyncFull && syncLevel != sqlstore.SyncNormal {
		return g.usageErr(sp.name, "--sync must be FULL or NORMAL")
	}
	if o.dir == "" && g.isPG() {
		o.dir = os.TempDir()
	}
	if o.dir == "" {
		o.dir = filepath.Dir(g.db)
	}
	open := openSQLiteBench(syncLevel)
	if g.isPG() {
		open = openPGBench(g.db, syncLevel)
	}
	rep, err := bench(ctx, &o, syncLevel, open, progressFor(g.stderr, o.json))
	if err != nil {
		fmt.Fprintf(g.stderr, "sessionctl bench: %v\n", err)
		return exitStatus(exitError)
	}
	if o.json {
		enc := json.NewEncoder(rawWriter(g.stdout))
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return exitStatus(exitError)
		}
		return nil
	}
	printBench(g.stdout, rep)
	return nil
}

// benchOpener opens a fresh store for scenario i; close closes it and
// removes what it created.
type benchOpener struct {
	backend string
	open    func(ctx context.Context, tmp string, i int) (st store.Store, close func() error, err error)
}

func openSQLiteBench(syncLevel sqlstore.Synchronous) benchOpener {
	return benchOpener{backend: "sqlite", open: func(ctx context.Context, tmp string, i int) (store.Store, func() error, error) {
		st, err := sqlstore.Open(ctx, filepath.Join(tmp, fmt.Sprintf("bench-%d.db", i)), sqlstore.WithSynchronous(syncLevel))
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}}
}

// openPGBench opens each scenario's store in a schema of its own of the
// database at dbURL, with synchronous_commit on (FULL) or off (NORMAL);
// closing drops the schema.
func openPGBench(dbURL string, syncLevel sqlstore.Synchronous) benchOpener {
	commit := "on"
	if syncLevel == sqlstore.SyncNormal {
		commit = "off"
	}
	return benchOpener{backend: "postgres", open: func(ctx context.Context, _ string, i int) (store.Store, func() error, error) {
		var b [6]byte
		rand.Read(b[:])
		schema := fmt.Sprintf("sessionctl_bench_%d_%s", i, hex.EncodeToString(b[:]))
		admin, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return nil, nil, err
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			return nil, nil, err
		}
		drop := func() error {
			c, err := pgx.Connect(context.Background(), dbURL)
			if err != nil {
				return err
			}
			defer c.Close(context.Background())
			_, err = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			return err
		}
		u, err := withURLParams(dbURL, map[string]string{"search_path": schema, "synchronous_commit": commit, "pool_max_conns": "40"})
		if err != nil {
			drop()
			return nil, nil, err
		}
		st, err := pgstore.Open(ctx, u)
		if err != nil {
			drop()
			return nil, nil, err
		}
		return st, func() error {
			st.Close()
			return drop()
		}, nil
	}}
}

// withURLParams adds connection parameters to a postgres:// URL or a
// key=value connection string.
func withURLParams(conn string, params map[string]string) (string, error) {
	if strings.HasPrefix(conn, "postgres://") || strings.HasPrefix(conn, "postgresql://") {
		u, err := url.Parse(conn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		for k, v := range params {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	for k, v := range params {
		conn += " " + k + "=" + v
	}
	return conn, nil
}

func bench(ctx context.Context, o *benchOptions, syncLevel sqlstore.Synchronous, opener benchOpener, progress func(string, float64)) (*benchReport, error) {
	tmp, err := os.MkdirTemp(o.dir, "sessionctl-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rep := &benchReport{Backend: opener.backend, Dir: o.dir, Synchronous: string(syncLevel)}
	progress("fsync probe", 0)
	lat, err := probeFsync(ctx, tmp, o.duration, func(f float64) { progress("fsync probe", f) })
	if err != nil {
		return nil, fmt.Errorf("fsync probe: %w", err)
	}
	rep.FsyncPerSec = float64(len(lat)) / o.duration.Seconds()
	rep.FsyncP50, rep.FsyncP99 = percentile(lat, 50), percentile(lat, 99)
	for i, sc := range benchScenarios() {
		callers := sc.callers(o)
		name := fmt.Sprintf("%s/callers=%d", sc.name, callers)
		progress(name, 0)
		st, closeStore, err := opener.open(ctx, tmp, i)
		if err != nil {
			return nil, err
		}
		op, err := sc.setup(ctx, st, callers)
		if err != nil {
			closeStore()
			return nil, fmt.Errorf("%s: setup: %w", name, err)
		}
		ops, lat, err := timeOp(ctx, callers, o.duration, op, func(f float64) { progress(name, f) })
		if cerr := closeStore(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		r := benchResult{
			Name: sc.name, Callers: callers, Ops: ops,
			OpsPerSec: float64(ops) / o.duration.Seconds(),
			P50Micros: percentile(lat, 50), P99Micros: percentile(lat, 99),
		}
		if rep.FsyncPerSec > 0 {
			r.RatioToF = r.OpsPerSec / rep.FsyncPerSec
		}
		rep.Results = append(rep.Results, r)
	}
	progress("", 1)
	return rep, nil
}

// probeFsync writes 4 KiB and fsyncs in a loop for d and returns each
// iteration's latency.
func probeFsync(ctx context.Context, dir string, d time.Duration, tick func(float64)) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, 0); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
		if len(lat)%64 == 0 {
			tick(float64(time.Since(start)) / float64(d))
		}
	}
	return lat, ctx.Err()
}

// timeOp runs op from callers goroutines for d and returns the number of
// operations and their latencies.
func timeOp(ctx context.Context, callers int, d time.Duration, op func(context.Context, int) error, tick func(float64)) (int64, []time.Duration, error) {
	var (
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range callers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := op(ctx, w); err != nil {
					mu.Lock()
					firstErr = cmpOr(firstErr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
				if w == 0 && len(mine)%32 == 0 {
					tick(float64(time.Since(start)) / float64(d))
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return int64(len(all)), all, firstErr
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// percentile returns the p-th percentile of lat in microseconds (lat is
// sorted in place).
func percentile(lat []time.Duration, p int) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	i := min(len(lat)-1, len(lat)*p/100)
	return float64(lat[i].Nanoseconds()) / 1000
}

func printBench(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "%s, directory %s, synchronous=%s\n", rep.Backend, rep.Dir, rep.Synchronous)
	fmt.Fprintf(w, "fsync probe (4 KiB write + fsync): F = %.0f/s, p50 %.0f µs, p99 %.0f µs\n\n",
		rep.FsyncPerSec, rep.FsyncP50, rep.FsyncP99)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCALLERS\tOPS/S\tP50 µs\tP99 µs\tOPS/F\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", r.Name, r.Callers, r.OpsPerSec, r.P50Micros, r.P99Micros, r.RatioToF)
	}
	tw.Flush()
}

// progressFor returns a progress reporter: a one-line bar on w when w is a
// terminal and the output is for people, otherwise nothing.
func progressFor(w io.Writer, quiet bool) func(string, float64) {
	f, ok := w.(*os.File)
	if quiet || !ok {
		return func(string, float64) {}
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func(string, float64) {}
	}
	var mu sync.Mutex
	return func(name string, frac float64) {
		mu.Lock()
		defer mu.Unlock()
		if name == "" {
			fmt.Fprint(w, "\r\033[K")
			return
		}
		frac = min(max(frac, 0), 1)
		const width = 30
		n := int(frac * width)
		fmt.Fprintf(w, "\r\033[K%-28s [%s%s] %3.0f%%", name, strings.Repeat("#", n), strings.Repeat(".", width-n), frac*100)
	}
}
