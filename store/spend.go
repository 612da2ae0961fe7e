package store

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spend limits: what a governed session, or an agent across all of its
// sessions, may consume in tokens and money. Before a model call the
// runtime reserves an upper bound (Spend.Reserve), which is checked against
// every applicable limit and counted in one transaction; after the call it
// settles the actual usage (Spend.Settle, releasing the difference) or
// releases the reservation (Spend.Release). A reservation that is neither
// settled nor released by its expiry (its process died) is released when
// it lapses, so nothing leaks.
//
// Money is an integer number of micro-units (millionths) of a currency
// code named on the limit: no floating point anywhere between a request
// and the database.

// SpendMetric names what a limit counts.
type SpendMetric string

// The metrics of a spend limit.
const (
	MetricInputTokens  SpendMetric = "input_tokens"
	MetricOutputTokens SpendMetric = "output_tokens"
	// MetricTotalTokens counts input plus output tokens.
	MetricTotalTokens SpendMetric = "total_tokens"
	// MetricCost counts money in micro-units of the limit's currency.
	MetricCost SpendMetric = "cost"
)

// Valid reports whether m is one of the defined metrics.
func (m SpendMetric) Valid() bool {
	switch m {
	case MetricInputTokens, MetricOutputTokens, MetricTotalTokens, MetricCost:
		return true
	}
	return false
}

// SpendWindow is the period a limit applies to. Windows other than the
// lifetime are calendar periods in UTC, by the store's (injected) clock: a
// new hour, day or month starts with nothing spent.
type SpendWindow string

// The windows of a spend limit.
const (
	// WindowLifetime never resets: the session's lifetime for a session
	// limit, all time for an agent limit.
	WindowLifetime SpendWindow = "lifetime"
	// WindowHour is the UTC clock hour.
	WindowHour SpendWindow = "hour"
	// WindowDay is the UTC calendar day.
	WindowDay SpendWindow = "day"
	// WindowMonth is the UTC calendar month.
	WindowMonth SpendWindow = "month"
)

// Valid reports whether w is one of the defined windows.
func (w SpendWindow) Valid() bool {
	switch w {
	case WindowLifetime, WindowHour, WindowDay, WindowMonth:
		return true
	}
	return false
}

// Start returns the start of the window that contains t: the Unix epoch
// for the lifetime, else the start of t's UTC hour, day or month.
func (w SpendWindow) Start(t time.Time) time.Time {
	t = t.UTC()
	switch w {
	case WindowHour:
		return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, time.UTC)
	case WindowDay:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case WindowMonth:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Unix(0, 0).UTC()
}

