package main

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
)

// completionCases are command lines, the last word being completed, and
// the words every shell must offer for it (exactly, in any order; ""
// none, so that the shell completes file names).
var completionCases = []struct {
	words []string
	want  string
}{
	{[]string{"migrate", "u"}, "up"},
	{[]string{"completion", "z"}, "zsh"},
	{[]string{"list", "--facet", "r"}, "runtime"},
	{[]string{"--db", "x.db", "audit", "--kind", "che"}, "checkpoint"},
	{[]string{"create", "--sensitivity", "con"}, "confidential"},
	// A value after any flag that takes one is skipped (it used to be
	// only after --db: --tenant acme offered the commands).
	{[]string{"--tenant", "acme", "hold", ""}, "list release governance runtime conversations agent_sessions"},
	{[]string{"--key-file", "k", "retention", "r"}, "remove"},
	{[]string{"retention", "set", "conversations_"}, "conversations_idle"},
	{[]string{"hold", "release", "a"}, "agent_sessions"},
	{[]string{"keys", "--keyring", "dir", "n"}, "new"},
	{[]string{"show", "--ten"}, "--tenant"},
	{[]string{"--key"}, "--key-file --keyring"},
	{[]string{"--search-e"}, "--search-encrypted"},
	{[]string{"--tenant", ""}, ""},
	{[]string{"help", "hi"}, "history"},
	{[]string{"agents", "sh"}, "show"},
	{[]string{"--db", "x.db", "messages", "c1", "--fol"}, "--follow"},
	{[]string{"ag"}, "agents"},
}

// asSessionctl returns the environment of a shell whose sessionctl is
// this test binary run as the CLI (TestMain), run in an empty directory
// (file names complete to nothing).
func asSessionctl(t *testing.T) (env []string, dir string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\nSESSIONCTL_TEST_AS_MAIN=1 exec " + strconv.Quote(exe) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "sessionctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH")), t.TempDir()
}

// TestCompletionScripts drives each shell's script (issue 38): bash
// through complete -F with COMP_WORDS, zsh through _sessionctl with its
// completion builtins replaced by ones that print what they are handed,
// fish through its own complete -C. Each offers exactly the words of
// completionCases.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: three shells run the test binary as sessionctl; skipped by -short (go test and ./test.sh run it)")
	}
	e := newTestEnv(t)
	e.run("completion").want(t, exitUsage)
	env, dir := asSessionctl(t)
	// run and check take the subtest's t: a shell missing here skips
	// (or, in CI, fails) that shell's subtest alone.
	run := func(t *testing.T, shell, flag, script string) []string {
		t.Helper()
		cmd := exec.Command(shellFor(t, shell), flag, "-c", script)
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", shell, err, out)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	check := func(t *testing.T, shell string, out []string) {
		t.Helper()
		if len(out) != len(completionCases) {
			t.Fatalf("%s: %d lines for %d cases:\n%s", shell, len(out), len(completionCases), strings.Join(out, "\n"))
		}
		for i, c := range completionCases {
			got, want := strings.Fields(out[i]), strings.Fields(c.want)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s: sessionctl %s<TAB> offers %q, want %q", shell, strings.Join(c.words, " "), got, want)
			}
		}
	}
	t.Run("bash", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(e.run("completion", "bash").want(t, 0).stdout)
		b.WriteString("complete -p sessionctl | grep -q -- '-F _sessionctl' || echo 'not registered'\n")
		for _, c := range completionCases {
			b.WriteString("COMP_WORDS=(sessionctl")
			for _, w := range c.words {
				b.WriteString(" " + clitext.ShellQuote(w))
			}
			b.WriteString("); COMP_CWORD=" + strconv.Itoa(len(c.words)) + "; COMPREPLY=(); _sessionctl; echo \"${COMPREPLY[*]}\"\n")
		}
		check(t, "bash", run(t, "bash", "--norc", b.String()))
	})
	t.Run("zsh", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("_describe() { local c; for c in \"${(@P)2}\"; do print -rn -- \"${c%%:*} \"; done; print; }\n_files() { print; }\ncompdef() { :; }\n")
		b.WriteString(e.run("completion", "zsh").want(t, 0).stdout)
		for _, c := range completionCases {
			b.WriteString("words=(sessionctl")
			for _, w := range c.words {
				b.WriteString(" " + clitext.ShellQuote(w))
			}
			b.WriteString("); CURRENT=" + strconv.Itoa(len(c.words)+1) + "; _sessionctl\n")
		}
		check(t, "zsh", run(t, "zsh", "-f", b.String()))
	})
	t.Run("fish", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(e.run("completion", "fish").want(t, 0).stdout)
		for _, c := range completionCases {
			line := "sessionctl"
			for _, w := range c.words {
				line += " " + w
			}
			b.WriteString("echo (complete -C" + clitext.ShellQuote(line) + " | string replace -r '\\t.*' '')\n")
		}
		check(t, "fish", run(t, "fish", "--no-config", b.String()))
	})
}

