package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Environment variables that turn the test binary into a helper process.
const (
	envRole = "STORETEST_HELPER_ROLE"
	envLoc  = "STORETEST_HELPER_LOC"
	envArgs = "STORETEST_HELPER_ARGS"
	// envClock is the parent's clock minus the wall clock at spawn (ns):
	// the helper's store runs on the wall clock shifted by it, so that
	// both processes agree on the time (turn leases are decided with each
	// store's clock) while the helper's still moves.
	envClock = "STORETEST_HELPER_CLOCK_OFFSET"
	// envLease is the turn lease of the helper's store (ns), when set.
	envLease = "STORETEST_HELPER_TURN_LEASE"
)

// helperRole is the body of a second OS process: it runs against st and
// writes its report (JSON lines) to out. args come from the parent.
type helperRole func(ctx context.Context, st store.Store, args []string, out io.Writer) error

var (
	rolesMu sync.Mutex
	roles   = map[string]helperRole{}
)

// registerRole makes a helper role available to spawn. Facet test files
// call it from init.
func registerRole(name string, fn helperRole) {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	roles[name] = fn
}

// RunHelperProcess turns the current process into a suite helper when the
// parent test asked for one, and exits; otherwise it returns at once. Call
// it first thing in TestMain.
func RunHelperProcess(h Harness) {
	name := os.Getenv(envRole)
	if name == "" {
		return
	}
	h, err := encryptedHelper(h) // encryption.go
	if err != nil {
		fmt.Fprintf(os.Stderr, "storetest: helper keyring: %v\n", err)
		os.Exit(4)
	}
	rolesMu.Lock()
	fn := roles[name]
	rolesMu.Unlock()
	if fn == nil {
		fmt.Fprintf(os.Stderr, "storetest: unknown helper role %q\n", name)
		os.Exit(3)
	}
	var args []string
	if a := os.Getenv(envArgs); a != "" {
		args = strings.Split(a, "\x1f")
	}
	ctx := context.Background()
	offset, _ := strconv.ParseInt(os.Getenv(envClock), 10, 64)
	clock := func() time.Time { return time.Now().Add(time.Duration(offset)) }
	var st store.Store
	if lease, _ := strconv.ParseInt(os.Getenv(envLease), 10, 64); lease > 0 && h.OpenWith != nil {
		st, err = h.OpenWith(ctx, os.Getenv(envLoc), clock, Options{TurnLease: time.Duration(lease)})
	} else {
		st, err = h.Open(ctx, os.Getenv(envLoc), clock)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "storetest: helper open: %v\n", err)
		os.Exit(4)
	}
	out := bufio.NewWriter(os.Stdout)
	err = fn(ctx, st, args, out)
	out.Flush()
	st.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "storetest: helper %s: %v\n", name, err)
		os.Exit(5)
	}
	os.Exit(0)
}

// spawn starts the test binary as helper role on the env's database. The
// process is killed at test end if still running. Its store's clock is the
// wall clock shifted to agree with the env's clock at spawn.
func (e *env) spawn(role string, args ...string) (*exec.Cmd, io.ReadCloser) {
	e.t.Helper()
	return e.spawnWith(0, role, args...)
}

// spawnWith is spawn with the turn lease of the helper's store (0: the
// default).
func (e *env) spawnWith(lease time.Duration, role string, args ...string) (*exec.Cmd, io.ReadCloser) {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envRole+"="+role,
		envLoc+"="+e.loc,
		envArgs+"="+strings.Join(args, "\x1f"),
		envClock+"="+strconv.FormatInt(int64(e.clock.Now().Sub(time.Now())), 10),
		envLease+"="+strconv.FormatInt(int64(lease), 10),
		envKeyringDir+"="+e.h.keyringDir,
		envKeyringKEK+"="+e.h.keyringKEK,
	)
	cmd.Stderr = &testWriter{t: e.t, prefix: role + ": "}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start helper process: %v", err)
	}
	// Never leave a helper behind; the test itself waits for it.
	e.t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, stdout
}

// report writes one JSON line of a helper's report.
func report(out io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
}

type testWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
