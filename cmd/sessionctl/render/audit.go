package render

import (
	"fmt"
	"io"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// AuditEvents writes a page of audit events as a table, then the cursor
// of the next page (next, when there is one).
func AuditEvents(w io.Writer, events []store.AuditEvent, next string) error {
	tw := tablefmt.NewWriter(w)
	fmt.Fprintln(tw, "AGENT\tCHAIN\tSEQ\tAT\tKIND\tOUTCOME\tSESSION\tREQUEST\tDETAIL")
	for _, e := range events {
		chain := "agent"
		if e.Chain != "" {
			chain = "session"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", tablefmt.Cell(e.AgentID), chain, e.Seq, tablefmt.Time(e.At), e.Kind, tablefmt.Cell(e.Outcome),
			tablefmt.OrDash(tablefmt.Cell(e.SessionID)), tablefmt.OrDash(tablefmt.Cell(e.RequestID)), tablefmt.Cell(tablefmt.Clip(string(humanize.AuditDetail(e.Detail)), 60)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "more: --after %s\n", next)
	}
	return nil
}

// AuditReport writes what audit verify found: each problem, then the
// chains and events checked and the digest over every chain head.
func AuditReport(w io.Writer, rep store.AuditReport) {
	for _, p := range rep.Problems {
		chain := "agent " + tablefmt.Cell(p.AgentID)
		if p.Chain != "" {
			chain += " session " + tablefmt.Cell(p.Chain)
		}
		fmt.Fprintf(w, "%s: event %d %s: %s\n", chain, p.Seq, p.Problem, tablefmt.Cell(p.Reason))
	}
	verdict := "verified"
	if !rep.OK() {
		verdict = fmt.Sprintf("checked, %d did not verify", len(rep.Problems))
	}
	fmt.Fprintf(w, "%d %s with %d %s %s\ndigest %s\n", rep.Chains, clitext.Plural(int(rep.Chains), "chain", "chains"),
		rep.Events, clitext.Plural(int(rep.Events), "event", "events"), verdict, rep.Digest)
}
