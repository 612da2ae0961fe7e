package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/store"
)

// SearchResult writes a page of search hits: notes on what was
// searched, a table of hits with their snippets (and the items around a
// hit, when asked for), the cursor of the next page.
func SearchResult(w io.Writer, res store.SearchResult) error {
	if note := store.PendingNote(res.Pending); note != "" {
		fmt.Fprintln(w, note)
	}
	if res.Scanned {
		if res.Partial {
			fmt.Fprintf(w, "every term is shorter than %d characters: scanned the newest items only (--scan-limit); older ones were not searched\n", store.MinIndexedTerm)
		} else {
			fmt.Fprintf(w, "every term is shorter than %d characters: scanned every item\n", store.MinIndexedTerm)
		}
	}
	if len(res.Hits) == 0 {
		fmt.Fprintln(w, "no matches")
		return nil
	}
	tw := tablefmt.NewWriter(w)
	fmt.Fprintln(tw, "KIND\tSESSION\tPOS\tAT\tROLE\tSNIPPET")
	for _, h := range res.Hits {
		where := tablefmt.Cell(h.SessionID)
		if h.App != "" {
			where = tablefmt.Cell(h.App) + "/" + tablefmt.Cell(h.User) + "/" + where
		}
		at := fmt.Sprint(h.Seq)
		if h.Ref != "" {
			at = tablefmt.Clip(h.Ref, 40)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", h.Kind, where, at, tablefmt.Time(h.At), tablefmt.OrDash(tablefmt.Clip(h.Role, 20)), markSnippet(h.Snippet, 100))
		for _, it := range h.Window {
			mark := " "
			if it.Seq == h.Seq {
				mark = ">"
			}
			fmt.Fprintf(tw, "\t\t%s %d\t%s\t%s\t%s\n", mark, it.Seq, tablefmt.Time(it.At), tablefmt.OrDash(tablefmt.Clip(it.Role, 20)), tablefmt.Clip(it.Text, 100))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if res.Next != "" {
		fmt.Fprintf(w, "more: --after %s\n", res.Next)
	}
	return nil
}

// SearchIndexReport writes what reindex --check found: per kind of
// item, how many are indexed, missing and orphaned, then a verdict.
func SearchIndexReport(w io.Writer, rep store.SearchIndexReport) error {
	tw := tablefmt.NewWriter(w)
	fmt.Fprintln(tw, "KIND\tITEMS\tINDEXED\tMISSING\tORPHANS")
	for _, k := range rep.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", k.Kind, k.Items, k.Indexed, k.Missing, k.Orphans)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case !rep.IndexOK:
		fmt.Fprintf(w, "the full-text index differs: %s; run sessionctl reindex\n", rep.IndexDetail)
	case !rep.OK():
		fmt.Fprintln(w, "the index differs from the content: run sessionctl reindex")
	default:
		fmt.Fprintln(w, "the index agrees with the content")
	}
	return nil
}

// markSnippet renders a snippet on one line for a table: white space
// folded, unsafe characters escaped, matches between « and », at most
// about n characters, "…" where the item's text goes on.
func markSnippet(s store.Snippet, n int) string {
	var b strings.Builder
	if s.Before {
		b.WriteString("…")
	}
	for _, p := range s.Pieces() {
		text := esc(fold(p.Text))
		if p.Match {
			text = "«" + text + "»"
		}
		b.WriteString(text)
	}
	out := b.String()
	if r := []rune(out); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	if s.After {
		out += "…"
	}
	return out
}

// fold turns line breaks and tabs into spaces (same byte offsets).
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
