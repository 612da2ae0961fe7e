// Package clitext shapes the sentences of sessionctl's messages and help
// for people: wrapped paragraphs, one-line errors with long echoes cut,
// plurals, lists and shell-quoted words.
package clitext

import (
	"strings"
	"unicode"

	"github.com/agentstore/sessionstore/humanize"
)

// WrapWords breaks text into lines of at most width bytes at spaces (a
// longer word makes a line of its own).
func WrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Wrap wraps text at 76 columns (help paragraphs with generated parts).
func Wrap(text string) string { return strings.Join(WrapWords(text, 76), "\n") }

// OneLine folds a multi-line message into one line.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ClipEchoes cuts every run of non-blank characters of an error line
// longer than humanize.EchoMax (a user's argument echoed back, such as a
// 128 KiB id) to that length, with its whole length stated.
func ClipEchoes(msg string) string {
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

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// JoinAnd lists words: "a, b and c".
func JoinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// ShellQuote quotes s for a shell command line when it needs it.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`&;|<>()?*[]{}#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