// End returns the end of the window that starts at start (the zero time
// for the lifetime, which does not end).
func (w SpendWindow) End(start time.Time) time.Time {
	switch w {
	case WindowHour:
		return start.Add(time.Hour)
	case WindowDay:
		return start.AddDate(0, 0, 1)
	case WindowMonth:
		return start.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// SpendScope says whom a limit binds: one governed session, or an agent
// across all of its sessions.
type SpendScope string

// The scopes of a spend limit.
const (
	ScopeSession SpendScope = "session"
	ScopeAgent   SpendScope = "agent"
)

// Bounds of spend requests.
const (
	// MaxSpendLimits bounds the limits of one session or one agent.
	MaxSpendLimits = 32
	// DefaultReservationTTL is the expiry of a reservation made without
	// one.
	DefaultReservationTTL = 10 * time.Minute
	// MinReservationTTL and MaxReservationTTL bound a reservation's
	// expiry; shorter ones are raised to the minimum.
	MinReservationTTL = time.Second
	MaxReservationTTL = 7 * 24 * time.Hour
	// MicrosPerUnit is the number of micro-units in one unit of a
	// currency.
	MicrosPerUnit = 1_000_000
)

// SpendLimit is one limit: at most Limit of Metric per Window.
type SpendLimit struct {
	Metric SpendMetric `json:"metric"`
	// Window defaults to WindowLifetime when empty.
	Window SpendWindow `json:"window"`
	// Limit is a number of tokens, or for MetricCost a number of
	// micro-units of Currency. 0 refuses every reservation that asks
	// for any of it.
	Limit int64 `json:"limit"`
	// Currency is required for MetricCost and must be empty otherwise: an
	// upper-case code of 3 to 8 letters or digits, starting with a letter
	// ("USD", "EUR", "CREDITS").
	Currency string `json:"currency,omitempty"`
}

// normalize validates l and applies the default window. The error is an
// *InvalidInputError.
func (l SpendLimit) normalize(field string) (SpendLimit, error) {
	if !l.Metric.Valid() {
		return l, Invalid(field+".metric", "unknown metric")
	}
	if l.Window == "" {
		l.Window = WindowLifetime
	}
	if !l.Window.Valid() {
		return l, Invalid(field+".window", "unknown window")
	}
	if l.Limit < 0 {
		return l, Invalid(field+".limit", "must not be negative")
	}
	if l.Metric == MetricCost {
		if err := ValidateCurrency(field+".currency", l.Currency); err != nil {
			return l, err
		}
	} else if l.Currency != "" {
		return l, Invalid(field+".currency", "only a cost limit has a currency")
	}
	return l, nil
}

// NormalizeSpendLimits validates a list of limits (at most
// MaxSpendLimits, no two with the same metric and window) and returns it
// with default windows applied. The error is an *InvalidInputError.
func NormalizeSpendLimits(field string, limits []SpendLimit) ([]SpendLimit, error) {
	if len(limits) > MaxSpendLimits {
		return nil, Invalid(field, "too many limits")
	}
	out := make([]SpendLimit, len(limits))
	for i, l := range limits {
		n, err := l.normalize(field + "[" + strconv.Itoa(i) + "]")
		if err != nil {
			return nil, err
		}
		for _, prev := range out[:i] {
			if prev.Metric == n.Metric && prev.Window == n.Window {
				return nil, Invalid(field, "two limits with the same metric and window")
			}
		}
		out[i] = n
	}
	return out, nil
}

// ValidateCurrency checks a currency code: 3 to 8 upper-case ASCII letters
// or digits, starting with a letter.
func ValidateCurrency(field, code string) error {
	if len(code) < 3 || len(code) > 8 {
		return Invalid(field, "must be a currency code of 3 to 8 characters")
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return Invalid(field, "must be upper-case letters and digits, starting with a letter")
		}
	}
	return nil
}

// SpendAmount is an amount of usage: tokens, and money in micro-units.
type SpendAmount struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CostMicros is money in micro-units of the request's currency.
	CostMicros int64 `json:"cost_micros"`
}

// TotalTokens is input plus output tokens (saturating).
func (a SpendAmount) TotalTokens() int64 { return satAdd(a.InputTokens, a.OutputTokens) }

// Of returns the part of a that metric m counts.
func (a SpendAmount) Of(m SpendMetric) int64 {
	switch m {
	case MetricInputTokens:
		return a.InputTokens
	case MetricOutputTokens:
		return a.OutputTokens
	case MetricTotalTokens:
		return a.TotalTokens()
	case MetricCost:
		return a.CostMicros
	}
	return 0
}

// IsZero reports whether a is nothing at all.
func (a SpendAmount) IsZero() bool { return a == SpendAmount{} }

// Within reports whether every part of a is at most the same part of b.
func (a SpendAmount) Within(b SpendAmount) bool {
	return a.InputTokens <= b.InputTokens && a.OutputTokens <= b.OutputTokens && a.CostMicros <= b.CostMicros
}

func (a SpendAmount) validate(field string) error {
	if a.InputTokens < 0 || a.OutputTokens < 0 || a.CostMicros < 0 {
		return Invalid(field, "must not be negative")
	}
	if a.InputTokens > math.MaxInt64-a.OutputTokens {
		return Invalid(field, "too many tokens")
	}
	return nil
}

// ReservationStatus is the state of a reservation.
type ReservationStatus string

