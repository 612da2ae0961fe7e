package adkdbbench

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/v2/session/database"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/walpages"
)

// TestADKPagesPerCreate counts the pages a session create writes through
// ADK's database service, configured as in the comparison (see
// TestPagesPerCreate in the adk package for this service's figure).
func TestADKPagesPerCreate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adk.db")
	sqlDB, err := sql.Open(sqlite.DriverName, "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	svc, err := database.NewSessionService(&sqlite.Dialector{Conn: sqlDB}, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := database.AutoMigrate(svc); err != nil {
		t.Fatal(err)
	}
	target := &benchkit.ServiceTarget{Svc: svc}
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := benchkit.PagesPerCreate(ctx, target, db, 10, map[string]any{"turn": 0.0}); err != nil {
		t.Fatal(err)
	}
	bare, err := benchkit.PagesPerCreate(ctx, target, db, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	withState, err := benchkit.PagesPerCreate(ctx, target, db, 10, map[string]any{"turn": 0.0})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ADK's database service: pages written per create: %.1f without state, %.1f with a one-key state", bare, withState)
	if bare < 1 {
		t.Errorf("counted %.1f pages per create: the count is broken", bare)
	}
}

// TestADKPagesPerAppend counts the pages an append of a runner's event
// writes through ADK's database service, configured as in the comparison
// (see TestPagesPerAppend in the adk package for this service's figure).
func TestADKPagesPerAppend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "adk.db")
	sqlDB, err := sql.Open(sqlite.DriverName, "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(1)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	svc, err := database.NewSessionService(&sqlite.Dialector{Conn: sqlDB}, &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := database.AutoMigrate(svc); err != nil {
		t.Fatal(err)
	}
	target := &benchkit.ServiceTarget{Svc: svc}
	db, err := sql.Open(sqlite.DriverName, "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := benchkit.PagesPerAppend(ctx, target, db, 10); err != nil {
		t.Fatal(err)
	}
	pages, by, err := benchkit.PagesPerAppendByObject(ctx, target, db, 40, path+"-wal")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ADK's database service: pages written per append of a runner event: %.2f, by table or index:\n%s", pages, walpages.Format(by, "%.2f"))
	if pages < 1 {
		t.Errorf("counted %.2f pages per append: the count is broken", pages)
	}
}
