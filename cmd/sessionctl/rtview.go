package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/agentstore/sessionstore/store"
)

// rtHeader and rtRow are the table of runtime sessions.
const rtHeader = "ID\tAGENT\tMODE\tOWNER\tOVERRIDES\tTURN\tLAST ACTIVE"

func rtRow(s store.RuntimeSession) string {
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", esc(s.ID), esc(s.AgentAlias), esc(string(s.ChatMode)), orDash(esc(s.OwnerID)),
		overridesText(s.Overrides), turnText(s.Turn), tableTime(s.LastActive))
}

// rtDetails writes a runtime session as "key  value" lines.
func rtDetails(w io.Writer, s store.RuntimeSession, uploads, uploadBytes int64) error {
	tw := newTable(w)
	rows := [][2]string{
		{"agent", esc(s.AgentAlias)},
		{"workspace", cell(s.WorkspaceDir)},
		{"chat mode", esc(string(s.ChatMode))},
		{"owner", orDash(esc(s.OwnerID))},
		{"overrides", overridesText(s.Overrides)},
		{"created", tableTime(s.CreatedAt)},
		{"last active", tableTime(s.LastActive)},
		{"turn", turnDetails(s.Turn)},
		{"uploads", fmt.Sprintf("%d, %s (sessionctl uploads %s)", uploads, humanBytes(uploadBytes), esc(s.ID))},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// overridesText is "model=m provider=p temperature=0.2", or "-".
func overridesText(o store.Overrides) string {
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
	return orDash(s)
}

// turnText is the turn column: "#3 running", "#2 done", "#4 cancelled
// (client_rpc)", "#5 stale (its process stopped renewing it)", "-"
// before the first turn.
func turnText(t store.TurnState) string {
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
	s := turnText(t)
	if t.Generation == 0 {
		return "none yet"
	}
	if !t.StartedAt.IsZero() {
		s += ", started " + tableTime(t.StartedAt)
	}
	if t.Owner != "" {
		s += " by " + esc(t.Owner)
	}
	switch {
	case t.LeaseExpiresAt.IsZero():
	case t.Stale:
		s += ", lease lapsed " + tableTime(t.LeaseExpiresAt)
	default:
		s += ", lease until " + tableTime(t.LeaseExpiresAt)
	}
	return s
}