// Reservation states. A reservation starts reserved (or is refused, and
// then only kept for replays of its request id) and ends settled,
// released, or expired (released when it lapsed unsettled).
const (
	ReservationReserved ReservationStatus = "reserved"
	ReservationSettled  ReservationStatus = "settled"
	ReservationReleased ReservationStatus = "released"
	ReservationExpired  ReservationStatus = "expired"
	ReservationRefused  ReservationStatus = "refused"
)

// Reservation is an upper bound on one model call's usage, counted against
// every limit that applied when it was made until it is settled, released
// or lapses.
type Reservation struct {
	// SessionID and ID (the request id) identify the reservation.
	SessionID string            `json:"session_id"`
	ID        string            `json:"id"`
	AgentID   string            `json:"agent_id"`
	Status    ReservationStatus `json:"status"`
	// Amount is the reserved upper bound.
	Amount   SpendAmount `json:"amount"`
	Currency string      `json:"currency,omitempty"`
	// Actual is the settled usage (zero until settled).
	Actual    SpendAmount `json:"actual"`
	CreatedAt time.Time   `json:"created_at"`
	ExpiresAt time.Time   `json:"expires_at"`
	// ClosedAt is when it was settled, released or found lapsed (zero
	// while reserved).
	ClosedAt time.Time `json:"closed_at,omitzero"`
}

// ReserveRequest asks to reserve an upper bound of usage on a governed
// session.
type ReserveRequest struct {
	// SessionID is the governed session. Required.
	SessionID string
	// AgentID, when not empty, must be the session's agent.
	AgentID string
	// RequestID identifies the reservation within the session; Settle
	// and Release name it. A retry with the same id returns the first
	// outcome (the reservation, or the refusal) and reserves nothing
	// more; the same id with another amount or currency is ErrConflict.
	// When empty, a random id is chosen (see Reservation.ID) and a retry
	// reserves again.
	RequestID string
	// Amount is the upper bound: the call must not use more.
	Amount SpendAmount
	// Currency names the currency of Amount.CostMicros; required when it
	// is not zero, and then it must be the currency of every cost limit
	// that applies.
	Currency string
	// TTL is how long the reservation holds before it lapses and is
	// released: DefaultReservationTTL when zero, raised to
	// MinReservationTTL when shorter, at most MaxReservationTTL. It must
	// be a whole number of milliseconds (the stored precision).
	TTL time.Duration
}

// Normalize validates r and applies the default TTL. The error is an
// *InvalidInputError.
func (r ReserveRequest) Normalize() (ReserveRequest, error) {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return r, err
	}
	if r.AgentID != "" {
		if err := ValidateName("agent_id", r.AgentID); err != nil {
			return r, err
		}
	}
	if r.RequestID != "" {
		if err := ValidateName("request_id", r.RequestID); err != nil {
			return r, err
		}
	}
	if err := r.Amount.validate("amount"); err != nil {
		return r, err
	}
	if r.Currency != "" || r.Amount.CostMicros > 0 {
		if err := ValidateCurrency("currency", r.Currency); err != nil {
			return r, err
		}
	}
	switch {
	case r.TTL < 0:
		return r, Invalid("ttl", "must not be negative")
	case r.TTL%time.Millisecond != 0:
		return r, Invalid("ttl", "must be a whole number of milliseconds")
	case r.TTL == 0:
		r.TTL = DefaultReservationTTL
	case r.TTL < MinReservationTTL:
		r.TTL = MinReservationTTL
	case r.TTL > MaxReservationTTL:
		return r, Invalid("ttl", "too long")
	}
	return r, nil
}

// SettleRequest records the actual usage of a reservation and releases
// the rest of it.
type SettleRequest struct {
	// SessionID and RequestID name the reservation. Required.
	SessionID string
	RequestID string
	// AgentID, when not empty, must be the session's agent.
	AgentID string
	// Actual is the usage; every part at most the reserved amount.
	Actual SpendAmount
	// Conversation, when not empty, names a conversation whose usage
	// this settle also records, in the same transaction: the tokens are
	// added to its total usage and, when the reservation's currency is
	// USD, the cost to its total cost (the conversation keeps US dollars).
	// A missing conversation fails the settle with ErrNotFound.
	Conversation string
}

