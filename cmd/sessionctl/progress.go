package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
)

// progress is the status line of a long command (export, import, gc,
// backup): one line on stderr, rewritten in place ("\r", then erase to the
// end of the line), shown only when stderr is a terminal. On a file or a
// pipe it writes nothing, so redirected stderr holds exactly what it held
// without it. The line is cleared before the command prints its summary or
// an error (g.fail clears it), so it never mixes with other output.
//
// Every method is a no-op on a nil or inactive progress, so the code that
// reports progress need not know whether anyone sees it.
type progress struct {
	w     io.Writer     // the raw stderr
	every time.Duration // least time between two redraws by update; <0: none
	last  time.Time     // when the line was last drawn
	drawn bool          // a line is on the screen
}

// progressEvery is the least time between two redraws of the status
// line: at most five a second, enough to see it move without flicker or a
// cost to the work it reports on.
const progressEvery = 200 * time.Millisecond

// progressWidth bounds the status line, in runes: a line wider than the
// terminal wraps, and "\r" would then erase only its last row.
const progressWidth = 79

// startProgress returns the status line of this invocation, active when
// stderr is a terminal and on is true (a command passes false when the
// line would disturb its output, as export writing to a terminal stdout).
// g.fail clears it.
func (g *globals) startProgress(on bool) *progress {
	if !on || !g.stderrIsTerminal() {
		return nil
	}
	p := &progress{w: rawWriter(g.stderr), every: g.progressEvery}
	if p.every == 0 {
		p.every = progressEvery
	}
	g.status = p
	return p
}

// update redraws the line with text(), unless it was drawn less than
// p.every ago: text is called only when the line is drawn, so callers may
// report every item they process.
func (p *progress) update(text func() string) {
	if p == nil {
		return
	}
	now := time.Now()
	if p.drawn && p.every > 0 && now.Sub(p.last) < p.every {
		return
	}
	p.draw(text(), now)
}

// show draws text at once: a new phase of the command ("checking the
// copy"), which must not wait for the next update. A command has a few
// phases; what repeats (an item, a file) goes through update.
func (p *progress) show(format string, args ...any) {
	if p == nil {
		return
	}
	p.draw(fmt.Sprintf(format, args...), time.Now())
}

func (p *progress) draw(text string, now time.Time) {
	if r := []rune(text); len(r) > progressWidth {
		text = string(r[:progressWidth-1]) + "…"
	}
	fmt.Fprint(p.w, "\r\033[K"+text)
	p.drawn, p.last = true, now
}

// clear erases the line, if one is drawn.
func (p *progress) clear() {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.drawn = false
}

// ofTotal formats done bytes "of" a known total: "1.5 MiB of 12.0 MiB
// (12%)", or only done when the total is not known.
func ofTotal(done, total int64) string {
	if total <= 0 {
		return humanBytes(done)
	}
	return fmt.Sprintf("%s of %s (%d%%)", humanBytes(done), humanBytes(total), min(100, done*100/total))
}

// stderrIsTerminal reports whether stderr is a terminal to draw a status
// line on (tests set g.terminalStderr).
func (g *globals) stderrIsTerminal() bool {
	if g.terminalStderr != nil {
		return *g.terminalStderr
	}
	return isTerminal(rawWriter(g.stderr))
}

// stdoutIsTerminal reports whether stdout is a terminal (tests set
// g.terminalStdout).
func (g *globals) stdoutIsTerminal() bool {
	if g.terminalStdout != nil {
		return *g.terminalStdout
	}
	return isTerminal(rawWriter(g.stdout))
}

// isTerminal reports whether w is a terminal (not merely a character
// device: /dev/null is one too).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
