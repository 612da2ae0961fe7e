package pgstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// pgHoldRows lists retention_holds as "tenant facet app user id reason"
// lines, in key order.
func pgHoldRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT tenant, facet, app, user_id, id, reason FROM retention_holds ORDER BY facet, app, user_id, id, tenant`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var f [6]string
		if err := rows.Scan(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5]); err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.Join(f[:], " ") + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestMigrationTenantHolds: migration 23 keeps every hold, moves the
// store's hold of a tenant's conversation to that tenant, and lets two
// tenants hold the same key; its down step keeps one hold per key (the
// default tenant's first).
func TestMigrationTenantHolds(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st := open(t, loc)
	ts, err := st.Tenant("t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Conversations().Save(ctx, store.Conversation{ID: "c-t1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Save(ctx, store.Conversation{ID: "c-def"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	p, db, pool, err := pgstore.NewMigrationProvider(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	defer db.Close()
	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatalf("down to 22: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms) VALUES
		('', 'conversations', '', '', 'c-t1', 'r1', 1), ('', 'conversations', '', '', 'c-def', 'r2', 1),
		('', 'agent_sessions', 'app', 'u', 's', 'r3', 1), ('', 'runtime', '', '', 'rt-none', 'r4', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 23); err != nil {
		t.Fatalf("up to 23: %v", err)
	}
	want := " agent_sessions app u s r3\n" +
		" conversations   c-def r2\n" +
		"t1 conversations   c-t1 r1\n" +
		" runtime   rt-none r4\n"
	if got := pgHoldRows(t, db); got != want {
		t.Fatalf("holds after up to 23:\n%s\nwant\n%s", got, want)
	}
	if _, err := db.Exec(`INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms)
		VALUES ('t2', 'agent_sessions', 'app', 'u', 's', 'r5', 2)`); err != nil {
		t.Fatalf("a second tenant's hold of the same key: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms)
		VALUES ('t2', 'agent_sessions', 'app', 'u', 's', 'dup', 3)`); err == nil {
		t.Fatal("the same tenant's second hold of a key was accepted")
	}
	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatalf("down to 22 again: %v", err)
	}
	if got := pgHoldRows(t, db); got != want {
		t.Fatalf("holds after down to 22:\n%s\nwant\n%s", got, want)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	st = open(t, loc)
	if ts, err = st.Tenant("t1"); err != nil {
		t.Fatal(err)
	}
	if hs, err := ts.Retention().Holds(ctx); err != nil || len(hs) != 1 || hs[0].ID != "c-t1" {
		t.Fatalf("t1's holds = %+v, %v", hs, err)
	}
}
