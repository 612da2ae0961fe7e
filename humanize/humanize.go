// Package humanize is the one rendering of each unit that people and
// machines read, for every surface (check results, the CLI, the console):
// byte sizes, durations as people write them and as JSON milliseconds,
// money as exact decimals with the currency, times as RFC 3339 UTC,
// plurals, one-line text, and stored data escaped so that it cannot reach
// a terminal as control characters. It is public so that a Go program
// showing the store reads as sessionctl and the console do (sessionctl
// imports no internal package).
package humanize

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bytes formats n bytes as "512 B", "1.5 KiB", "12.0 MiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Plural returns one when n is 1, else many.
func Plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// OneLine collapses every run of white space of s, newlines included, into
// one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// UnsafeRune reports whether r must not reach a terminal as it is: the C0
// controls, DEL, the C1 controls (U+0080 to U+009F; U+009B is a CSI on
// many terminals) and the bidirectional formatting characters, which can
// make a line read differently from what it holds.
func UnsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// Escape returns s with every unsafe rune escaped as in a Go string literal
// (\t, \n, \r, \x1b, \u202e) and every byte that is not UTF-8 as \xNN.
func Escape(s string) string {
	if !strings.ContainsFunc(s, UnsafeRune) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && UnsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case UnsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Quote is s as it is, or escaped and in double quotes when it holds an
// unsafe rune, so that a reader sees that it was escaped.
func Quote(s string) string {
	if strings.ContainsFunc(s, UnsafeRune) || !utf8.ValidString(s) {
		return `"` + Escape(s) + `"`
	}
	return s
}

// EchoMax is how many characters of a user's input an echo shows (in an
// error line, a page's heading): enough to recognise it, short enough to
// read.
const EchoMax = 80

// Clip cuts s to at most max characters for an echo, on a character
// boundary, and says how long the whole was: "abc… (20000 characters)".
// A string of at most max characters is returned as it is.
func Clip(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	cut, i := 0, 0
	for cut = range s {
		if i == max {
			break
		}
		i++
	}
	return s[:cut] + "… (" + strconv.Itoa(n) + " characters)"
}
