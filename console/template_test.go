package console_test

import (
	"os"
	"testing"

	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
)

// TestMain removes the SQLite template the tests' fresh stores are copied
// from (sqltest.FreshPath), and the PostgreSQL template databases
// (pgtest.NewStore), once they ran.
func TestMain(m *testing.M) {
	code := m.Run()
	sqltest.Cleanup()
	pgtest.DropTemplate()
	os.Exit(code)
}
