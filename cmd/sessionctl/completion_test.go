package main

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestCompletionActionsShellsAndValues: each shell's script completes a
// command's actions whatever their synopsis spacing (migrate up), the
// shells of completion, and the values of flags that take one of a fixed
// set (list --facet, audit --kind, create --sensitivity); after such a
// flag it offers its values only.
func TestCompletionActionsShellsAndValues(t *testing.T) {
	e := newTestEnv(t)
	cases := []struct {
		words []string // the command line, the last word being completed
		want  string
	}{
		{[]string{"migrate", "u"}, "up"},
		{[]string{"completion", "z"}, "zsh"},
		{[]string{"list", "--facet", "r"}, "runtime"},
		{[]string{"--db", "x.db", "audit", "--kind", "che"}, "checkpoint"},
		{[]string{"create", "--sensitivity", "con"}, "confidential"},
	}
	t.Run("bash", func(t *testing.T) {
		var script strings.Builder
		script.WriteString(e.run("completion", "bash").want(t, 0).stdout)
		for _, c := range cases {
			script.WriteString("COMP_WORDS=(sessionctl " + strings.Join(c.words, " ") + "); COMP_CWORD=" + strconv.Itoa(len(c.words)) +
				"; _sessionctl; echo \"${COMPREPLY[*]}\"\n")
		}
		out := runShell(t, "bash", "--norc", script.String())
		for i, c := range cases {
			if out[i] != c.want {
				t.Errorf("bash: sessionctl %s<TAB> = %q, want %q", strings.Join(c.words, " "), out[i], c.want)
			}
		}
	})
	t.Run("zsh", func(t *testing.T) {
		// compadd prints what it is handed; zsh filters by prefix.
		var script strings.Builder
		script.WriteString("_describe() { print -r -- describe; }\ncompadd() { [[ $1 == -- ]] && shift; print -r -- \"$*\"; }\ncompdef() { :; }\n")
		script.WriteString(e.run("completion", "zsh").want(t, 0).stdout)
		for _, c := range cases {
			script.WriteString("words=(sessionctl " + strings.Join(c.words, " ") + "); CURRENT=" + strconv.Itoa(len(c.words)+1) + "; _sessionctl\n")
		}
		out := runShell(t, "zsh", "-f", script.String())
		for i, c := range cases {
			got := strings.Fields(out[i])
			flagValue := strings.HasPrefix(c.words[len(c.words)-2], "--")
			if !slices.Contains(got, c.want) || (flagValue && slices.ContainsFunc(got, func(w string) bool { return strings.HasPrefix(w, "--") })) {
				t.Errorf("zsh: sessionctl %s<TAB> offers %q, want %q (and no flags after a flag that takes a value)", strings.Join(c.words, " "), out[i], c.want)
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		var script strings.Builder
		script.WriteString(e.run("completion", "fish").want(t, 0).stdout)
		for _, c := range cases {
			script.WriteString("echo (complete -C'sessionctl " + strings.Join(c.words, " ") + "')\n")
		}
		out := runShell(t, "fish", "--no-config", script.String())
		for i, c := range cases {
			if out[i] != c.want {
				t.Errorf("fish: sessionctl %s<TAB> = %q, want %q", strings.Join(c.words, " "), out[i], c.want)
			}
		}
	})
}

// TestCompletionValuesMatchTheFlags: every flag with completion values is
// a flag of its command, and its help names each value.
func TestCompletionValuesMatchTheFlags(t *testing.T) {
	words := map[string]cmdWords{}
	for _, w := range completionWords() {
		words[w.name] = w
	}
	for cmd, flags := range flagValues() {
		w, ok := words[cmd]
		if !ok {
			t.Errorf("completion values for unknown command %s", cmd)
			continue
		}
		for flag, values := range flags {
			if !slices.Contains(w.flags, flag) {
				t.Errorf("completion values for %s %s, which has no such flag", cmd, flag)
			}
			help := e2eHelp(t, cmd)
			for _, v := range values {
				if !strings.Contains(help, v) {
					t.Errorf("%s --help does not name %s's value %q", cmd, flag, v)
				}
			}
		}
	}
}

func e2eHelp(t *testing.T, cmd string) string {
	t.Helper()
	e := newTestEnv(t)
	return e.run(cmd, "--help").want(t, 0).stdout
}

// runShell runs script with the shell and returns its output lines.
func runShell(t *testing.T, shell, flag, script string) []string {
	t.Helper()
	out, err := exec.Command(shellFor(t, shell), flag, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}
