package sqlstore

import (
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

// outcomeOK is the recorded outcome of an allowed Use.
const outcomeOK = store.UseOutcomeOK

// encodeRefusal turns a Use outcome into its stored form (see
// store.EncodeUseOutcome).
func encodeRefusal(refusal error) (outcome, detail string) {
	outcome, detail, ok := store.EncodeUseOutcome(refusal)
	if !ok {
		// Not reachable: decide only refuses with recordable kinds once
		// not-found and agent mismatch are excluded.
		panic(fmt.Sprintf("sqlstore: unexpected refusal %T", refusal))
	}
	return outcome, detail
}

// decodeRefusal rebuilds the typed refusal recorded for a request id.
func decodeRefusal(outcome, detail string) (error, error) {
	return store.DecodeUseOutcome(outcome, detail)
}
