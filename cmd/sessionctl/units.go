package main

// The CLI's views of the store's values that carry a unit: durations,
// money and times go through package humanize, the one rendering every
// surface (the CLI's tables and JSON, the console's pages, its JSON and
// /metrics) shares. The store's own JSON (export files) is left as it is.

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// durationText is a configured duration as people write it ("1 min",
// "30 days").
func durationText(d time.Duration) string { return humanize.Duration(d) }

// clipEchoes cuts every run of non-blank characters of an error line
// longer than humanize.EchoMax (a user's argument echoed back, such as a
// 128 KiB id) to that length, with its whole length stated.
func clipEchoes(msg string) string {
	if len(msg) <= humanize.EchoMax {
		return msg
	}
	var b strings.Builder
	start := -1
	flush := func(end int) {
		if start >= 0 {
			// Quotes and punctuation around an echo are not part of it.
			run := msg[start:end]
			core := strings.TrimLeft(run, `"'(`)
			lead := run[:len(run)-len(core)]
			core = strings.TrimRight(core, `"'),:;.`)
			trail := run[len(lead)+len(core):]
			b.WriteString(lead + humanize.Clip(core, humanize.EchoMax) + trail)
			start = -1
		}
	}
	for i, r := range msg {
		if unicode.IsSpace(r) {
			flush(i)
			b.WriteRune(r)
		} else if start < 0 {
			start = i
		}
	}
	flush(len(msg))
	return b.String()
}

// errorText is the text of a command's error for its error line: a file
// or schema that is not a session store said so in the words of the
// user's --db, its echoes cut to a readable length.
func (g *globals) errorText(err error) string {
	if errors.Is(err, store.ErrNotSessionStore) {
		return clipEchoes(g.dbName() + " is not a session store database (check --db)")
	}
	return clipEchoes(oneLine(err.Error()))
}
