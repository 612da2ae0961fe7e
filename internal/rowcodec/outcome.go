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
