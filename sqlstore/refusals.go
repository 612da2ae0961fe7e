package sqlstore

import (
	"encoding/json"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

// Outcomes recorded for Use calls with a request id.
const (
	outcomeOK      = "ok"
	outcomeClosed  = "closed"
	outcomeExpired = "expired"
	outcomeBudget  = "budget"
	outcomeTool    = "tool"
	outcomeRate    = "rate"
)

// encodeRefusal turns a Use outcome into its stored form.
func encodeRefusal(refusal error) (outcome, detail string) {
	var v any
	switch e := refusal.(type) {
	case nil:
		return outcomeOK, "{}"
	case *store.ClosedError:
		outcome, v = outcomeClosed, e
	case *store.ExpiredError:
		outcome, v = outcomeExpired, e
	case *store.BudgetError:
		outcome, v = outcomeBudget, e
	case *store.ToolError:
		outcome, v = outcomeTool, e
	case *store.RateLimitError:
		outcome, v = outcomeRate, e
	default:
		// Not reachable: decide only refuses with the kinds above once
		// not-found and agent mismatch are excluded.
		panic(fmt.Sprintf("sqlstore: unexpected refusal %T", refusal))
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return outcome, string(b)
}

// decodeRefusal rebuilds the typed refusal recorded for a request id.
func decodeRefusal(outcome, detail string) (error, error) {
	var target error
	switch outcome {
	case outcomeClosed:
		target = &store.ClosedError{}
	case outcomeExpired:
		target = &store.ExpiredError{}
	case outcomeBudget:
		target = &store.BudgetError{}
	case outcomeTool:
		target = &store.ToolError{}
	case outcomeRate:
		target = &store.RateLimitError{}
	default:
		return nil, fmt.Errorf("%w: unknown recorded outcome %q", store.ErrCorrupt, outcome)
	}
	if err := json.Unmarshal([]byte(detail), target); err != nil {
		return nil, fmt.Errorf("%w: recorded outcome: %w", store.ErrCorrupt, err)
	}
	return target, nil
}
