// Package tablefmt lays out sessionctl's tables and the cells in them:
// aligned columns, times, and stored text made safe for one cell.
package tablefmt

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/humanize"
)

// NewWriter returns a tabwriter for aligned columns.
func NewWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// Time formats t for tables: UTC, seconds; "-" for the zero time.
func Time(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// List joins a list for a table cell (each item escaped), cut at max
// bytes (0: no cut); "-" when it is empty.
func List(l []string, max int) string {
	if len(l) == 0 {
		return "-"
	}
	items := make([]string, len(l))
	for i, v := range l {
		items[i] = humanize.Escape(v)
	}
	s := strings.Join(items, ",")
	if max > 0 && len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// Cell makes text safe for one table cell: text with control characters
// (newlines, tabs, escape sequences) or bytes that are not UTF-8 is
// quoted, with those escaped.
func Cell(s string) string {
	if strings.ContainsFunc(s, humanize.UnsafeRune) || !utf8.ValidString(s) {
		return `"` + humanize.Escape(s) + `"`
	}
	return s
}

// OrDash is s, or "-" when it is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Clip shortens s to at most n runes for a table cell, on one line,
// escaped.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return humanize.Escape(s)
	}
	return humanize.Escape(string(r[:n-1])) + "…"
}

// YesNo is "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Cols lays out one line of a follow: each value left-aligned in its
// width (the last one as it is). Following prints line by line as rows
// commit, so columns have fixed widths instead of a table's measured
// ones.
func Cols(widths []int, vals ...string) string {
	var b strings.Builder
	for i, v := range vals {
		if i > 0 {
			b.WriteString("  ")
		}
		if i < len(widths) && i < len(vals)-1 {
			fmt.Fprintf(&b, "%-*s", widths[i], v)
		} else {
			b.WriteString(v)
		}
	}
	return b.String()
}
