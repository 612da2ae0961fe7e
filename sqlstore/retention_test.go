package sqlstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/store/storetest"
)

// TestRetentionProcesses kills a sweep with SIGKILL and runs sweeps in
// two processes at once (see storetest.RunRetentionProcesses).
func TestRetentionProcesses(t *testing.T) {
	skipShort(t)
	n := 120
	if raceDetector {
		n = 24
	}
	storetest.RunRetentionProcesses(t, harness, n)
}
