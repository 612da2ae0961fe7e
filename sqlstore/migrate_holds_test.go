package sqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// holdRows lists retention_holds as "tenant facet app user id reason"
// lines, in key order.
func holdRows(t *testing.T, db *sql.DB) string {
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
// store's hold of a tenant's conversation to that tenant (so that it keeps
// protecting it), and lets two tenants hold the same key; its down step
// keeps one hold per key (the default tenant's first).
func TestMigrationTenantHolds(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "holds.db")
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := st.Tenant("t1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conv store.Conversations
		id   string
	}{{ts.Conversations(), "c-t1"}, {st.Conversations(), "c-def"}} {
		if _, err := c.conv.Save(ctx, store.Conversation{ID: c.id}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	p, db, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatalf("down to 22: %v", err)
	}
	// Holds as version 22 placed them: every one in the default tenant.
	if _, err := db.Exec(`INSERT INTO retention_holds (facet, app, user_id, id, reason, created_at_ms) VALUES
		('conversations', '', '', 'c-t1', 'r1', 1), ('conversations', '', '', 'c-def', 'r2', 1),
		('agent_sessions', 'app', 'u', 's', 'r3', 1), ('runtime', '', '', 'rt-none', 'r4', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 23); err != nil {
		t.Fatalf("up to 23: %v", err)
	}
	want := " agent_sessions app u s r3\n" +
		" conversations   c-def r2\n" +
		"t1 conversations   c-t1 r1\n" +
		" runtime   rt-none r4\n"
	if got := holdRows(t, db); got != want {
		t.Fatalf("holds after up to 23:\n%s\nwant\n%s", got, want)
	}
	// Two tenants hold the same agent-session key.
	if _, err := db.Exec(`INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms)
		VALUES ('t2', 'agent_sessions', 'app', 'u', 's', 'r5', 2)`); err != nil {
		t.Fatalf("a second tenant's hold of the same key: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO retention_holds (tenant, facet, app, user_id, id, reason, created_at_ms)
		VALUES ('t2', 'agent_sessions', 'app', 'u', 's', 'dup', 3)`); err == nil {
		t.Fatal("the same tenant's second hold of a key was accepted")
	}
	// Down: one hold per key, the default tenant's; the moved hold keeps
	// its tenant (version 22's sweep ignores it for conversations).
	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatalf("down to 22 again: %v", err)
	}
	if got := holdRows(t, db); got != want {
		t.Fatalf("holds after down to 22:\n%s\nwant\n%s", got, want)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// The store reads them per tenant.
	st, err = sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ts, err = st.Tenant("t1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    store.Retention
		want string
	}{{ts.Retention(), "conversations c-t1;"}, {st.Retention(), "agent_sessions app/u/s;conversations c-def;runtime rt-none;"}} {
		hs, err := c.r.Holds(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, h := range hs {
			got += h.SessionRef.String() + ";"
		}
		if got != c.want {
			t.Fatalf("Holds = %s, want %s", got, c.want)
		}
	}
}
