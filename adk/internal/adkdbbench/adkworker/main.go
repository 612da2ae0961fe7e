// Command adkworker runs the rounds of the comparison benchmark
// (BenchmarkVsADK in the adk package) on ADK's own database service
// (session/database on GORM and the pure-Go SQLite dialect ADK's tests
// use), configured as a careful user would: WAL, the synchronous level
// asked for, a busy timeout, foreign keys on and write transactions that
// lock at BEGIN. It reads one benchkit.WorkerRequest per line on stdin and
// answers one benchkit.Result per line on stdout; its template databases
// live in a temporary directory under $BENCH_DIR (else the system's),
// removed when stdin ends.
//
// It is a process of its own because ADK's SQLite driver and the store's
// both register the database/sql name "sqlite".
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/v2/session/database"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

func open(ctx context.Context, dir, sync string) (benchkit.Target, error) {
	dsn := "file:" + filepath.Join(dir, "adk.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + sync + ")&_pragma=foreign_keys(1)&_txlock=immediate"
	sqlDB, err := sql.Open(sqlite.DriverName, dsn)
	if err != nil {
		return nil, err
	}
	svc, err := database.NewSessionService(&sqlite.Dialector{Conn: sqlDB}, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err == nil {
		err = database.AutoMigrate(svc)
	}
	if err != nil {
		sqlDB.Close()
		return nil, err
	}
	return &benchkit.ServiceTarget{Svc: svc, Closer: sqlDB.Close}, nil
}

func main() {
	dir, err := os.MkdirTemp(os.Getenv("BENCH_DIR"), "adkworker-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	err = benchkit.ServeWorker(context.Background(), benchkit.NewTemplates(dir, open), os.Stdin, os.Stdout)
	os.RemoveAll(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
