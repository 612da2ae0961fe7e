package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// TestGovernedListReadsOnePage: the query of a List page of governed
// sessions walks the (tenant, id) index from the cursor and sorts
// nothing (EXPLAIN QUERY PLAN), with a cursor or without, so that a page
// costs the same at any store size (BenchmarkLargeStore in package
// console measures the pages). One agent's page reads that agent's rows
// by its index. Without migration 29 SQLite sorted every session of the
// tenant for each page.
func TestGovernedListReadsOnePage(t *testing.T) {
	ctx := context.Background()
	path := FreshDBPath(t, "sessions.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range 20 {
		if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: fmt.Sprintf("s-%02d", i), AgentID: fmt.Sprintf("agent-%d", i%3),
			CallBudget: 1, TimeLimit: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	db := convRawDB(t, path)
	now := time.Now()
	for _, c := range []struct {
		name string
		f    store.ListFilter
		want string
	}{
		{"first page", store.ListFilter{Limit: 50}, "USING COVERING INDEX governed_sessions_tenant_id (tenant=? AND id>?)"},
		{"next page", store.ListFilter{Limit: 50, After: "s-05"}, "governed_sessions_tenant_id (tenant=? AND id>?)"},
		{"active", store.ListFilter{Limit: 50, Status: store.StatusActive}, "governed_sessions_tenant_id (tenant=? AND id>?)"},
		{"agent", store.ListFilter{Limit: 50, AgentID: "agent-1"}, "governed_sessions_agent (tenant=? AND agent_id=?)"},
	} {
		query, args := governedListSQL("", c.f, now)
		plan := convQueryPlan(t, db, query, args...)
		if !strings.Contains(plan, strings.TrimPrefix(c.want, "USING COVERING INDEX ")) {
			t.Errorf("%s: plan\n%s\nwant %s", c.name, plan, c.want)
		}
		if c.f.AgentID == "" && strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: the page sorts every session of the tenant:\n%s", c.name, plan)
		}
	}
	page, err := st.Governance().List(ctx, store.ListFilter{Limit: 5, After: "s-05"})
	if err != nil || len(page.Items) != 5 || page.Items[0].ID != "s-06" || page.Next != "s-10" {
		t.Fatalf("List after s-05: %+v %v", page, err)
	}
}
