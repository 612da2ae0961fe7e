package main

// Helper processes: the test binary re-runs itself with a role, to hold a
// database from another process (demo --fresh must see it), or to run
// sessionctl in a process a test can kill (import after kill -9).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	envRole     = "SESSIONCTL_TEST_ROLE"
	envRoleArgs = "SESSIONCTL_TEST_ROLE_ARGS"
)

func init() {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(envRoleArgs)), &args); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(100)
	}
	os.Exit(runRole(role, args))
}

// runRole runs a helper role and returns its exit status. Holding roles
// print "ready" once they hold, and hold until stdin closes.
func runRole(role string, args []string) int {
	ctx := context.Background()
	switch role {
	case "hold-open":
		// A store opened and left idle: it has touched the database only
		// while opening.
		g := &globals{db: args[0]}
		st, err := g.openExisting(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 100
		}
		defer st.Close()
	case "hold-lock":
		f, err := os.OpenFile(args[0]+"-writer.lock", os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 100
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 100
		}
	case "sessionctl":
		// As main: an interrupt cancels the context (follow ends with 0).
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return run(ctx, args, os.Stdout, os.Stderr)
	default:
		fmt.Fprintln(os.Stderr, "helper: unknown role", role)
		return 100
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperProc is a running helper.
type helperProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startHelper starts the test binary in role with args; with wantReady it
// waits for the role's "ready" line.
func startHelper(t testing.TB, role string, wantReady bool, args ...string) *helperProc {
	t.Helper()
	a, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envRoleArgs+"="+string(a), "SESSIONCTL_DB=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if wantReady {
		line := make(chan string, 1)
		go func() {
			l, _ := h.out.ReadString('\n')
			line <- l
		}()
		select {
		case l := <-line:
			if l != "ready\n" {
				t.Fatalf("helper %s: %q, stderr: %s", role, l, errb.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("helper %s not ready; stderr: %s", role, errb.String())
		}
	}
	return h
}

// stop ends a holding helper and waits for it.
func (h *helperProc) stop(t *testing.T) {
	t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("helper: %v", err)
	}
}
