package main

import (
	"github.com/agentstore/sessionstore/cmd/sessionctl/statusline"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
)

// The status line of a long command (package statusline), shown only
// when stderr is a terminal; g.fail clears it.

// startProgress returns the status line of this invocation, active when
// stderr is a terminal and on is true (a command passes false when the
// line would disturb its output, as export writing to a terminal stdout).
// g.fail clears it.
func (g *globals) startProgress(on bool) *statusline.Line {
	if !on || !g.stderrIsTerminal() {
		return nil
	}
	p := statusline.New(termout.Raw(g.stderr), g.progressEvery)
	g.status = p
	return p
}

// stderrIsTerminal reports whether stderr is a terminal to draw a status
// line on (tests set g.terminalStderr).
func (g *globals) stderrIsTerminal() bool {
	if g.terminalStderr != nil {
		return *g.terminalStderr
	}
	return termout.IsTerminal(termout.Raw(g.stderr))
}

// stdoutIsTerminal reports whether stdout is a terminal (tests set
// g.terminalStdout).
func (g *globals) stdoutIsTerminal() bool {
	if g.terminalStdout != nil {
		return *g.terminalStdout
	}
	return termout.IsTerminal(termout.Raw(g.stdout))
}
