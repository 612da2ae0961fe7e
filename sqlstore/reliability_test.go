package sqlstore_test

// Shared helpers of the reliability tests (crash trials, storage faults,
// fault-point sweep, migrations, damaged files, soak): helper processes,
// state dumps, integrity checks and fault plans.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// Environment of a reliability helper process (the test binary started
// again by a test of this file).
const (
	envRelRole = "SQLSTORE_RELIABILITY_ROLE"
	envRelArgs = "SQLSTORE_RELIABILITY_ARGS" // JSON array of strings
)

// relRole is the body of a helper process; it writes its report to out
// (one line per event) and returns an error to exit non-zero.
type relRole func(ctx context.Context, args []string, out *lineWriter) error

// relRoles is filled by the init functions of the reliability test files.
var relRoles = map[string]relRole{}

// runRelRole runs in init, before TestMain: when the process was started
// as a reliability helper, it runs the role and exits.
func runRelRole() {
	name := os.Getenv(envRelRole)
	if name == "" {
		return
	}
	fn := relRoles[name]
	if fn == nil {
		fmt.Fprintf(os.Stderr, "unknown reliability role %q\n", name)
		os.Exit(3)
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(envRelArgs)), &args); err != nil {
		fmt.Fprintf(os.Stderr, "reliability role args: %v\n", err)
		os.Exit(3)
	}
	out := &lineWriter{w: os.Stdout}
	if err := fn(context.Background(), args, out); err != nil {
		fmt.Fprintf(os.Stderr, "reliability role %s: %v\n", name, err)
		os.Exit(5)
	}
	os.Exit(0)
}

// lineWriter writes whole lines straight to the pipe (no buffering): once
// Line returns, the line has left the process and survives its SIGKILL.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Line writes one line.
func (l *lineWriter) Line(format string, args ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := fmt.Fprintf(l.w, format+"\n", args...)
	return err
}

// JSON writes v as one JSON line.
func (l *lineWriter) JSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return l.Line("%s", b)
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	lines chan string // closed when stdout ends
	errb  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startHelper starts the test binary as reliability helper role. The
// process is killed at test end if still running.
func startHelper(t testing.TB, role string, args ...string) *helper {
	t.Helper()
	return startHelperCmd(t, nil, role, args...)
}

// startHelperCmd is startHelper with a prefix command (such as unshare)
// that execs the test binary; prefix may be nil.
func startHelperCmd(t testing.TB, prefix []string, role string, args ...string) *helper {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	argv := append(slices.Clone(prefix), os.Args[0], "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envRelRole+"="+role, envRelArgs+"="+string(a))
	h := &helper{cmd: cmd, lines: make(chan string, 1<<16), errb: &syncBuffer{}}
	cmd.Stderr = h.errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper %s: %v", role, err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	return h
}

// wait drains the helper's output and waits for it to exit.
func (h *helper) wait() ([]string, error) {
	var out []string
	for l := range h.lines {
		out = append(out, l)
	}
	err := h.cmd.Wait()
	if err != nil {
		err = fmt.Errorf("%w; stderr: %s", err, strings.TrimSpace(h.errb.String()))
	}
	return out, err
}

// expectLine waits for the helper to print want (skipping other lines,
// which are returned) or fails.
func (h *helper) expectLine(t testing.TB, want string, timeout time.Duration) []string {
	t.Helper()
	var seen []string
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				h.cmd.Wait()
				t.Fatalf("helper ended before printing %q; stderr: %s", want, h.errb.String())
			}
			if l == want {
				return seen
			}
			seen = append(seen, l)
		case <-deadline:
			t.Fatalf("helper did not print %q within %v", want, timeout)
		}
	}
}

