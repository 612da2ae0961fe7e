package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// convHeader and convRow are the table of conversation summaries.
const convHeader = "ID\tNAME\tSTATE\tPARENT\tMESSAGES\tTOKENS\tCOST\tUPDATED"

func convRow(c store.ConversationSummary) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s", esc(c.ID), orDash(clip(c.Name, 30)), esc(string(c.State)),
		orDash(esc(c.ParentID)), c.MessageCount, c.TotalUsage.TotalTokens, usd(c.TotalCost), tableTime(c.UpdatedAt))
}

// convDetails writes a conversation's metadata as "key  value" lines.
func convDetails(w io.Writer, c store.ConversationSummary) error {
	tw := newTable(w)
	u := c.TotalUsage
	rows := [][2]string{
		{"name", orDash(cell(c.Name))},
		{"workspace", orDash(cell(c.Workspace))},
		{"state", esc(string(c.State))},
		{"parent", orDash(esc(c.ParentID))},
		{"model", orDash(cell(c.ModelName))},
		{"messages", fmt.Sprintf("%d (sessionctl messages %s)", c.MessageCount, esc(c.ID))},
		{"tokens", fmt.Sprintf("%d (%d prompt, %d completion)", u.TotalTokens, u.PromptTokens, u.CompletionTokens)},
		{"cost", usd(c.TotalCost)},
		{"version", fmt.Sprint(c.Version)},
		{"created", tableTime(c.CreatedAt)},
		{"updated", tableTime(c.UpdatedAt)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// usd writes a conversation's cost (US dollars, kept as a float) exactly
// as money is written everywhere: "0.0432 USD".
func usd(v float64) string { return humanize.Money(humanize.MicrosOf(v), "USD") }

// clip shortens s to at most n runes for a table cell, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return esc(s)
	}
	return esc(string(r[:n-1])) + "…"
}

// messageText summarizes a message's blocks on one line: text as is, tool
// calls as "[tool_use NAME]", results as "[tool_result: TEXT]".
func messageText(m store.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case store.BlockText:
			parts = append(parts, b.Text)
		case store.BlockReasoning:
			parts = append(parts, "[reasoning] "+b.Text)
		case store.BlockToolUse:
			parts = append(parts, fmt.Sprintf("[tool_use %s %s]", b.Name, compactJSON(b.Input)))
		case store.BlockToolResult:
			prefix := "[tool_result"
			if b.IsError != nil && *b.IsError {
				prefix = "[tool_error"
			}
			parts = append(parts, prefix+": "+b.ResultText()+"]")
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, " ")
}

// compactJSON is a JSON document on one line, its HTML escapes read as
// the characters they stand for (<b>, not \u003cb\u003e).
func compactJSON(raw []byte) string {
	return strings.Join(strings.Fields(string(humanize.JSONChars(raw))), " ")
}