// Validate checks the shape of r. The error is an *InvalidInputError.
func (r SettleRequest) Validate() error {
	if err := validateReservationRef(r.SessionID, r.RequestID, r.AgentID); err != nil {
		return err
	}
	if r.Conversation != "" {
		if err := ValidateID("conversation", r.Conversation); err != nil {
			return err
		}
	}
	return r.Actual.validate("actual")
}

// ReleaseRequest gives a reservation back unused.
type ReleaseRequest struct {
	// SessionID and RequestID name the reservation. Required.
	SessionID string
	RequestID string
	// AgentID, when not empty, must be the session's agent.
	AgentID string
}

// Validate checks the shape of r. The error is an *InvalidInputError.
func (r ReleaseRequest) Validate() error {
	return validateReservationRef(r.SessionID, r.RequestID, r.AgentID)
}

func validateReservationRef(session, request, agent string) error {
	if err := ValidateID("session_id", session); err != nil {
		return err
	}
	if err := ValidateName("request_id", request); err != nil {
		return err
	}
	if agent != "" {
		return ValidateName("agent_id", agent)
	}
	return nil
}

// LimitStatus is one limit with what is counted against it in its current
// window.
type LimitStatus struct {
	Scope SpendScope `json:"scope"`
	SpendLimit
	// WindowStart is the start of the current window (the Unix epoch for
	// the lifetime).
	WindowStart time.Time `json:"window_start"`
	// Spent is the settled usage of the window; Reserved what live
	// reservations made in the window hold.
	Spent    int64 `json:"spent"`
	Reserved int64 `json:"reserved"`
}

// Remaining is what a new reservation may still ask for (never negative).
func (l LimitStatus) Remaining() int64 { return max(0, l.Limit-l.Spent-l.Reserved) }

// SpendStatus is the spend of a session and of its agent, at a moment.
type SpendStatus struct {
	SessionID string `json:"session_id,omitempty"`
	AgentID   string `json:"agent_id"`
	// Limits are the session's limits, then its agent's, each in the
	// order they were set.
	Limits []LimitStatus `json:"limits"`
	// Live counts the reservations of the session (or, for an agent, of
	// all its sessions) that are still held.
	Live int64 `json:"live_reservations"`
}

// Spend is the spend facet of a Store: limits on tokens and money, and the
// reservations counted against them. Every decision is one transaction on
// the agent's rows, exact across goroutines, processes and restarts, and
// appended to the audit trail in that transaction. Every method is safe
// for concurrent use.
type Spend interface {
	// Reserve checks the session (as Use does: not found, agent
	// mismatch, closed, expired) and every limit that applies (the
	// session's, then its agent's) and counts the reservation against
	// all of them, or refuses with a *SpendLimitError naming the first
	// limit it would overshoot. Reservations of the agent that lapsed
	// are released first.
	Reserve(ctx context.Context, req ReserveRequest) (Reservation, error)
	// Settle records the actual usage of a reservation and releases the
	// rest. Settling a settled reservation again with the same usage
	// returns it unchanged; with another usage it is ErrConflict, as is
	// settling a released or refused one. A reservation that lapsed is
	// still settled: the usage happened and is counted in the windows the
	// reservation was made in, even past the limit (choose a TTL longer
	// than the longest call).
	Settle(ctx context.Context, req SettleRequest) (Reservation, error)
	// Release gives a reservation back unused. Releasing it again, or
	// releasing one that lapsed, returns it unchanged; releasing a
	// settled one is ErrConflict.
	Release(ctx context.Context, req ReleaseRequest) (Reservation, error)
	// Reservation returns one reservation.
	Reservation(ctx context.Context, sessionID, requestID string) (Reservation, error)
	// SetAgentLimits replaces the agent-wide limits of agentID (an empty
	// list removes them). A limit whose metric and window stay keeps its
	// counters; a new one starts from what is reserved and spent after
	// it is set.
	SetAgentLimits(ctx context.Context, agentID string, limits []SpendLimit) error
	// Status returns a session's limits and its agent's, with what is
	// spent and reserved in their current windows. Reservations that
	// lapsed count as released.
	Status(ctx context.Context, sessionID string) (SpendStatus, error)
	// AgentStatus is Status for the agent-wide limits alone.
	AgentStatus(ctx context.Context, agentID string) (SpendStatus, error)
	// ReleaseExpired releases every reservation that lapsed, of every
	// agent, in one transaction, and returns how many (Reserve and
	// Cleanup do it too).
	ReleaseExpired(ctx context.Context) (int64, error)
	// Export returns the spend state exactly as stored (limits with their
	// counters, reservations with what they hold): everything, or that of
	// the given sessions (their limits, their agents' limits and their
	// reservations). The export side of an import.
	Export(ctx context.Context, sessionIDs []string) (SpendRecords, error)
	// ExportEach is Export without holding the records in memory: from one
	// read snapshot, it calls limit for each limit, then reservation for
	// each reservation, in Export's order, as the rows are read. An error
	// from either stops the export and is returned; a nil callback is
	// ErrInvalidInput.
	ExportEach(ctx context.Context, sessionIDs []string,
		limit func(SpendLimitRecord) error, reservation func(ReservationRecord) error) error
	// Restore inserts exported spend state exactly as given, in one
	// transaction, and returns how many limits and reservations it
	// inserted. The sessions must exist. A limit or reservation that
	// exists (by id, or an agent's limit of the same metric and window)
	// fails the whole request with ErrConflict unless req.SkipExisting
	// leaves it alone; invalid records are ErrInvalidInput. Either way
	// nothing is written.
	Restore(ctx context.Context, req SpendRestoreRequest) (int64, error)
}