// openSQL opens a plain connection pool on path for inspection, outside
// the store. ro opens it read-only.
func openSQL(t testing.TB, path string, ro bool) *sql.DB {
	t.Helper()
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)"
	if ro {
		dsn += "&mode=ro"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// integrityCheck fails unless PRAGMA integrity_check says ok.
func integrityCheck(t testing.TB, path string) {
	t.Helper()
	db := openSQL(t, path, false)
	defer db.Close()
	var res []string
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		res = append(res, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0] != "ok" {
		t.Fatalf("integrity_check: %q", res)
	}
	var fk int
	if err := db.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if fk != 0 {
		t.Fatalf("foreign_key_check found %d violations", fk)
	}
}

// dumpState returns every row of every table of the database at path,
// in a canonical text form: two dumps are equal iff the data is, except
// that a change-feed epoch (a random token drawn anew by every run) is
// dumped as set or 0.
func dumpState(t testing.TB, path string) string {
	t.Helper()
	db := openSQL(t, path, true)
	defer db.Close()
	return dumpDB(t, db)
}

func dumpDB(t testing.TB, db *sql.DB) string {
	t.Helper()
	var tables []string
	rows, err := db.Query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatalf("dump: %v", err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	var b strings.Builder
	for _, tbl := range tables {
		fmt.Fprintf(&b, "== %s\n", tbl)
		var lines []string
		r, err := db.Query(`SELECT * FROM "` + tbl + `"`)
		if err != nil {
			t.Fatalf("dump %s: %v", tbl, err)
		}
		cols, _ := r.Columns()
		for r.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := r.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var parts []string
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				if isFeedEpoch(cols[i]) && v != int64(0) {
					v = "set" // a random token: two runs draw different ones
				}
				parts = append(parts, fmt.Sprintf("%s=%v", cols[i], v))
			}
			lines = append(lines, strings.Join(parts, " "))
		}
		if err := r.Err(); err != nil {
			t.Fatalf("dump %s: %v", tbl, err)
		}
		r.Close()
		slices.Sort(lines) // row order is not part of the state
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// copyFile copies a closed database file (never a live one).
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dirFiles returns the contents of every file in dir, by name.
func dirFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = string(b)
	}
	return m
}

// newClockStore opens a store on path with a manual clock.
func openWithClock(t testing.TB, path string, clock *storetest.Clock, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path, append([]sqlstore.Option{sqlstore.WithClock(clock.Now)}, opts...)...)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// longSession is a session that outlives any test on the real clock.
func longSession(id string, budget int64) store.CreateRequest {
	return store.CreateRequest{
		ID:              id,
		AgentID:         "agent-1",
		AuthorizedTools: []string{"*"},
		CallBudget:      budget,
		TimeLimit:       100 * 365 * 24 * time.Hour,
	}
}

// envInt reads a positive integer from the environment, else def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// envDuration reads a duration from the environment, else def.
func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// faultPlan decides which writer statements fail. It is armed at the next
// BEGIN IMMEDIATE after arm() and counts statements from there (BEGIN is
// statement 1): statement k fails, and with persistent every later one
// too, until disarm().
type faultPlan struct {
	mu         sync.Mutex
	pending    bool
	armed      bool
	k          int
	persistent bool
	err        error
	n          int      // statements seen since armed
	seen       []string // statements seen since armed
	fired      int      // faults injected by this plan
}

// faultsInjected counts faults injected in this test binary, for the
// closing report.
var faultsInjected atomic.Int64

func (p *faultPlan) hook(query string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending && query == "BEGIN IMMEDIATE" {
		p.pending, p.armed, p.n, p.seen = false, true, 0, nil
	}
	if !p.armed {
		return nil
	}
	p.n++
	p.seen = append(p.seen, query)
	if p.k > 0 && (p.n == p.k || (p.persistent && p.n > p.k)) {
		p.fired++
		faultsInjected.Add(1)
		return p.err
	}
	return nil
}

// arm sets the plan for the next transaction. k = 0 only counts.
func (p *faultPlan) arm(k int, persistent bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending, p.armed, p.k, p.persistent, p.err, p.n, p.seen, p.fired = true, false, k, persistent, err, 0, nil, 0
}

func (p *faultPlan) disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending, p.armed = false, false
}

func (p *faultPlan) count() (int, []string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n, slices.Clone(p.seen), p.fired
}

// errInjectedIO stands for an I/O failure the driver might report.
var errInjectedIO = errors.New("injected I/O error")

// registerRelRole adds a helper role. Files call it in a package-level
// variable initializer (var _ = registerRelRole(...)): all of those run
// before any init function, so the table is complete when init below
// decides whether this process is a helper.
func registerRelRole(name string, fn relRole) bool {
	relRoles[name] = fn
	return true
}

func init() { runRelRole() }

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// isFeedEpoch reports whether a column holds a change-feed epoch
// (migration 7): an opaque random number.
func isFeedEpoch(col string) bool { return col == "epoch" || strings.HasSuffix(col, "_epoch") }
