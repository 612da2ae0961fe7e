package store

import (
	"encoding/json"
	"fmt"
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
	case *ClosedError:
		kind, v = UseOutcomeClosed, e
	case *ExpiredError:
		kind, v = UseOutcomeExpired, e
	case *BudgetError:
		kind, v = UseOutcomeBudget, e
	case *ToolError:
		kind, v = UseOutcomeTool, e
	case *RateLimitError:
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
// kind must not be UseOutcomeOK. A record it cannot read is ErrCorrupt.
func DecodeUseOutcome(kind, detail string) (refusal error, err error) {
	var target error
	switch kind {
	case UseOutcomeClosed:
		target = &ClosedError{}
	case UseOutcomeExpired:
		target = &ExpiredError{}
	case UseOutcomeBudget:
		target = &BudgetError{}
	case UseOutcomeTool:
		target = &ToolError{}
	case UseOutcomeRate:
		target = &RateLimitError{}
	default:
		return nil, fmt.Errorf("%w: unknown recorded outcome %q", ErrCorrupt, kind)
	}
	if err := json.Unmarshal([]byte(detail), target); err != nil {
		return nil, fmt.Errorf("%w: recorded outcome: %w", ErrCorrupt, err)
	}
	return target, nil
}
