package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
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
	if suggest("x", []string{"list", "show"}) != "" || suggest("sho", []string{"list", "show"}) != "show" || editDistance("kitten", "sitting") != 3 {
		t.Error("suggest or editDistance")
	}
}

// TestCompletion: the scripts name every command and its flags and
// actions, and the bash one parses and completes.
func TestCompletion(t *testing.T) {
	e := newTestEnv(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out := e.run("completion", shell).want(t, 0).stdout
		for _, c := range commands() {
			if !strings.Contains(out, c.name) {
				t.Errorf("%s completion lacks command %s", shell, c.name)
			}
		}
		for _, w := range []string{"follow", "dry-run", "events", "verify"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s completion lacks %s", shell, w)
			}
		}
	}
	e.run("completion").want(t, exitUsage)

	// Each script, run by its shell: a subcommand's action, a flag after
	// --db and an argument, a command. Outside an interactive shell zsh's
	// completion widgets do not run: _describe and compadd are stood in for
	// by functions that print what the script hands them (zsh then filters
	// by prefix).
	zshCommands := fmt.Sprintf("commands %d", len(commands())+1) // and help
	for _, c := range []struct {
		shell, flag, before, after string
		ok                         func(out string) bool
	}{
		{"bash", "--norc", "",
			"COMP_WORDS=(sessionctl agents sh); COMP_CWORD=2; _sessionctl; echo \"${COMPREPLY[*]}\"\n" +
				"COMP_WORDS=(sessionctl --db x.db messages c1 --fol); COMP_CWORD=5; _sessionctl; echo \"${COMPREPLY[*]}\"\n" +
				"COMP_WORDS=(sessionctl ag); COMP_CWORD=1; _sessionctl; echo \"${COMPREPLY[*]}\"\n",
			func(out string) bool { return out == "show\n--follow\nagents\n" }},
		{"zsh", "-f",
			"_describe() { local -a arr; arr=(\"${(@P)2}\"); print -r -- \"commands ${#arr}\"; }\n" +
				"compadd() { [[ $1 == -- ]] && shift; print -r -- \"$*\"; }\n" +
				"compdef() { print -r -- \"compdef $*\"; }\n",
			"words=(sessionctl ag); CURRENT=2; _sessionctl\n" +
				"words=(sessionctl --db x.db ag); CURRENT=4; _sessionctl\n" +
				"words=(sessionctl agents sh); CURRENT=3; _sessionctl\n" +
				"words=(sessionctl --db x.db messages c1 --fol); CURRENT=6; _sessionctl\n",
			func(out string) bool {
				l := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				return len(l) == 5 && l[0] == "compdef _sessionctl sessionctl" && l[1] == zshCommands && l[2] == zshCommands &&
					slices.Contains(strings.Fields(l[3]), "show") && slices.Contains(strings.Fields(l[4]), "--follow")
			}},
		{"fish", "--no-config", "",
			"complete -C'sessionctl ag'\ncomplete -C'sessionctl agents sh'\ncomplete -C'sessionctl --db x.db messages c1 --fol'\n",
			func(out string) bool {
				return strings.HasPrefix(out, "agents\t") && strings.HasSuffix(out, "\nshow\n--follow\n")
			}},
	} {
		t.Run(c.shell, func(t *testing.T) {
			script := c.before + e.run("completion", c.shell).stdout + c.after
			out, err := exec.Command(shellFor(t, c.shell), c.flag, "-c", script).CombinedOutput()
			if err != nil || !c.ok(string(out)) {
				t.Errorf("%s completion: %v\n%s", c.shell, err, out)
			}
		})
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
