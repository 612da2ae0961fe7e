package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// GovHeader and GovRow are the table of governed sessions.
const GovHeader = "ID\tAGENT\tSTATUS\tCALLS\tRATE\tTOOLS\tEXPIRES"

// GovRow is the row of governed session s under GovHeader.
func GovRow(s store.Session) string {
	return fmt.Sprintf("%s\t%s\t%s\t%d/%d\t%s\t%s\t%s", esc(s.ID), esc(s.AgentID), s.Status, s.CallsMade, s.CallBudget,
		rateText(s), tablefmt.List(s.AuthorizedTools, 40), tablefmt.Time(s.ExpiresAt))
}

// GovDetails writes one governed session as aligned "key  value" lines.
func GovDetails(w io.Writer, s store.Session) error {
	tw := tablefmt.NewWriter(w)
	rows := [][2]string{
		{"id", esc(s.ID)},
		{"agent", esc(s.AgentID)},
		{"status", string(s.Status)},
		{"calls", fmt.Sprintf("%d of %d made, %d remaining", s.CallsMade, s.CallBudget, s.RemainingBudget())},
		{"tools", tablefmt.List(s.AuthorizedTools, 0)},
		{"credentials", tablefmt.List(s.AuthorizedCredentials, 0)},
		{"rate limit", rateDetails(s)},
		{"time limit", humanize.Duration(s.TimeLimit)},
		{"created", tablefmt.Time(s.CreatedAt)},
		{"expires", tablefmt.Time(s.ExpiresAt)},
		{"sensitivity", esc(string(s.Sensitivity))},
		{"intent", tablefmt.OrDash(tablefmt.Cell(s.DeclaredIntent))},
		{"delegation", tablefmt.List(s.DelegationChain, 0)},
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
	return fmt.Sprintf("%d per %s", s.RateLimit, humanize.Duration(s.RateWindow))
}

func rateDetails(s store.Session) string {
	if s.RateLimit == 0 {
		return "none"
	}
	return fmt.Sprintf("%d %s per %s (%d in the window from %s)",
		s.RateLimit, clitext.Plural(int(s.RateLimit), "call", "calls"), humanize.Duration(s.RateWindow), s.RateWindowCalls, tablefmt.Time(s.RateWindowStart))
}

// RuntimeHeader and RuntimeRow are the table of runtime sessions.
const RuntimeHeader = "ID\tAGENT\tMODE\tOWNER\tOVERRIDES\tTURN\tLAST ACTIVE"

// RuntimeRow is the row of runtime session s under RuntimeHeader.
func RuntimeRow(s store.RuntimeSession) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", esc(s.ID), esc(s.AgentAlias), esc(string(s.ChatMode)), tablefmt.OrDash(esc(s.OwnerID)),
		Overrides(s.Overrides), Turn(s.Turn), tablefmt.Time(s.LastActive))
}

