package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// StateTable writes keys and values of a state, sorted by key; scope is
// the column of the scope, or "" to leave it out.
func StateTable(w io.Writer, m map[string]json.RawMessage, scope string) error {
	if len(m) == 0 {
		_, err := fmt.Fprintln(w, "  (none)")
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	tw := tablefmt.NewWriter(w)
	for _, k := range keys {
		if scope != "" {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", scope, esc(k), tablefmt.Clip(JSONText(m[k]), 80))
		} else {
			fmt.Fprintf(tw, "  %s\t%s\n", esc(k), tablefmt.Clip(JSONText(m[k]), 80))
		}
	}
	return tw.Flush()
}

// EventTable writes agent events as a table.
func EventTable(w io.Writer, events []store.AgentEvent) error {
	return PrintListing(w, io.Discard, false, Listing[store.AgentEvent]{Items: events, None: "no events", Header: "SEQ\tID\tINVOCATION\tTIMESTAMP\tDATA",
		Row: func(e store.AgentEvent) string {
			return fmt.Sprintf("%d\t%s\t%s\t%s\t%s", e.Seq, esc(e.ID), tablefmt.OrDash(esc(e.InvocationID)), e.Timestamp.UTC().Format(EventTimeLayout), tablefmt.Clip(JSONText(e.Data), 60))
		}})
}

// JSONText is a stored JSON value on one line, without insignificant
// white space, its HTML escapes read as the characters they stand for
// (an application's json.Marshal writes <b> as \u003cb\u003e).
func JSONText(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return CompactJSON(raw)
	}
	return string(humanize.JSONChars(b.Bytes()))
}

// EventTimeLayout shows an agent event's time to the microsecond, the
// precision the store keeps.
const EventTimeLayout = "2006-01-02 15:04:05.000000Z"
