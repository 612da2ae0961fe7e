package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/store"
)

// govHeader and govRow are the table of governed sessions.
const govHeader = "ID\tAGENT\tSTATUS\tCALLS\tRATE\tTOOLS\tEXPIRES"

func govRow(s store.Session) string {
	return fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s\t%s\t%s", esc(s.ID), esc(s.AgentID), s.Status, s.CallsMade, s.CallBudget,
		rateText(s), listText(s.AuthorizedTools, 40), tableTime(s.ExpiresAt))
}

// govDetails writes one governed session as aligned "key  value" lines.
func govDetails(w io.Writer, s store.Session) error {
	tw := newTable(w)
	rows := [][2]string{
		{"id", esc(s.ID)},
		{"agent", esc(s.AgentID)},
		{"status", string(s.Status)},
		{"calls", fmt.Sprintf("%d of %d made, %d remaining", s.CallsMade, s.CallBudget, s.RemainingBudget())},
		{"tools", listText(s.AuthorizedTools, 0)},
		{"credentials", listText(s.AuthorizedCredentials, 0)},
		{"rate limit", rateDetails(s)},
		{"time limit", durationText(s.TimeLimit)},
		{"created", tableTime(s.CreatedAt)},
		{"expires", tableTime(s.ExpiresAt)},
		{"sensitivity", esc(string(s.Sensitivity))},
		{"intent", orDash(cell(s.DeclaredIntent))},
		{"delegation", listText(s.DelegationChain, 0)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func rateText(s store.Session) string {
	if s.RateLimit == 0 {
		return "-"
	}
	return fmt.Sprintf("%d per %s", s.RateLimit, durationText(s.RateWindow))
}

func rateDetails(s store.Session) string {
	if s.RateLimit == 0 {
		return "none"
	}
	return fmt.Sprintf("%d %s per %s (%d in the window from %s)",
		s.RateLimit, plural(int(s.RateLimit), "call", "calls"), durationText(s.RateWindow), s.RateWindowCalls, tableTime(s.RateWindowStart))
}

// listText joins a list for a table cell (each item escaped), cut at max
// bytes (0: no cut).
func listText(l []string, max int) string {
	if len(l) == 0 {
		return "-"
	}
	items := make([]string, len(l))
	for i, v := range l {
		items[i] = esc(v)
	}
	s := strings.Join(items, ",")
	if max > 0 && len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// cell makes text safe for one table cell: text with control characters
// (newlines, tabs, escape sequences) or bytes that are not UTF-8 is
// quoted, with those escaped.
func cell(s string) string {
	if strings.ContainsFunc(s, unsafeRune) || !utf8.ValidString(s) {
		return `"` + esc(s) + `"`
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
