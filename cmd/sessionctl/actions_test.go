package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpFlagArgRE reads a flag of a command's help and the name of its
// value ("--limit N", "--all").
var helpFlagArgRE = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)(?: ([A-Za-z]+))?`)

// TestActionFlags (issue 37, item 16) walks every command: each action
// of a command with actions (spec.actions) refuses, with a usage error
// naming it, every flag of the command that it does not take (audit
// verify --kind bogus, hold list --reason x and retention show
// --reads-count were accepted and ignored), and accepts the ones it
// declares; every declared flag exists, and every action a command's
// synopsis lists is declared.
func TestActionFlags(t *testing.T) {
	noKeysEnv(t)
	db := filepath.Join(t.TempDir(), "missing.db")
	for _, c := range commands() {
		var help bytes.Buffer
		g := &globals{stdout: &help, stderr: io.Discard}
		c.run(context.Background(), g, []string{"--help"})
		flags := map[string]string{} // name -> value name ("" for a bool)
		for _, m := range helpFlagArgRE.FindAllStringSubmatch(help.String(), -1) {
			flags[m[1]] = m[2]
		}
		acts := describe(c).Spec.Actions
		for _, a := range acts {
			for _, f := range a.Flags {
				if _, ok := flags[f]; !ok {
					t.Errorf("%s %s declares --%s, which %s does not have", c.name, a.Name, f, c.name)
				}
			}
			for f, arg := range flags {
				args := []string{"--db", db, c.name}
				if !a.Bare {
					args = append(args, a.Name)
				} else {
					args = append(args, "x")
				}
				args = append(args, "--"+f)
				switch {
				case arg == "":
				case strings.Contains(strings.ToLower(arg), "duration"):
					args = append(args, "1h")
				case arg == "N" || arg == "int":
					args = append(args, "1")
				default:
					args = append(args, "x")
				}
				code, _, errs := sctl(t, args...)
				want := "--" + f + " does not apply to " + c.name + " " + a.Name
				if slices.Contains(a.Flags, f) {
					if strings.Contains(errs, "does not apply") {
						t.Errorf("%v: %s", args, errs)
					}
					continue
				}
				if code != exitUsage || !strings.Contains(errs, want) {
					t.Errorf("%v: exit %d, %s; want exit %d and %q", args, code, errs, exitUsage, want)
				}
			}
		}
	}
}
