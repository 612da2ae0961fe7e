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
	out, _ := AppendEscape(make([]byte, 0, len(s)+16), []byte(s), "", false)
	return string(out)
}

// AppendEscape appends src to dst escaped as Escape escapes it, except the
// runes of keep, which are appended as they are (a terminal's writer keeps
// "\t\n", which lay out tables and lines). With hold, an incomplete UTF-8
// sequence that ends src is left out and returned as rest, for a writer
// that escapes a stream to put before its next write; without it, such
// bytes are escaped as \xNN and rest is empty.
func AppendEscape(dst, src []byte, keep string, hold bool) (out, rest []byte) {
	for i := 0; i < len(src); {
		c := src[i]
		if c >= 0x20 && c < 0x7f {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(src[i:])
		switch {
		case hold && r == utf8.RuneError && n <= 1 && !utf8.FullRune(src[i:]):
			return dst, src[i:]
		case r == utf8.RuneError && n == 1:
			dst = fmt.Appendf(dst, `\x%02x`, c)
		case strings.ContainsRune(keep, r) || !UnsafeRune(r):
			dst = append(dst, src[i:i+n]...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r < 0x80:
			dst = fmt.Appendf(dst, `\x%02x`, r)
		default:
			dst = fmt.Appendf(dst, `\u%04x`, r)
		}
		i += n
	}
	return dst, nil
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
