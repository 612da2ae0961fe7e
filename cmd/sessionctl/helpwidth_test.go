package main

import (
	"strings"
	"testing"
)

// TestHelpProseFits: the prose of every command's help (its lines before
// its flags and examples) fits in 80 columns, as a terminal shows it (gc,
// fork, rewind, doctor, import, keys and retention had lines of 90 to 122
// characters where an edit had not been wrapped), and retention's help
// names its VALUE, not the store's parameters (max_age, keep_last,
// max_bytes).
func TestHelpProseFits(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"help", "exit"}} {
		_, out, _ := sctl(t, args...)
		for _, line := range strings.Split(out, "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("sessionctl %s: a line of %d characters: %s", strings.Join(args, " "), len([]rune(line)), line)
			}
		}
	}
	for _, c := range commands() {
		code, out, errs := sctl(t, c.name, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d %s", c.name, code, errs)
		}
		prose := out
		for _, end := range []string{"\nFlags:", "\nGlobal flags:", "\nExample"} {
			prose, _, _ = strings.Cut(prose, end)
		}
		for i, line := range strings.Split(prose, "\n") {
			if i > 0 && len([]rune(line)) > 80 {
				t.Errorf("%s --help: a line of %d characters: %s", c.name, len([]rune(line)), line)
			}
		}
		if c.name != "retention" {
			continue
		}
		for _, param := range []string{"max_age", "max_bytes", "keep_last"} {
			if strings.Contains(strings.ReplaceAll(prose, "messages_keep_last", ""), param) {
				t.Errorf("retention --help names the store's parameter %s", param)
			}
		}
	}
}
