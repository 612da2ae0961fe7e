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
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
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

// MarshalJSON writes the event with its rendered detail.
func (e auditEvent) MarshalJSON() ([]byte, error) {
	type plain store.AuditEvent
	p := plain(e.AuditEvent)
	p.At = p.At.UTC()
	p.Detail = humanize.AuditDetail(e.Detail)
	return marshal(p)
}

func auditEvents(l []store.AuditEvent) []auditEvent {
	out := make([]auditEvent, len(l))
	for i, e := range l {
		out[i] = auditEvent{e}
	}
	return out
}

// MarshalJSON writes the policy with its age in whole milliseconds
// (max_age_ms) where store.Policy's JSON has Go nanoseconds.
func (p retentionPolicy) MarshalJSON() ([]byte, error) {
	v := struct {
		Kind       store.PolicyKind `json:"kind"`
		MaxAgeMS   *int64           `json:"max_age_ms,omitempty"`
		KeepLast   int64            `json:"keep_last,omitempty"`
		MaxBytes   int64            `json:"max_bytes,omitempty"`
		ReadsCount bool             `json:"reads_count,omitempty"`
		UpdatedAt  string           `json:"updated_at,omitempty"`
		Facet      string           `json:"facet"`
		About      string           `json:"about"`
	}{Kind: p.Kind, KeepLast: p.KeepLast, MaxBytes: p.MaxBytes, ReadsCount: p.ReadsCount,
		UpdatedAt: humanize.Time(p.UpdatedAt), Facet: p.Facet, About: p.About}
	if k, _ := store.KindInfo(p.Kind); k.Param == store.ParamMaxAge {
		ms := humanize.Millis(p.MaxAge)
		v.MaxAgeMS = &ms
	}
	return marshal(v)
}

// MarshalJSON writes a limit with its amounts of money as exact decimals
// with the currency ("2.00 USD", tokens as integers) and no window start
// for a lifetime window.
func (l limitView) MarshalJSON() ([]byte, error) {
	amount := func(n int64) any {
		if l.Metric == store.MetricCost {
			return humanize.Money(n, l.Currency)
		}
		return n
	}
	v := struct {
		Scope       store.SpendScope  `json:"scope"`
		Metric      store.SpendMetric `json:"metric"`
		Window      store.SpendWindow `json:"window"`
		WindowStart string            `json:"window_start,omitempty"`
		WindowEnd   string            `json:"window_end,omitempty"`
		Currency    string            `json:"currency,omitempty"`
		Limit       any               `json:"limit"`
		Spent       any               `json:"spent"`
		Reserved    any               `json:"reserved"`
		Remaining   any               `json:"remaining"`
	}{Scope: l.Scope, Metric: l.Metric, Window: l.Window, Currency: l.Currency,
		Limit: amount(l.Limit), Spent: amount(l.Spent), Reserved: amount(l.Reserved), Remaining: amount(l.Remaining)}
	if l.Window != store.WindowLifetime {
		v.WindowStart = humanize.Time(l.WindowStart)
		v.WindowEnd = humanize.Time(l.Window.End(l.WindowStart))
	}
	return marshal(v)
}

// convJSON is a conversation's summary as the pages show it; its JSON
// gives the cost exactly, with its currency ("0.0432 USD") and in
// micro-units, where store.ConversationSummary's has the float the store
// keeps (which a sum of settled costs leaves as 0.039000000000000004).
type convJSON struct{ store.ConversationSummary }

// MarshalJSON writes the summary with its cost exact.
func (c convJSON) MarshalJSON() ([]byte, error) {
	type plain store.ConversationSummary
	micros := humanize.MicrosOf(c.TotalCost)
	return marshal(struct {
		plain
		TotalCost       string `json:"total_cost"`
		TotalCostMicros int64  `json:"total_cost_micros"`
	}{plain(c.ConversationSummary), humanize.Money(micros, "USD"), micros})
}

// convList is a list of conversation summaries whose JSON is convJSON's.
type convList []store.ConversationSummary

// MarshalJSON writes each summary as convJSON.
func (l convList) MarshalJSON() ([]byte, error) {
	out := make([]convJSON, len(l))
	for i, c := range l {
		out[i] = convJSON{c}
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
