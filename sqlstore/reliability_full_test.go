package sqlstore_test

import (
	"os"
	"testing"
)

// envReliability names the environment variable that asks for the full
// configuration of the heavy reliability tests (every fault kind, mode and
// statement of the fault sweeps, 50 crash trials, 5 concurrent-migration
// rounds, a 3 s soak). ./test.sh's reliability block sets it to "full" and
// runs them without the race detector.
const envReliability = "SQLSTORE_RELIABILITY"

// sampleReliability is true when those tests run their reduced
// configuration: under the race detector, which slows the SQLite engine
// they spend their time in, and in a plain `go test` (the edit-test loop,
// where the full sweep alone took minutes) unless SQLSTORE_RELIABILITY=full.
// The reduced configuration still runs every operation's fault paths on a
// sample of its statements.
var sampleReliability = raceDetector || os.Getenv(envReliability) != "full"

// skipShort skips a volume or reliability test under go test -short, the
// edit-test loop; go test without -short and ./test.sh run it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("volume or reliability test: skipped by -short (go test and ./test.sh run it)")
	}
}
