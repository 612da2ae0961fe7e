package main

// Shell completion (package completion), answered by sessionctl itself
// from the command table that the parser and --help read.

import (
	"context"
	"io"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cmdspec"
	"github.com/agentstore/sessionstore/cmd/sessionctl/completion"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/suggest"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
)

func runCompletion(ctx context.Context, g *globals, args []string) error {
	sp := specs.Completion
	fs := g.newFlags(sp)
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	script, ok := completion.Scripts[pos[0]]
	if !ok {
		return g.usageErr(sp.Name, "unknown shell %q: bash, zsh or fish%s", pos[0], suggest.DidYouMean(pos[0], []string{"bash", "zsh", "fish"}))
	}
	_, err = io.WriteString(termout.Raw(g.stdout), script)
	return g.result(sp.Name, err)
}

// runComplete answers a completion script (completion.Table.Write):
// args are the shell and the line's words after "sessionctl", the last the
// one being completed.
func (g *globals) runComplete(args []string) int {
	if len(args) < 2 {
		return exitUsage
	}
	completionTable().Write(termout.Raw(g.stdout), args[0], args[1:])
	return exitOK
}

// completionTable is the command table as completion reads it: the
// commands, each one's spec and flag set (describe), the global flags.
func completionTable() completion.Table {
	t := completion.Table{Describe: func(name string) (cmdspec.Described, bool) {
		c, ok := lookup(name)
		if !ok {
			return cmdspec.Described{}, false
		}
		return describe(c), true
	}}
	for _, c := range commands() {
		t.Commands = append(t.Commands, completion.Command{Name: c.name, Summary: c.summary})
	}
	for _, f := range globalFlags {
		t.Globals = append(t.Globals, completion.Global{Name: f.name, Help: f.help, TakesValue: f.arg != ""})
	}
	return t
}