var (
	helpFlagRE  = regexp.MustCompile(`(?m)^  (--[a-z0-9-]+)`)
	usageCmdRE  = regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)  `)
	synopsisRE  = regexp.MustCompile(`^Usage: sessionctl \[--db PATH\] [a-z-]+(?: \[flags\])? ?(.*)`)
	actionsRE   = regexp.MustCompile(`^\[?([a-z-]+(?: ?\| ?[a-z-]+)+)`)
	completeSet = func(words ...string) []string {
		var out []string
		for _, c := range completionTable().Candidates(words) {
			if strings.HasPrefix(c.Word, words[len(words)-1]) {
				out = append(out, c.Word)
			}
		}
		return out
	}
)

// TestCommandTable (issue 38) walks the command table and fails on a
// command, action, flag or value that help, completion or the parser
// lacks, in each direction: every command is listed by "sessionctl help",
// offered by completion and run by the parser, and they name no other;
// every flag of a command's flag set is in its --help, offered after the
// command and known to the parser, and neither help nor completion names
// another; every action is in the synopsis, offered and dispatched, and
// the synopsis names no other; every value is named by the help and
// offered where it belongs; every global flag is in the usage, offered
// everywhere, parsed anywhere on the line, and its value skipped.
func TestCommandTable(t *testing.T) {
	noKeysEnv(t)
	_, usage, _ := sctl(t, "help")
	listed, _, _ := strings.Cut(usage, "Global flags")
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	for _, m := range usageCmdRE.FindAllStringSubmatch(listed, -1) {
		if !slices.Contains(names, m[1]) {
			t.Errorf("sessionctl help lists %q, which is not a command", m[1])
		}
	}
	for _, w := range completeSet("") {
		if !slices.Contains(names, w) && w != "help" {
			t.Errorf("completion offers %q, which is not a command", w)
		}
	}
	offered := completeSet("")
	for _, c := range commands() {
		if !usageCmdRE.MatchString("  "+c.name+"  ") || !regexp.MustCompile(`(?m)^  `+regexp.QuoteMeta(c.name)+`  `).MatchString(listed) {
			t.Errorf("sessionctl help does not list %s", c.name)
		}
		if !slices.Contains(offered, c.name) {
			t.Errorf("completion does not offer %s", c.name)
		}
		if _, ok := lookup(c.name); !ok {
			t.Errorf("the parser does not run %s", c.name)
		}
		testCommandTable(t, c)
	}
	for _, f := range globalFlags {
		if !strings.Contains(usage, "  --"+f.name) {
			t.Errorf("sessionctl help does not list the global flag --%s", f.name)
		}
		for _, line := range [][]string{{"--"}, {"list", "--"}, {"hold", "release", "--"}} {
			if !slices.Contains(completeSet(line...), "--"+f.name) {
				t.Errorf("completion of %q does not offer --%s", line, f.name)
			}
		}
		if globalFlagSet := (&globals{}).globalFlagSet(new(bool)); globalFlagSet.Lookup(f.name) == nil {
			t.Errorf("the parser does not take the global flag --%s", f.name)
		}
		args := []string{"list", "--" + f.name}
		if f.arg != "" {
			args = append(args, "v")
			if got := completeSet("--"+f.name, ""); len(got) != 0 {
				t.Errorf("completion after --%s offers %q, not its value", f.name, got)
			}
			if got := completeSet("list", "--"+f.name, "v", "--facet", "r"); !slices.Equal(got, []string{"runtime"}) {
				t.Errorf("completion after list --%s v --facet offers %q", f.name, got)
			}
		}
		if h := cliflags.HoistGlobals(args, isGlobal); h[0] != "--"+f.name || h[len(h)-1] != "list" {
			t.Errorf("--%s after the command is not taken as a global flag: %q", f.name, h)
		}
	}
	var fs flag.FlagSet
	(&globals{}).globalFlagSet(new(bool)).VisitAll(func(f *flag.Flag) { fs.Bool(f.Name, false, "") })
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := lookupGlobal(f.Name); !ok {
			t.Errorf("the parser takes --%s, which the global flags table lacks", f.Name)
		}
	})
	for _, m := range helpFlagRE.FindAllStringSubmatch(usage[strings.Index(usage, "Global flags"):], -1) {
		if _, ok := lookupGlobal(strings.TrimPrefix(m[1], "--")); !ok {
			t.Errorf("sessionctl help lists the global flag %s, which the table lacks", m[1])
		}
	}
}

// goTypeNames are the names the flag package gives a value without one.
var goTypeNames = map[string]bool{"string": true, "int": true, "uint": true, "float": true, "duration": true, "value": true}

// enumValueNames are the names of flag values that are one of a few.
var enumValueNames = map[string]bool{"FACET": true, "KIND": true, "KINDS": true, "ORDER": true, "STATUS": true, "LEVEL": true}

func testCommandTable(t *testing.T, c command) {
	t.Helper()
	d := describe(c)
	if d.Flags == nil || d.Spec.Name != c.name {
		t.Errorf("%s: --help does not describe it (%q)", c.name, d.Spec.Name)
		return
	}
	_, help, _ := sctl(t, c.name, "--help")
	helpFlags := map[string]bool{}
	for _, m := range helpFlagRE.FindAllStringSubmatch(help, -1) {
		helpFlags[m[1]] = true
	}
	offered := completeSet(c.name, "--")
	d.Flags.VisitAll(func(f *flag.Flag) {
		if !helpFlags["--"+f.Name] {
			t.Errorf("%s --help does not list --%s", c.name, f.Name)
		}
		if !slices.Contains(offered, "--"+f.Name) {
			t.Errorf("completion of %s does not offer --%s", c.name, f.Name)
		}
		// The parser knows it (a bad value is not an unknown flag).
		code, _, errs := sctl(t, c.name, "--"+f.Name+"="+f.DefValue, "--help")
		if strings.Contains(errs, "unknown flag") {
			t.Errorf("%s --%s: exit %d, %s", c.name, f.Name, code, errs)
		}
		// A value named as one of a few (FACET, KIND, ORDER, ...) is
		// offered (search --kind, --facet and --order were not).
		if name, _ := flag.UnquoteUsage(f); enumValueNames[name] && len(d.Spec.Values["--"+f.Name]) == 0 {
			t.Errorf("%s --%s takes one %s of a few, which completion does not offer", c.name, f.Name, name)
		}
		// A value is named for the reader (DURATION, N), not by Go's
		// type (serve --refresh duration, bench --callers int).
		if name, _ := flag.UnquoteUsage(f); goTypeNames[name] {
			t.Errorf("%s --%s names its value by Go's type %q", c.name, f.Name, name)
		}
		if completionTable().TakesValue(&d, f.Name) {
			if got, want := completeSet(c.name, "--"+f.Name, ""), d.Spec.Values["--"+f.Name]; !slices.Equal(got, want) {
				t.Errorf("completion after %s --%s offers %q, want its values %q", c.name, f.Name, got, want)
			}
		}
	})
	for name := range helpFlags {
		if d.Flags.Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("%s --help lists %s, which its parser lacks", c.name, name)
		}
	}
	for _, w := range offered {
		if _, global := lookupGlobal(strings.TrimPrefix(w, "--")); !global && w != "--help" && d.Flags.Lookup(strings.TrimPrefix(w, "--")) == nil {
			t.Errorf("completion of %s offers %s, which its parser lacks", c.name, w)
		}
	}
	m := synopsisRE.FindStringSubmatch(strings.SplitN(help, "\n", 2)[0])
	if m == nil {
		t.Errorf("%s --help: no synopsis", c.name)
		return
	}
	synopsis := m[1]
	var declared []string
	for _, a := range d.Spec.Actions {
		declared = append(declared, a.Name)
		if a.Bare {
			continue
		}
		if !regexp.MustCompile(`\b` + a.Name + `\b`).MatchString(synopsis) {
			t.Errorf("%s's synopsis %q does not name its action %s", c.name, synopsis, a.Name)
		}
		if !slices.Contains(completeSet(c.name, ""), a.Name) {
			t.Errorf("completion of %s does not offer its action %s", c.name, a.Name)
		}
		if got, _ := d.Spec.Action([]string{a.Name}); got != a.Name {
			t.Errorf("the parser takes %s %s as action %s", c.name, a.Name, got)
		}
		for _, f := range a.Flags {
			if d.Flags.Lookup(f) == nil {
				t.Errorf("%s %s declares --%s, which %s does not have", c.name, a.Name, f, c.name)
			}
		}
	}
	if am := actionsRE.FindStringSubmatch(synopsis); am != nil {
		for _, a := range strings.Split(am[1], "|") {
			if a = strings.TrimSpace(a); !slices.Contains(declared, a) {
				t.Errorf("%s's synopsis lists action %q, which its spec does not declare", c.name, a)
			}
		}
	}
	for key, values := range d.Spec.Values {
		var got []string
		switch {
		case strings.HasPrefix(key, "--"):
			if !completionTable().TakesValue(&d, strings.TrimPrefix(key, "--")) {
				t.Errorf("%s: values for %s, which is not a flag that takes a value", c.name, key)
			}
			continue // offered: checked above
		case key == "":
			got = completeSet(c.name, "")
		default:
			if !slices.Contains(declared, key) {
				t.Errorf("%s: values after %q, which is not an action", c.name, key)
			}
			got = completeSet(append(append([]string{c.name}, strings.Fields(key)...), "")...)
		}
		for _, v := range values {
			if !slices.Contains(got, v) {
				t.Errorf("completion of %s %s does not offer %q", c.name, key, v)
			}
		}
	}
	for key, values := range d.Spec.Values {
		for _, v := range values {
			if !strings.Contains(help, v) {
				t.Errorf("%s --help does not name %s's value %q", c.name, key, v)
			}
		}
	}
}