// SpendRecords is spend state as stored, for export and import.
type SpendRecords struct {
	Limits       []SpendLimitRecord  `json:"limits"`
	Reservations []ReservationRecord `json:"reservations"`
}

// SpendLimitRecord is a stored limit: its id (which reservations' holds
// name), its owner (SessionID empty for an agent's limit), its position
// among its owner's limits, and its current window's counters.
type SpendLimitRecord struct {
	ID        string `json:"id"`
	AgentID   string `json:"agent_id"`
	SessionID string `json:"session_id,omitempty"`
	Position  int64  `json:"position"`
	SpendLimit
	WindowStart time.Time `json:"window_start"`
	Spent       int64     `json:"spent"`
	Reserved    int64     `json:"reserved"`
}

// SpendHold is what a reservation holds of one limit: in the window that
// started at WindowStart.
type SpendHold struct {
	LimitID     string    `json:"limit_id"`
	WindowStart time.Time `json:"window_start"`
}

// ReservationRecord is a stored reservation with what it holds and, for a
// refused one, the refusal a replay returns (JSON).
type ReservationRecord struct {
	Reservation
	Holds   []SpendHold     `json:"holds"`
	Refusal json.RawMessage `json:"refusal,omitempty"`
}

// SpendRestoreRequest puts exported spend state back (see Spend.Restore).
type SpendRestoreRequest struct {
	Records      SpendRecords
	SkipExisting bool
}

