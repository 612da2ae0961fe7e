// Package cmdspec is the description of a sessionctl command: its
// synopsis, help text, actions and the values its flags and operands
// take. With the flag set the command builds, a Spec is the one table
// that the help (WriteHelp), the parser and shell completion read.
package cmdspec

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
)

// Spec describes a command: its --help text, its actions and the values
// its flags and operands take.
type Spec struct {
	Name     string   // command name
	Args     string   // positional synopsis, e.g. "ID [ID...]"
	About    string   // what the command does (one paragraph or more)
	Examples []string // at least one
	// Actions are the actions of a command that has several (audit
	// verify, retention set, ...), the default first, and the flags each
	// takes: a flag given to an action that does not take it is a usage
	// error (BadFlag).
	Actions []Action
	// Values are what completion offers: by flag ("--facet") the values
	// a flag takes one of, and by the operands before ("" for the first
	// operand, "set" for the one after the action set) the values of an
	// operand.
	Values map[string][]string
}

// Action is one action of a command and the flags it takes (their names
// without dashes).
type Action struct {
	Name  string
	Flags []string
	// Bare: the action is chosen without its word (hold FACET ID holds).
	Bare bool
}

// Described is a command's spec and the flag set it parses with.
type Described struct {
	Spec  Spec
	Flags *flag.FlagSet
}

// Action splits the action off args: the first word when it names one
// of sp's actions, else the bare action when args begins with an
// operand, else the default (the first).
func (sp Spec) Action(args []string) (string, []string) {
	for _, a := range sp.Actions {
		if len(args) > 0 && !a.Bare && a.Name == args[0] {
			return a.Name, args[1:]
		}
	}
	for _, a := range sp.Actions {
		if a.Bare && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			return a.Name, args
		}
	}
	return sp.Actions[0].Name, args
}

// BadFlag returns the name of a flag given on the command line (fs,
// parsed) that action act of sp does not take; "" when there is none, or
// when sp has no action act.
func (sp Spec) BadFlag(fs *flag.FlagSet, act string) string {
	i := slices.IndexFunc(sp.Actions, func(a Action) bool { return a.Name == act })
	if i < 0 {
		return ""
	}
	bad := ""
	fs.Visit(func(f *flag.Flag) {
		if bad == "" && !slices.Contains(sp.Actions[i].Flags, f.Name) {
			bad = f.Name
		}
	})
	return bad
}

// WriteHelp writes a command's help to w: synopsis, description, flags
// with double dashes, the global flags it takes (globals, with their
// dashes), examples.
func WriteHelp(w io.Writer, fs *flag.FlagSet, sp Spec, globals []string) {
	synopsis := "sessionctl [--db PATH] " + sp.Name
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		synopsis += " [flags]"
	}
	if sp.Args != "" {
		synopsis += " " + sp.Args
	}
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", synopsis, strings.TrimSpace(sp.About))
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fs.VisitAll(func(f *flag.Flag) {
			argName, usage := flag.UnquoteUsage(f)
			if _, ok := f.Value.(*cliflags.Duration); ok && argName == "value" {
				argName = "duration"
			}
			left := "--" + f.Name
			if argName != "" {
				left += " " + argName
			}
			if !strings.Contains(usage, "(required)") && f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", left, usage)
		})
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%s\n", clitext.Wrap("Global flags: "+strings.Join(globals, ", ")+" (see sessionctl help)"))
	fmt.Fprintln(w, "\nExample:")
	for _, e := range sp.Examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}
