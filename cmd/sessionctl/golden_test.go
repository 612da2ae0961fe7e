package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fixture creates governed sessions in every state at the env's fixed
// clock: t-active (1 of 5 calls, rate 2/1m), t-closed, t-expired (past its
// 1m limit) and t-spent (2 of 2 calls).
func (e *testEnv) fixture() {
	t := e.t
	t.Helper()
	e.run("create", "--id", "t-active", "--agent", "a1", "--tool", "read_file,list_dir", "--budget", "5",
		"--rate-limit", "2", "--rate-window", "1m", "--intent", "summarize the repository",
		"--delegation", "root", "--delegation", "planner", "--credential", "gh-token", "--sensitivity", "confidential").want(t, 0)
	e.run("use", "t-active", "--agent", "a1", "--tool", "read_file").want(t, 0)
	e.run("create", "--id", "t-closed", "--agent", "a1", "--tool", "read_file", "--budget", "1").want(t, 0)
	e.run("close", "t-closed").want(t, 0)
	e.run("create", "--id", "t-expired", "--agent", "a2", "--tool", "*", "--budget", "3", "--time-limit", "1m").want(t, 0)
	e.run("create", "--id", "t-spent", "--agent", "a2", "--tool", "*", "--budget", "2", "--time-limit", "2h").want(t, 0)
	e.run("use", "t-spent", "--tool", "search", "--tool", "fetch").want(t, 0)
	e.clock.Advance(2 * time.Minute)
}

func TestGoldenInspect(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGoldenInspect)
}

func testGoldenInspect(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.fixture()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"list", []string{"list"}},
		{"list_json", []string{"list", "--json"}},
		{"list_active_a1", []string{"list", "--status", "active", "--agent", "a1"}},
		{"list_expired_json", []string{"list", "--status=expired", "--json"}},
		{"show", []string{"show", "t-active"}},
		{"show_json", []string{"show", "t-active", "--json"}},
		{"export", []string{"export", "t-active", "t-spent"}},
		{"create_json", []string{"create", "--id", "t-new", "--agent", "a3", "--tool", "x", "--budget", "9", "--json"}},
		{"close_agent", []string{"close-agent", "a1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(c.args...).want(t, 0)
			golden(t, c.name, e.normalize(r.stdout+r.stderr))
		})
	}
}

// TestGoldenUse records every use outcome with its exit status.
func TestGoldenUse(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGoldenUse)
}

func testGoldenUse(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.fixture()
	var b strings.Builder
	for _, args := range [][]string{
		{"use", "t-active", "--agent", "a1", "--tool", "list_dir"},
		{"use", "t-active", "--agent", "a1", "--tool", "read_file", "--tool", "list_dir"},
		{"use", "t-active", "--agent", "a1", "--tool", "delete_file"},
		{"use", "t-active", "--agent", "a2", "--tool", "read_file"},
		{"use", "t-spent", "--tool", "search"},
		{"use", "t-closed", "--tool", "read_file"},
		{"use", "t-expired", "--tool", "read_file"},
		{"use", "missing", "--tool", "read_file"},
		{"use", "t-active", "--tool", "read_file", "--request-id", "r1"},
		{"use", "t-active", "--tool", "list_dir", "--request-id", "r1"},
		{"use", "t-active", "--tool", "read_file", "--request-id", "r1", "--json"},
		{"use", "t-active"},
	} {
		r := e.run(args...)
		fmt.Fprintf(&b, "$ sessionctl %s\n%s%s[exit %d]\n\n", strings.Join(args, " "), r.stdout, r.stderr, r.code)
	}
	golden(t, "use", e.normalize(b.String()))
}

func TestGoldenHelp(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	golden(t, "help", e.run("help").want(t, 0).stdout)
	golden(t, "help_exit", e.run("help", "exit").want(t, 0).stdout)
	for _, name := range []string{"use", "create", "list"} {
		golden(t, "help_"+name, e.run(name, "--help").want(t, 0).stdout)
	}
}