// Validate checks the records' shapes. The error is an
// *InvalidInputError.
func (r SpendRestoreRequest) Validate() error {
	ids := map[string]bool{}
	for i, l := range r.Records.Limits {
		f := "limits[" + strconv.Itoa(i) + "]"
		if err := ValidateID(f+".id", l.ID); err != nil {
			return err
		}
		if ids[l.ID] {
			return Invalid(f+".id", "appears twice")
		}
		ids[l.ID] = true
		if err := ValidateName(f+".agent_id", l.AgentID); err != nil {
			return err
		}
		if l.SessionID != "" {
			if err := ValidateID(f+".session_id", l.SessionID); err != nil {
				return err
			}
		}
		if _, err := l.SpendLimit.normalize(f); err != nil {
			return err
		}
		if l.Window == "" || l.Spent < 0 || l.Reserved < 0 || l.Position < 0 || !millis(l.WindowStart) {
			return Invalid(f, "window, counters, position or window start out of range")
		}
	}
	for i, res := range r.Records.Reservations {
		f := "reservations[" + strconv.Itoa(i) + "]"
		if err := validateReservationRef(res.SessionID, res.ID, res.AgentID); err != nil {
			return err
		}
		if res.AgentID == "" {
			return Invalid(f+".agent_id", "must not be empty")
		}
		switch res.Status {
		case ReservationReserved, ReservationSettled, ReservationReleased, ReservationExpired, ReservationRefused:
		default:
			return Invalid(f+".status", "unknown status")
		}
		if err := res.Amount.validate(f + ".amount"); err != nil {
			return err
		}
		if err := res.Actual.validate(f + ".actual"); err != nil {
			return err
		}
		if res.Currency != "" {
			if err := ValidateCurrency(f+".currency", res.Currency); err != nil {
				return err
			}
		}
		if !millis(res.CreatedAt) || !millis(res.ExpiresAt) || !millis(res.ClosedAt) {
			return Invalid(f, "times must be whole milliseconds")
		}
		if (res.Status == ReservationRefused) != (len(res.Refusal) > 0) || (len(res.Refusal) > 0 && !json.Valid(res.Refusal)) {
			return Invalid(f+".refusal", "a refused reservation, and only one, carries its refusal as JSON")
		}
		for _, h := range res.Holds {
			if err := ValidateID(f+".holds.limit_id", h.LimitID); err != nil {
				return err
			}
		}
	}
	return nil
}

// ErrSpendLimitExceeded: a reservation would overshoot a spend limit.
var ErrSpendLimitExceeded = errors.New("spend limit exceeded")

// SpendLimitError reports the first limit a refused reservation would
// overshoot: Spent + Reserved + Requested > Limit in the limit's current
// window.
type SpendLimitError struct {
	SessionID   string      `json:"session_id"`
	AgentID     string      `json:"agent_id"`
	Scope       SpendScope  `json:"scope"`
	Metric      SpendMetric `json:"metric"`
	Window      SpendWindow `json:"window"`
	WindowStart time.Time   `json:"window_start"`
	Currency    string      `json:"currency,omitempty"`
	Limit       int64       `json:"limit"`
	Spent       int64       `json:"spent"`
	Reserved    int64       `json:"reserved"`
	Requested   int64       `json:"requested"`
}

// Error returns the constant text of ErrSpendLimitExceeded; the details
// stay in the fields.
func (e *SpendLimitError) Error() string { return ErrSpendLimitExceeded.Error() }

// Unwrap makes errors.Is(err, ErrSpendLimitExceeded) true.
func (e *SpendLimitError) Unwrap() error { return ErrSpendLimitExceeded }

// ParseMicros parses a decimal amount of money ("2.50", "0.000001",
// "1200") into micro-units, exactly: at most 6 decimals, no sign, no
// exponent, no floating point.
func ParseMicros(s string) (int64, error) {
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") {
		return 0, Invalid("amount", "must be a decimal number")
	}
	if len(frac) > 6 {
		return 0, Invalid("amount", "more than 6 decimals")
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, Invalid("amount", "must be a decimal number")
			}
		}
	}
	var units int64
	if whole != "" {
		u, err := strconv.ParseInt(whole, 10, 64)
		if err != nil || u > math.MaxInt64/MicrosPerUnit {
			return 0, Invalid("amount", "too large")
		}
		units = u
	}
	var micros int64
	if frac != "" {
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		micros = f
	}
	if units*MicrosPerUnit > math.MaxInt64-micros {
		return 0, Invalid("amount", "too large")
	}
	return units*MicrosPerUnit + micros, nil
}

// FormatMicros formats micro-units as a decimal amount with the trailing
// zeros of the fraction removed ("2.5", "0.000001", "12").
func FormatMicros(micros int64) string {
	sign := ""
	u := uint64(micros)
	if micros < 0 {
		sign, u = "-", uint64(-micros)
	}
	whole, frac := u/MicrosPerUnit, u%MicrosPerUnit
	if frac == 0 {
		return sign + strconv.FormatUint(whole, 10)
	}
	f := strings.TrimRight(strconv.FormatUint(frac+MicrosPerUnit, 10)[1:], "0")
	return sign + strconv.FormatUint(whole, 10) + "." + f
}
