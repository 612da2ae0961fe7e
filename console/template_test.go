package console_test

import (
	"os"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqltest"
)

// TestMain removes the SQLite template the tests' fresh stores are copied
// from (sqltest.FreshPath) once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	sqltest.Cleanup()
	os.Exit(code)
}
