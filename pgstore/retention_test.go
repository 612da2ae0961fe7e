package pgstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/store/storetest"
)

// TestRetentionProcesses kills a sweep with SIGKILL and runs sweeps in
// two processes at once (see storetest.RunRetentionProcesses).
func TestRetentionProcesses(t *testing.T) {
	serverURL(t)
	storetest.RunRetentionProcesses(t, harness, 60)
}
