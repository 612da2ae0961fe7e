package sqlstore

import (
	"fmt"

	"github.com/agentstore/sessionstore/internal/rowcodec"
)

// outcomeOK is the recorded outcome of an allowed Use.
const outcomeOK = rowcodec.UseOutcomeOK

// encodeRefusal turns a Use outcome into its stored form (see
// rowcodec.EncodeUseOutcome).
func encodeRefusal(refusal error) (outcome, detail string) {
	outcome, detail, ok := rowcodec.EncodeUseOutcome(refusal)
	if !ok {
		// Not reachable: decide only refuses with recordable kinds once
		// not-found and agent mismatch are excluded.
		panic(fmt.Sprintf("sqlstore: unexpected refusal %T", refusal))
	}
	return outcome, detail
}

// decodeRefusal rebuilds the typed refusal recorded for a request id.
func decodeRefusal(outcome, detail string) (error, error) {
	return rowcodec.DecodeUseOutcome(outcome, detail)
}
