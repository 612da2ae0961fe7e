package adk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/adk"
)

// Environment variables that turn the test binary into a helper process.
const (
	envRole = "ADKTEST_HELPER_ROLE"
	envPath = "ADKTEST_HELPER_PATH"
	envArgs = "ADKTEST_HELPER_ARGS"
)

// helperRoles are the bodies a second OS process can run: they use svc and
// write a JSON report to out.
var helperRoles = map[string]func(ctx context.Context, svc *adk.Service, args []string, out io.Writer) error{}

// runHelperProcess turns the test binary into a helper when the parent
// asked for one, and exits; otherwise it returns at once.
func runHelperProcess() {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	fn := helperRoles[role]
	if fn == nil {
		fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
		os.Exit(3)
	}
	ctx := context.Background()
	svc, err := adk.Open(ctx, os.Getenv(envPath))
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper open: %v\n", err)
		os.Exit(4)
	}
	out := bufio.NewWriter(os.Stdout)
	err = fn(ctx, svc, strings.Split(os.Getenv(envArgs), "\x1f"), out)
	out.Flush()
	svc.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "helper %s: %v\n", role, err)
		os.Exit(5)
	}
	os.Exit(0)
}

// spawnHelper starts the test binary as role on the database at path and
// returns a function that waits for it and decodes its report into v.
func spawnHelper(t *testing.T, path, role string, v any, args ...string) (wait func() error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRole+"="+role, envPath+"="+path, envArgs+"="+strings.Join(args, "\x1f"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var once sync.Once
	var werr error
	return func() error {
		once.Do(func() {
			dec := json.NewDecoder(stdout)
			derr := dec.Decode(v)
			werr = cmd.Wait()
			if werr == nil && derr != nil {
				werr = fmt.Errorf("helper report: %w", derr)
			}
			if werr != nil {
				werr = fmt.Errorf("helper %s: %w; stderr: %s", role, werr, stderr.String())
			}
		})
		return werr
	}
}

// writeJSON writes v as one JSON line.
func writeJSON(out io.Writer, v any) error {
	return json.NewEncoder(out).Encode(v)
}
