package pgstore_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// The statement that decides a batch's calls of many sessions reads only
// those sessions' rows, whatever plan it runs with. Here it runs with a
// generic plan (plan_cache_mode force_generic_plan, as after five runs of
// a prepared statement), on a table of 300 sessions that has no
// statistics yet (never analyzed), as in a new deployment: a plan that
// joined by hashing the tenant's sessions read all 300 at every batch.
func TestUseManyReadsOnlyItsRows(t *testing.T) {
	ctx := context.Background()
	pool, st := genericPlanStore(t)
	// No ANALYZE behind the test's back: the table stays without
	// statistics, as the plan under test needs.
	if _, err := pool.Exec(ctx, `ALTER TABLE governed_sessions SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	const sessions, batch = 300, 12
	var ids, agents, tools, details []string
	var payloads [][]byte
	for i := range sessions {
		id := fmt.Sprintf("s-%03d", i)
		req := store.CreateRequest{ID: id, AgentID: "fleet", AuthorizedTools: []string{"*"}, CallBudget: 100, TimeLimit: time.Hour}
		if _, err := st.Governance().Create(ctx, req); err != nil {
			t.Fatal(err)
		}
		if i%(sessions/batch) == 0 && len(ids) < batch {
			ids, agents, tools, details = append(ids, id), append(agents, "fleet"), append(tools, "read_file"), append(details, "{}")
			payloads = append(payloads, []byte(id))
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) // the plan is what is tested, not the writes
	if _, err := tx.Exec(ctx, `PREPARE use_many AS `+pgstore.GovUseManySQL); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var plan []byte
	// EXECUTE takes no parameters of the protocol: its arguments are
	// literals (made of the test's own plain ids, names and hex).
	text := func(vs []string) string { return "ARRAY['" + strings.Join(vs, "','") + "']::text[]" }
	hexes := make([]string, len(payloads))
	for i, p := range payloads {
		hexes[i] = "decode('" + hex.EncodeToString(p) + "', 'hex')"
	}
	explain := fmt.Sprintf(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE use_many(%d, %s, %s, %s, ARRAY[%s]::bytea[], '', %s, %d)`,
		now.UnixMilli(), text(ids), text(agents), text(tools), strings.Join(hexes, ", "), text(details), now.UnixMicro())
	if err := tx.QueryRow(ctx, explain).Scan(&plan); err != nil {
		t.Fatal(err)
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
		t.Fatalf("EXPLAIN's JSON: %v (%d plans)", err, len(doc))
	}
	var read, updated float64
	doc[0].Plan.walk(func(n planNode) {
		switch {
		case n.Relation == "governed_sessions" && n.Operation == "Update":
			updated += n.ActualRows
		case n.Relation == "governed_sessions":
			read += n.ActualRows * n.ActualLoops
		}
	})
	if updated != batch {
		t.Fatalf("the statement updated %v rows, want the batch's %d (the plan: %s)", updated, batch, plan)
	}
	if read > batch {
		t.Errorf("the statement read %v rows of governed_sessions for a batch of %d sessions among %d (the plan: %s)", read, batch, sessions, plan)
	}
}
