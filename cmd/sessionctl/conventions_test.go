package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runBare runs sessionctl with exactly args (no --db put in front).
func (e *testEnv) runBare(args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, now: e.clock.Now}
	code := g.run(context.Background(), args)
	return result{args: args, code: code, stdout: out.String(), stderr: errb.String()}
}

// TestGlobalFlagsAnywhere: --db works before or after the command and
// its arguments, as --db PATH or --db=PATH; after "--" it is an argument.
func TestGlobalFlagsAnywhere(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.run("create", "--id", "s1", "--agent", "a", "--budget", "1").want(t, 0)
	for _, args := range [][]string{
		{"--db", e.db, "show", "s1"},
		{"show", "s1", "--db", e.db},
		{"show", "--db=" + e.db, "s1"},
		{"show", "--json", "s1", "-db", e.db},
	} {
		if r := e.runBare(args...).want(t, 0); !strings.Contains(r.stdout, "s1") {
			t.Errorf("%q: %s", args, r.stdout)
		}
	}
	e.runBare("show", "--db", e.db, "--", "--db").want(t, exitNotFound).oneLineErr(t, "session --db: session not found") // after --, the ID
}

// TestVersionFlag: --version anywhere prints what the version command
// prints.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	want := e.run("version").want(t, 0).stdout
	for _, args := range [][]string{{"--version"}, {"list", "--version"}} {
		if r := e.run(args...).want(t, 0); r.stdout != want {
			t.Errorf("%q: %q, want %q", args, r.stdout, want)
		}
	}
	if !strings.Contains(want, "schema version") || !strings.Contains(want, "SQLite") || !strings.Contains(want, "go1.") {
		t.Errorf("version: %q", want)
	}
}

// TestDidYouMean: a mistyped command or flag is named with the closest
// real one; an unrelated word gets no suggestion.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lsit"}, `unknown command "lsit" (did you mean list?)`},
		{[]string{"agnets"}, `(did you mean agents?)`},
		{[]string{"messges", "c1"}, `(did you mean messages?)`},
		{[]string{"help", "shwo"}, `(did you mean show?)`},
		{[]string{"list", "--jsno"}, `unknown flag --jsno (did you mean --json?)`},
		{[]string{"messages", "c1", "--folow"}, `(did you mean --follow?)`},
		{[]string{"completion", "zhs"}, `(did you mean zsh?)`},
	} {
		e.run(c.args...).want(t, exitUsage).oneLineErr(t, c.want)
	}
	if r := e.run("frobnicate").want(t, exitUsage); strings.Contains(r.stderr, "did you mean") {
		t.Errorf("a suggestion for an unrelated word: %q", r.stderr)
	}
}

// shellFor returns the path of a shell to run a completion script with. A
// missing shell skips the test, except in CI (CI=true), which installs
// bash, zsh and fish (.ci/run).
func shellFor(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no %s to run its completion script: CI installs it (.ci/run)", name)
		}
		t.Skipf("no %s to run its completion script", name)
	}
	return path
}
