package sqlstore

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// TestSweepQueryPlans checks with EXPLAIN QUERY PLAN that every statement
// a sweep runs searches an index: none scans a table (a full scan of a
// big table is what makes a cleanup stall writers), and none sorts its
// rows in a temporary b-tree (which would read every due row to return a
// page of them).
func TestSweepQueryPlans(t *testing.T) {
	path := FreshDBPath(t, "plans.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db := convRawDB(t, path)
	stmts := sqlcore.SweepStatements()
	if len(stmts) < 20 {
		t.Fatalf("only %d sweep statements", len(stmts))
	}
	for _, s := range stmts {
		plan := convQueryPlan(t, db, s.SQL, s.Args...)
		for _, line := range strings.Split(plan, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "SCAN ") && line != "SCAN CONSTANT ROW" {
				t.Errorf("%s scans a table (%s):\n%s\n%s", s.Name, line, s.SQL, plan)
			}
		}
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s sorts in a temporary b-tree:\n%s", s.Name, plan)
		}
	}
}
