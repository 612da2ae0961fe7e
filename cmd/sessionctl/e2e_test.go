package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var builtBinary struct {
	once sync.Once
	dir  string
	path string
	out  []byte
	err  error
}

// buildBinary builds sessionctl (once per test process: the tests that run
// it only run it, each on a database of its own) into a temporary
// directory, removed by TestMain.
func buildBinary(t *testing.T) string {
	t.Helper()
	builtBinary.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if builtBinary.dir, builtBinary.err = os.MkdirTemp("", "sessionctl-bin-"); builtBinary.err != nil {
			return
		}
		builtBinary.path = filepath.Join(builtBinary.dir, "sessionctl")
		cmd := exec.Command(goBin, "build", "-o", builtBinary.path, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		builtBinary.out, builtBinary.err = cmd.CombinedOutput()
	})
	if builtBinary.err != nil {
		t.Fatalf("go build: %v\n%s", builtBinary.err, builtBinary.out)
	}
	return builtBinary.path
}

// execResult is one run of the built binary.
type execResult struct {
	code           int
	stdout, stderr string
}

func execCLI(t *testing.T, bin, db string, args ...string) execResult {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
	cmd.Env = append(os.Environ(), "SESSIONCTL_DB=")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Errorf("run %v: %v", args, err)
		code = -1
	}
	return execResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestEndToEnd builds the binary, creates a governed session and runs four
