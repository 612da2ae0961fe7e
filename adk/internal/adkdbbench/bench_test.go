package adkdbbench

import (
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/database"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// adkService opens ADK's database service on a file, configured as a
// careful user would: WAL with synchronous=FULL (the store's default
// durability), a busy timeout, foreign keys on (else deletes leave orphan
// events) and write transactions that lock at BEGIN (else concurrent
// appends fail with "database is locked").
func adkService(b *testing.B) session.Service {
	return adkServiceDSN(b, "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
}

// adkServiceDSN opens ADK's database service on a new file with the given
// DSN query (empty: the driver's defaults, as in ADK's documentation).
func adkServiceDSN(b *testing.B, query string) session.Service {
	dsn := "file:" + filepath.Join(benchkit.Dir(b), "adk.db") + query
	svc, err := database.NewSessionService(sqlite.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		b.Fatal(err)
	}
	if err := database.AutoMigrate(svc); err != nil {
		b.Fatal(err)
	}
	return svc
}

func BenchmarkAppendEvent(b *testing.B) {
	b.Run("service=adk-database", func(b *testing.B) { benchkit.Append(b, adkService(b)) })
}

func BenchmarkAppendEventParallel(b *testing.B) {
	b.Run("service=adk-database", func(b *testing.B) { benchkit.AppendParallel(b, adkService(b)) })
	// With the driver's defaults (rollback journal, no busy timeout,
	// deferred transactions) concurrent appends fail with "database is
	// locked"; errors/op shows how often.
	b.Run("service=adk-database-default-dsn", func(b *testing.B) { benchkit.AppendParallel(b, adkServiceDSN(b, "")) })
}

func BenchmarkGetRecent100(b *testing.B) {
	b.Run("service=adk-database", func(b *testing.B) { benchkit.GetRecent(b, adkService(b), 1000, 100) })
}
