// Package statusline is the status line of a long sessionctl command
// (export, import, gc, backup): one line on stderr, rewritten in place
// ("\r", then erase to the end of the line). The command shows it only
// when stderr is a terminal, so redirected stderr holds exactly what it
// held without it, and clears it before it prints its summary or an
// error, so it never mixes with other output.
//
// Every method is a no-op on a nil *Line, so the code that reports
// progress need not know whether anyone sees it.
package statusline

import (
	"fmt"
	"io"
	"time"

	"github.com/agentstore/sessionstore/humanize"
)

// Every is the default least time between two redraws of the status
// line: at most five a second, enough to see it move without flicker or
// a cost to the work it reports on.
const Every = 200 * time.Millisecond

// Width bounds the status line, in runes: a line wider than the terminal
// wraps, and "\r" would then erase only its last row.
const Width = 79

// Line is a status line.
type Line struct {
	w     io.Writer     // the raw stderr
	every time.Duration // least time between two redraws by Update; <0: none
	last  time.Time     // when the line was last drawn
	drawn bool          // a line is on the screen
}

// New returns a status line drawn on w, redrawn by Update at most once
// every every (0: Every; below 0: on every update).
func New(w io.Writer, every time.Duration) *Line {
	if every == 0 {
		every = Every
	}
	return &Line{w: w, every: every}
}

// Interval is the least time between two redraws by Update (below 0:
// none).
func (p *Line) Interval() time.Duration { return p.every }

// Update redraws the line with text(), unless it was drawn less than the
// interval ago: text is called only when the line is drawn, so callers
// may report every item they process.
func (p *Line) Update(text func() string) {
	if p == nil {
		return
	}
	now := time.Now()
	if p.drawn && p.every > 0 && now.Sub(p.last) < p.every {
		return
	}
	p.draw(text(), now)
}

// Show draws text at once: a new phase of the command ("checking the
// copy"), which must not wait for the next update. A command has a few
// phases; what repeats (an item, a file) goes through Update.
func (p *Line) Show(format string, args ...any) {
	if p == nil {
		return
	}
	p.draw(fmt.Sprintf(format, args...), time.Now())
}

func (p *Line) draw(text string, now time.Time) {
	if r := []rune(text); len(r) > Width {
		text = string(r[:Width-1]) + "…"
	}
	fmt.Fprint(p.w, "\r\033[K"+text)
	p.drawn, p.last = true, now
}

// Clear erases the line, if one is drawn.
func (p *Line) Clear() {
	if p == nil || !p.drawn {
		return
	}
	fmt.Fprint(p.w, "\r\033[K")
	p.drawn = false
}

// OfTotal formats done bytes "of" a known total: "1.5 MiB of 12.0 MiB
// (12%)", or only done when the total is not known.
func OfTotal(done, total int64) string {
	if total <= 0 {
		return humanize.Bytes(done)
	}
	return fmt.Sprintf("%s of %s (%d%%)", humanize.Bytes(done), humanize.Bytes(total), min(100, done*100/total))
}