// concurrent streams of "sessionctl use" processes against one file: the
// budget must be exact, and every exit status must match its refusal.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	db := filepath.Join(t.TempDir(), "e2e.db")
	concurrentUses(t, bin, db)
	expiredAndRefusals(t, bin, db)
	// The README's run command works on a fresh directory.
	demoDB := filepath.Join(t.TempDir(), "sessions.db")
	r := execCLI(t, bin, demoDB, "demo")
	if r.code != 0 || strings.Count(r.stdout, "stored durably") != 4 {
		t.Errorf("demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = execCLI(t, bin, demoDB, "doctor"); r.code != 0 {
		t.Errorf("doctor after demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = execCLI(t, bin, filepath.Join(t.TempDir(), "missing.db"), "list")
	if r.code != exitError || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("list on a missing file: exit %d, %q", r.code, r.stderr)
	}
}

// TestEndToEndPostgres is TestEndToEnd on PostgreSQL: four concurrent
// streams of "sessionctl use" processes on one schema spend the budget
// exactly, and every refusal has its exit status.
func TestEndToEndPostgres(t *testing.T) {
	t.Parallel()
	db := newPGEnv(t).db
	bin := buildBinary(t)
	r := execCLI(t, bin, db, "list")
	if r.code != exitError || !strings.Contains(r.stderr, "has no session store in schema") {
		t.Errorf("list on an empty schema: exit %d, %q", r.code, r.stderr)
	}
	concurrentUses(t, bin, db)
	expiredAndRefusals(t, bin, db)
	r = execCLI(t, bin, db, "demo")
	if r.code != 0 || strings.Count(r.stdout, "stored durably") != 4 {
		t.Errorf("demo: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// concurrentUses creates a governed session with a budget of 10 and runs
// four concurrent streams of six "sessionctl use" processes on it: exactly
// 10 are allowed, each reporting a distinct count, the rest refused.
func concurrentUses(t *testing.T, bin, db string) {
	t.Helper()
	const budget, workers, perWorker = 10, 4, 6
	r := execCLI(t, bin, db, "create", "--id", "e2e", "--agent", "agent-1", "--tool", "read_file", "--budget", strconv.Itoa(budget))
	if r.code != 0 || r.stdout != "e2e\n" {
		t.Fatalf("create: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	var mu sync.Mutex
	codes := map[int]int{}
	var made []int
	allowed := regexp.MustCompile(`^allowed 1 call: (\d+) of 10 calls made, \d+ remaining\n$`)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWorker {
				r := execCLI(t, bin, db, "use", "e2e", "--agent", "agent-1", "--tool", "read_file")
				mu.Lock()
				codes[r.code]++
				if r.code == 0 {
					m := allowed.FindStringSubmatch(r.stdout)
					if m == nil {
						t.Errorf("allowed use printed %q", r.stdout)
					} else {
						n, _ := strconv.Atoi(m[1])
						made = append(made, n)
					}
				} else if r.stderr != "sessionctl use: refused (budget): session budget exceeded: 10 of 10 calls made, 1 requested\n" {
					t.Errorf("refused use (exit %d) printed %q", r.code, r.stderr)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes[exitOK] != budget || codes[exitBudget] != workers*perWorker-budget || len(codes) != 2 {
		t.Fatalf("exit statuses %v: want %d × 0 and %d × %d", codes, budget, workers*perWorker-budget, exitBudget)
	}
	slices.Sort(made)
	for i, n := range made {
		if n != i+1 {
			t.Fatalf("allowed uses reported calls made %v: want each of 1..%d once", made, budget)
		}
	}
	r = execCLI(t, bin, db, "show", "e2e", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"calls_made": 10,`) || !strings.Contains(r.stdout, `"remaining_budget": 0,`) {
		t.Fatalf("show after the race: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

}

// expiredAndRefusals: every refusal kind has its exit status in the real
// binary, on the database where concurrentUses ran.
func expiredAndRefusals(t *testing.T, bin, db string) {
	t.Helper()
	// Every refusal kind has its exit status in the real binary too. The
	// expired session is imported with a creation time long past, so that
	// no test waits for a clock.
	expired := filepath.Join(t.TempDir(), "expired.json")
	doc := fmt.Sprintf(`{"format": "sessionctl-export", "version": 1, "governed_sessions": [{
		"id": "old", "agent_id": "agent-1", "status": "active", "calls_made": 0, "call_budget": 5,
		"authorized_tools": ["read_file"], "sensitivity": "internal", "rate_window_ms": 60000,
		"rate_window_start": "2020-01-01T00:00:00.000Z", "time_limit_ms": 60000,
		"created_at": "2020-01-01T00:00:00.000Z", "expires_at": "2020-01-01T00:01:00.000Z"}]}`)
	if err := os.WriteFile(expired, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"import", expired}, exitOK, ""},
		{[]string{"create", "--id", "rl", "--agent", "agent-1", "--tool", "read_file", "--budget", "5", "--rate-limit", "1", "--rate-window", "1h"}, exitOK, ""},
		{[]string{"use", "rl", "--tool", "read_file"}, exitOK, ""},
		{[]string{"use", "rl", "--tool", "read_file"}, exitRate, "refused (rate)"},
		{[]string{"use", "rl", "--tool", "write_file"}, exitTool, "refused (tool)"},
		{[]string{"use", "rl", "--agent", "agent-2", "--tool", "read_file"}, exitAgent, "refused (agent)"},
		{[]string{"use", "nobody", "--tool", "read_file"}, exitNotFound, "refused (not-found)"},
		{[]string{"use", "old", "--tool", "read_file"}, exitExpired, "refused (expired)"},
		{[]string{"use", "e2e", "--tool", "read_file", "--request-id", "q"}, exitBudget, "refused (budget)"},
		{[]string{"use", "e2e", "--tool", "other", "--request-id", "q"}, exitConflict, "refused (conflict)"},
		{[]string{"close", "rl"}, exitOK, ""},
		{[]string{"use", "rl", "--tool", "read_file"}, exitClosed, "refused (closed)"},
		{[]string{"use", "rl", "--bogus"}, exitUsage, "unknown flag --bogus"},
		{[]string{"show"}, exitUsage, "missing ID"},
		{[]string{"doctor"}, exitOK, ""},
	}
	for _, s := range steps {
		r := execCLI(t, bin, db, s.args...)
		if r.code != s.code || !strings.Contains(r.stderr, s.stderr) || (s.stderr != "" && strings.Count(r.stderr, "\n") != 1) {
			t.Errorf("sessionctl %s: exit %d, stderr %q; want exit %d with %q", strings.Join(s.args, " "), r.code, r.stderr, s.code, s.stderr)
		}
	}
}
