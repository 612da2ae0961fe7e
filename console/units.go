package console

// The JSON twins' views of the store's values that carry a unit: every
// duration in whole milliseconds (*_ms), every time RFC 3339 UTC and
// absent when there is none, money as exact decimals with the currency
// (package humanize, the rendering the CLI shares). The store's own JSON
// (export files) is left as it is.

import (
	"bytes"
	"encoding/json"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

// govSession is a governed session as the pages show it; its JSON is
// archive.GovernedSession's, the one view of a governed session that
// sessionctl and export files write too.
type govSession struct{ store.Session }

// MarshalJSON writes the session as archive.GovernedSession.
func (s govSession) MarshalJSON() ([]byte, error) {
	return marshal(archive.NewGovernedSession(s.Session))
}

// auditEvent is an audit event as the pages show it: its detail as
// humanize.AuditDetail renders it (money as decimals with the currency,
// times RFC 3339, no start for a lifetime window). The hashes cover the
// detail as stored, which export files keep.
type auditEvent struct{ store.AuditEvent }

// MarshalJSON writes the event as view.AuditEvent.
func (e auditEvent) MarshalJSON() ([]byte, error) { return marshal(view.NewAuditEvent(e.AuditEvent)) }

func auditEvents(l []store.AuditEvent) []auditEvent {
	out := make([]auditEvent, len(l))
	for i, e := range l {
		out[i] = auditEvent{e}
	}
	return out
}

// MarshalJSON writes the policy as view.Policy (its age in whole
// milliseconds, max_age_ms, where store.Policy's JSON has Go
// nanoseconds), with its facet and description.
func (p retentionPolicy) MarshalJSON() ([]byte, error) {
	return marshal(struct {
		view.Policy
		Facet string `json:"facet"`
		About string `json:"about"`
	}{view.NewPolicy(p.Policy), p.Facet, p.About})
}

// MarshalJSON writes the spend as view.Spend (each limit as view.Limit:
// amounts of money as exact decimals with the currency, "2.00 USD", tokens
// as integers, no window start or end for a lifetime window), with the
// live reservations the page lists, each as view.Reservation.
func (v spendView) MarshalJSON() ([]byte, error) {
	out := struct {
		view.Spend
		Reservations []view.Reservation `json:"reservations"`
		More         bool               `json:"more_reservations,omitempty"`
	}{view.NewSpend(v.status), make([]view.Reservation, len(v.Reservations)), v.More}
	for i, r := range v.Reservations {
		out.Reservations[i] = view.NewReservation(r)
	}
	return marshal(out)
}

// rtJSON is a runtime session as the pages show it (the templates read
// the session); its JSON is view.RuntimeSession's, the one sessionctl's
// --json writes.
type rtJSON struct{ store.RuntimeSession }

// MarshalJSON writes the session as view.RuntimeSession.
func (s rtJSON) MarshalJSON() ([]byte, error) {
	return marshal(view.NewRuntimeSession(s.RuntimeSession))
}

// rtList is a list of runtime sessions whose JSON is
// view.RuntimeSession's.
type rtList []store.RuntimeSession

// MarshalJSON writes each session as view.RuntimeSession.
func (l rtList) MarshalJSON() ([]byte, error) {
	out := make([]view.RuntimeSession, len(l))
	for i, s := range l {
		out[i] = view.NewRuntimeSession(s)
	}
	return marshal(out)
}

// convJSON is a conversation's summary as the pages show it (the
// templates read the summary); its JSON is view.Conversation's, the one
// sessionctl's --json writes: the cost exact, with its currency ("0.0432
// USD") and in micro-units, where store.ConversationSummary's has the
// float the store keeps (which a sum of settled costs leaves as
// 0.039000000000000004).
type convJSON struct{ store.ConversationSummary }

// MarshalJSON writes the summary as view.Conversation.
func (c convJSON) MarshalJSON() ([]byte, error) {
	return marshal(view.NewConversation(c.ConversationSummary))
}

// convList is a list of conversation summaries whose JSON is
// view.Conversation's.
type convList []store.ConversationSummary

// MarshalJSON writes each summary as view.Conversation.
func (l convList) MarshalJSON() ([]byte, error) {
	out := make([]view.Conversation, len(l))
	for i, c := range l {
		out[i] = view.NewConversation(c)
	}
	return marshal(out)
}

// marshal is json.Marshal without the HTML escapes (\u003c for <), as the
// JSON twins are written (console.render).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
