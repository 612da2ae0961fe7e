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

// TestServeHelpKeepsSecrets: serve --help names the variables the
// credentials may come from and never prints their values (it printed
// $SESSIONCTL_TOKEN and $SESSIONCTL_BASIC_AUTH as the flags' defaults).
func TestServeHelpKeepsSecrets(t *testing.T) {
	t.Setenv("SESSIONCTL_TOKEN", "token-secret-0123456789")
	t.Setenv("SESSIONCTL_BASIC_AUTH", "ada:password-secret")
	_, out, _ := sctl(t, "serve", "--help")
	if strings.Contains(out, "secret") || !strings.Contains(out, "$SESSIONCTL_TOKEN") || !strings.Contains(out, "$SESSIONCTL_BASIC_AUTH") {
		t.Errorf("serve --help:\n%s", out)
	}
	// The variables are still read: a token from the environment too
	// short is refused as the flag's would be.
	t.Setenv("SESSIONCTL_TOKEN", "short")
	if code, _, errs := sctl(t, "serve", "--addr", "0.0.0.0:0"); code != exitUsage || !strings.Contains(errs, "--token must be at least 16 characters") {
		t.Errorf("serve with a short $SESSIONCTL_TOKEN: exit %d %s", code, errs)
	}
}
