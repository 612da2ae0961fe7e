package sqlstore

import (
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
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

// replaySuccess is the outcome of a replayed allowed Use: the session as
// the first call returned it (see rowcodec.UseSuccess), built on sess, the
// session as stored now. A record of a version that kept no counters
// replays as the session now, with its effective status at now.
func replaySuccess(sess store.Session, detail string, now time.Time) (verdict, error) {
	u, recorded, err := rowcodec.DecodeUseSuccess(detail)
	if err != nil {
		return verdict{}, err
	}
	if !recorded {
		sess.Status = sess.EffectiveStatus(now)
		return verdict{sess: sess}, nil
	}
	return verdict{sess: u.Replay(sess)}, nil
}
