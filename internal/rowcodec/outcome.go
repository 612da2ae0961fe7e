package rowcodec

import (
	"encoding/json"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

// Outcome kinds a backend records for a Use that carried a request id, so
// that a replay returns the first outcome. The strings are stored: never
// change them.
const (
	UseOutcomeOK      = "ok"
	UseOutcomeClosed  = "closed"
	UseOutcomeExpired = "expired"
	UseOutcomeBudget  = "budget"
	UseOutcomeTool    = "tool"
	UseOutcomeRate    = "rate"
)

// EncodeUseOutcome turns the outcome of a Use (nil for success, or one of
// the refusals a session itself decides: closed, expired, budget, tool,
// rate) into its stored form: a kind and a JSON detail. Other errors (not
// found, agent mismatch, storage failures) are never recorded; for them ok
// is false.
func EncodeUseOutcome(refusal error) (kind, detail string, ok bool) {
	var v any
	switch e := refusal.(type) {
	case nil:
		return UseOutcomeOK, "{}", true
	case *store.ClosedError:
		kind, v = UseOutcomeClosed, e
	case *store.ExpiredError:
		kind, v = UseOutcomeExpired, e
	case *store.BudgetError:
		kind, v = UseOutcomeBudget, e
	case *store.ToolError:
		kind, v = UseOutcomeTool, e
	case *store.RateLimitError:
		kind, v = UseOutcomeRate, e
	default:
		return "", "", false
	}
	b, err := json.Marshal(v)
	if err != nil { // plain structs of strings, numbers and times
		return "", "", false
	}
	return kind, string(b), true
}

// DecodeUseOutcome rebuilds the typed refusal recorded by EncodeUseOutcome.
// kind must not be UseOutcomeOK. A record it cannot read is
// store.ErrCorrupt.
func DecodeUseOutcome(kind, detail string) (refusal error, err error) {
	var target error
	switch kind {
	case UseOutcomeClosed:
		target = &store.ClosedError{}
	case UseOutcomeExpired:
		target = &store.ExpiredError{}
	case UseOutcomeBudget:
		target = &store.BudgetError{}
	case UseOutcomeTool:
		target = &store.ToolError{}
	case UseOutcomeRate:
		target = &store.RateLimitError{}
	default:
		return nil, fmt.Errorf("%w: unknown recorded outcome %q", store.ErrCorrupt, kind)
	}
	if err := json.Unmarshal([]byte(detail), target); err != nil {
		return nil, fmt.Errorf("%w: recorded outcome: %w", store.ErrCorrupt, err)
	}
	return target, nil
}

// UseSuccess is what is recorded of an allowed Use that carried a request
// id, so that a replay returns the session as the first call returned it:
// the counters as they were then (the other fields of a session never
// change, and its status was active). It is the JSON detail of an
// UseOutcomeOK record.
type UseSuccess struct {
	CallsMade         int64 `json:"calls_made"`
	RateWindowStartMS int64 `json:"rate_window_start_ms"`
	RateWindowCalls   int64 `json:"rate_window_calls"`
}

// EncodeUseSuccess returns the detail recorded for an allowed Use that
// returned s.
func EncodeUseSuccess(s store.Session) string {
	b, err := json.Marshal(UseSuccess{
		CallsMade:         s.CallsMade,
		RateWindowStartMS: ToMillis(s.RateWindowStart),
		RateWindowCalls:   s.RateWindowCalls,
	})
	if err != nil { // three integers
		return "{}"
	}
	return string(b)
}

// DecodeUseSuccess reads the detail of an UseOutcomeOK record. recorded is
// false for a record that holds no counters ("{}": written by a version of
// the store that did not keep them). A detail it cannot read is
// store.ErrCorrupt.
func DecodeUseSuccess(detail string) (u UseSuccess, recorded bool, err error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(detail), &raw); err != nil {
		return UseSuccess{}, false, fmt.Errorf("%w: recorded outcome: %w", store.ErrCorrupt, err)
	}
	if len(raw) == 0 {
		return UseSuccess{}, false, nil
	}
	if err := json.Unmarshal([]byte(detail), &u); err != nil {
		return UseSuccess{}, false, fmt.Errorf("%w: recorded outcome: %w", store.ErrCorrupt, err)
	}
	if u.CallsMade < 0 || u.RateWindowCalls < 0 {
		return UseSuccess{}, false, fmt.Errorf("%w: recorded outcome: negative counters", store.ErrCorrupt)
	}
	return u, true, nil
}

// Replay returns s (the session as stored now) as the recorded call
// returned it: its counters as they were, status active.
func (u UseSuccess) Replay(s store.Session) store.Session {
	s.CallsMade = u.CallsMade
	s.RateWindowStart = FromMillis(u.RateWindowStartMS)
	s.RateWindowCalls = u.RateWindowCalls
	s.Status = store.StatusActive
	return s
}
