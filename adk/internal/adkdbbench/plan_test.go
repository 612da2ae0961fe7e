package adkdbbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/database"
)

// TestADKDatabaseRecentEventsPlan records how ADK's database service reads
// a session's recent events on SQLite (the query its Get issues): a scan of
// the whole events table and a sort, which is what docs/agent-sessions.md's comparison
// says. If a later ADK adds an index, this test says so.
func TestADKDatabaseRecentEventsPlan(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "adk.db")
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := database.NewSessionService(sqlite.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := database.AutoMigrate(svc); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), &session.CreateRequest{AppName: "a", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID, Parent, Notused int
		Detail              string
	}
	err = db.Raw("EXPLAIN QUERY PLAN SELECT * FROM `events` WHERE app_name = ? AND user_id = ? AND session_id = ? ORDER BY timestamp DESC LIMIT 100",
		"a", "u", "s").Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for _, r := range rows {
		plan = append(plan, r.Detail)
	}
	got := strings.Join(plan, "\n")
	t.Logf("plan:\n%s", got)
	if !strings.Contains(got, "SCAN events") || !strings.Contains(got, "TEMP B-TREE") {
		t.Fatalf("ADK's recent-events read no longer scans and sorts:\n%s", got)
	}
}