// RuntimeDetails writes a runtime session as "key  value" lines.
func RuntimeDetails(w io.Writer, s store.RuntimeSession, uploads, uploadBytes int64) error {
	tw := tablefmt.NewWriter(w)
	rows := [][2]string{
		{"agent", esc(s.AgentAlias)},
		{"workspace", tablefmt.Cell(s.WorkspaceDir)},
		{"chat mode", esc(string(s.ChatMode))},
		{"owner", tablefmt.OrDash(esc(s.OwnerID))},
		{"overrides", Overrides(s.Overrides)},
		{"created", tablefmt.Time(s.CreatedAt)},
		{"last active", tablefmt.Time(s.LastActive)},
		{"turn", turnDetails(s.Turn)},
		{"uploads", fmt.Sprintf("%d, %s (sessionctl uploads %s)", uploads, humanize.Bytes(uploadBytes), esc(s.ID))},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// Overrides is "model=m provider=p temperature=0.2", or "-".
func Overrides(o store.Overrides) string {
	s := ""
	add := func(k, v string) {
		if s != "" {
			s += " "
		}
		s += k + "=" + esc(v)
	}
	if o.Provider != nil {
		add("provider", *o.Provider)
	}
	if o.Model != nil {
		add("model", *o.Model)
	}
	if o.Temperature != nil {
		add("temperature", strconv.FormatFloat(*o.Temperature, 'g', -1, 64))
	}
	return tablefmt.OrDash(s)
}

// Turn is the turn column: "#3 running", "#2 done", "#4 cancelled
// (client_rpc)", "#5 stale (its process stopped renewing it)", "-"
// before the first turn.
func Turn(t store.TurnState) string {
	if t.Generation == 0 {
		return "-"
	}
	state := "done"
	switch {
	case t.Running && t.Stale:
		state = "stale (its process stopped renewing it)"
	case t.Running:
		state = "running"
	}
	if t.CancelCause != "" {
		state = "cancelled (" + string(t.CancelCause) + ")"
	}
	return fmt.Sprintf("#%d %s", t.Generation, state)
}

func turnDetails(t store.TurnState) string {
	s := Turn(t)
	if t.Generation == 0 {
		return "none yet"
	}
	if !t.StartedAt.IsZero() {
		s += ", started " + tablefmt.Time(t.StartedAt)
	}
	if t.Owner != "" {
		s += " by " + esc(t.Owner)
	}
	switch {
	case t.LeaseExpiresAt.IsZero():
	case t.Stale:
		s += ", lease lapsed " + tablefmt.Time(t.LeaseExpiresAt)
	default:
		s += ", lease until " + tablefmt.Time(t.LeaseExpiresAt)
	}
	return s
}

// ConvHeader and ConvRow are the table of conversation summaries.
const ConvHeader = "ID\tNAME\tSTATE\tPARENT\tMESSAGES\tTOKENS\tCOST\tUPDATED"

// ConvRow is the row of conversation c under ConvHeader.
func ConvRow(c store.ConversationSummary) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s", esc(c.ID), tablefmt.OrDash(tablefmt.Clip(c.Name, 30)), esc(string(c.State)),
		tablefmt.OrDash(esc(c.ParentID)), c.MessageCount, c.TotalUsage.TotalTokens, USD(c.TotalCost), tablefmt.Time(c.UpdatedAt))
}

// ConvDetails writes a conversation's metadata as "key  value" lines.
func ConvDetails(w io.Writer, c store.ConversationSummary) error {
	tw := tablefmt.NewWriter(w)
	u := c.TotalUsage
	rows := [][2]string{
		{"name", tablefmt.OrDash(tablefmt.Cell(c.Name))},
		{"workspace", tablefmt.OrDash(tablefmt.Cell(c.Workspace))},
		{"state", esc(string(c.State))},
		{"parent", tablefmt.OrDash(esc(c.ParentID))},
		{"model", tablefmt.OrDash(tablefmt.Cell(c.ModelName))},
		{"messages", fmt.Sprintf("%d (sessionctl messages %s)", c.MessageCount, esc(c.ID))},
		{"tokens", fmt.Sprintf("%d (%d prompt, %d completion)", u.TotalTokens, u.PromptTokens, u.CompletionTokens)},
		{"cost", USD(c.TotalCost)},
		{"version", fmt.Sprint(c.Version)},
		{"created", tablefmt.Time(c.CreatedAt)},
		{"updated", tablefmt.Time(c.UpdatedAt)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// USD writes a conversation's cost (US dollars, kept as a float) exactly
// as money is written everywhere: "0.0432 USD".
func USD(v float64) string { return humanize.Money(humanize.MicrosOf(v), "USD") }

// MessageText summarizes a message's blocks on one line: text as is, tool
// calls as "[tool_use NAME]", results as "[tool_result: TEXT]".
func MessageText(m store.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case store.BlockText:
			parts = append(parts, b.Text)
		case store.BlockReasoning:
			parts = append(parts, "[reasoning] "+b.Text)
		case store.BlockToolUse:
			parts = append(parts, fmt.Sprintf("[tool_use %s %s]", b.Name, CompactJSON(b.Input)))
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

// CompactJSON is a JSON document on one line, its HTML escapes read as
// the characters they stand for (<b>, not \u003cb\u003e).
func CompactJSON(raw []byte) string {
	return strings.Join(strings.Fields(string(humanize.JSONChars(raw))), " ")
}
