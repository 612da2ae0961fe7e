// Package view holds the JSON views of the store's values that people
// and programs read: sessionctl's --json output and the console's JSON
// twins write the same ones, so that a value reads alike on every
// surface. The units are package humanize's: durations in whole
// milliseconds (*_ms), times RFC 3339 UTC and absent where there is none,
// money as exact decimals with the currency, from the integer micro-units
// the store keeps, never through a float. A governed session's view is
// archive.GovernedSession, the record of export files.
//
// The store's own types keep their JSON (export files carry it); these
// views are for reading, and nothing parses them back.
package view

import (
	"encoding/json"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// AuditEvent is an audit event: its detail as humanize.AuditDetail renders
// it (money as decimals with the currency, times RFC 3339, no start for a
// lifetime window). The hashes cover the detail as stored, which export
// files keep.
type AuditEvent struct {
	AgentID string `json:"agent_id"`
	// Chain is the session of a session chain, left out for the agent's
	// own chain.
	Chain     string          `json:"chain,omitempty"`
	Seq       int64           `json:"seq"`
	At        string          `json:"at"`
	Kind      string          `json:"kind"`
	Outcome   string          `json:"outcome"`
	SessionID string          `json:"session_id,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	Detail    json.RawMessage `json:"detail"`
	PrevHash  string          `json:"prev_hash"`
	Hash      string          `json:"hash"`
}

// NewAuditEvent returns e's view.
func NewAuditEvent(e store.AuditEvent) AuditEvent {
	return AuditEvent{AgentID: e.AgentID, Chain: e.Chain, Seq: e.Seq, At: humanize.Time(e.At), Kind: string(e.Kind),
		Outcome: e.Outcome, SessionID: e.SessionID, RequestID: e.RequestID, Detail: humanize.AuditDetail(e.Detail),
		PrevHash: e.PrevHash, Hash: e.Hash}
}

// AuditEvents returns the views of l, [] for none.
func AuditEvents(l []store.AuditEvent) []AuditEvent {
	out := make([]AuditEvent, len(l))
	for i, e := range l {
		out[i] = NewAuditEvent(e)
	}
	return out
}

// Policy is a retention policy with its age in whole milliseconds
// (max_age_ms, present for the kinds that take an age), where
// store.Policy's own JSON (the export format) carries Go nanoseconds.
type Policy struct {
	Kind       store.PolicyKind `json:"kind"`
	MaxAgeMS   *int64           `json:"max_age_ms,omitempty"`
	KeepLast   int64            `json:"keep_last,omitempty"`
	MaxBytes   int64            `json:"max_bytes,omitempty"`
	ReadsCount bool             `json:"reads_count,omitempty"`
	UpdatedAt  string           `json:"updated_at,omitempty"`
}

// NewPolicy returns p's view.
func NewPolicy(p store.Policy) Policy {
	v := Policy{Kind: p.Kind, KeepLast: p.KeepLast, MaxBytes: p.MaxBytes, ReadsCount: p.ReadsCount, UpdatedAt: humanize.Time(p.UpdatedAt)}
	if k, _ := store.KindInfo(p.Kind); k.Param == store.ParamMaxAge {
		ms := humanize.Millis(p.MaxAge)
		v.MaxAgeMS = &ms
	}
	return v
}

// Policies returns the views of ps, [] for none.
func Policies(ps []store.Policy) []Policy {
	out := make([]Policy, len(ps))
	for i, p := range ps {
		out[i] = NewPolicy(p)
	}
	return out
}

// Limit is a spend limit with what is spent and reserved in its current
// window. Amounts of tokens are integers; amounts of money exact decimals
// with their currency ("1.00 USD"). A lifetime window has no start or end.
type Limit struct {
	Scope       string `json:"scope"`
	Metric      string `json:"metric"`
	Window      string `json:"window"`
	WindowStart string `json:"window_start,omitempty"`
	WindowEnd   string `json:"window_end,omitempty"`
	Currency    string `json:"currency,omitempty"`
	// Limit, Spent, Reserved and Remaining are an int64 (tokens) or a
	// string (money).
	Limit     any `json:"limit"`
	Spent     any `json:"spent"`
	Reserved  any `json:"reserved"`
	Remaining any `json:"remaining"`
}

// NewLimit returns l's view.
func NewLimit(l store.LimitStatus) Limit {
	amount := func(n int64) any {
		if l.Metric == store.MetricCost {
			return humanize.Money(n, l.Currency)
		}
		return n
	}
	v := Limit{Scope: string(l.Scope), Metric: string(l.Metric), Window: string(l.Window), Currency: l.Currency,
		Limit: amount(l.Limit), Spent: amount(l.Spent), Reserved: amount(l.Reserved), Remaining: amount(l.Remaining())}
	if l.Window != store.WindowLifetime {
		v.WindowStart = humanize.Time(l.WindowStart)
		v.WindowEnd = humanize.Time(l.Window.End(l.WindowStart))
	}
	return v
}

// Spend is the spend of a governed session or an agent: each limit with
// what is spent and reserved in its current window ([] for none), and
// the reservations still held.
type Spend struct {
	Limits []Limit `json:"limits"`
	Live   int64   `json:"live_reservations"`
}

// NewSpend returns st's view.
func NewSpend(st store.SpendStatus) Spend {
	v := Spend{Limits: make([]Limit, len(st.Limits)), Live: st.Live}
	for i, l := range st.Limits {
		v.Limits[i] = NewLimit(l)
	}
	return v
}
