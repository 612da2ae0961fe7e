package sqlstore_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestAuditPerAgentChainsMigrate: a database written before migration 13
// kept one chain per agent, its times in milliseconds and hashed that way.
// Opening it with this binary keeps each such chain as the agent's own
// chain: it verifies, with the digest it had, every event reads back at
// the same instant, and new decisions go to the session's chain and the
// agent's, which verify too.
func TestAuditPerAgentChainsMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	p, db, err := sqlstore.NewMigrationProvider(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	// An agent's chain as the old binary wrote it: a create, a use, a
	// refusal, about session s1, which is still there.
	at := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	agent := "agent-1"
	old := []struct{ kind, outcome, detail string }{
		{"create", "ok", `{"call_budget":10}`},
		{"use", "ok", `{"tools":["read_file"]}`},
		{"use", "tool_not_authorized", `{"session_id":"s1","tool":"rm"}`},
	}
	prev := rowcodec.AuditZeroHash
	for i, o := range old {
		seq := int64(i + 1)
		ms := at.UnixMilli() + int64(i)
		hash, ok := rowcodec.AuditHash(prev, seq, agent, rowcodec.AuditPayload(ms, o.kind, o.outcome, "s1", "", o.detail))
		if !ok {
			t.Fatal("AuditHash refused the previous hash")
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO audit_events
			(agent_id, seq, at_ms, kind, outcome, session_id, request_id, detail, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, 's1', '', ?, ?, ?)`, agent, seq, ms, o.kind, o.outcome, o.detail, prev, hash); err != nil {
			t.Fatal(err)
		}
		prev = hash
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO audit_heads (agent_id, seq, prev_hash, hash) VALUES (?, 3, '', ?)`, agent, prev); err != nil {
		t.Fatal(err)
	}
	created := strconv.FormatInt(at.UnixMilli(), 10)
	if _, err := db.ExecContext(ctx, `INSERT INTO governed_sessions (id, agent_id, authorized_tools, any_tool, time_limit_ms,
		call_budget, calls_made, rate_window_ms, rate_window_start_ms, sensitivity, status, created_at_ms, expires_at_ms)
		VALUES ('s1', ?, '["read_file"]', 0, 3153600000000, 10, 1, 60000, `+created+`, 'internal', 'active', `+created+`, `+created+` + 3153600000000)`, agent); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The digest the old binary's Verify printed: over the one head.
	oldDigest := rowcodec.AuditDigest(func(yield func(string, string, int64, string) bool) { yield(agent, "", 3, prev) })

	clock := at.Add(time.Hour)
	st, err := sqlstore.Open(ctx, path, sqlstore.WithClock(func() time.Time { return clock }))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rep, err := st.Audit().Verify(ctx)
	if err != nil || !rep.OK() || rep.Chains != 1 || rep.Events != 3 || rep.Digest != oldDigest {
		t.Fatalf("Verify after the migration: %+v, %v; want the old chain and digest %s", rep, err, oldDigest)
	}
	page, err := st.Audit().List(ctx, store.AuditFilter{AgentID: agent})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("List: %+v, %v", page, err)
	}
	for i, ev := range page.Items {
		if want := at.Add(time.Duration(i) * time.Millisecond); !ev.At.Equal(want) || ev.Chain != "" {
			t.Errorf("event %d at %v in chain %q, want %v in the agent's chain", i+1, ev.At, ev.Chain, want)
		}
	}
	// New decisions: a use (the session's chain, at microseconds) and a
	// create (the agent's chain, after the migrated events).
	clock = clock.Add(123 * time.Microsecond)
	if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: "s1", Tools: []string{"read_file"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Governance().Create(ctx, longSession("s2", 5)); err != nil {
		t.Fatal(err)
	}
	rep, err = st.Audit().Verify(ctx)
	if err != nil || !rep.OK() || rep.Chains != 2 || rep.Events != 5 {
		t.Fatalf("Verify after new decisions: %+v, %v", rep, err)
	}
	page, err = st.Audit().List(ctx, store.AuditFilter{AgentID: agent})
	if err != nil || len(page.Items) != 5 {
		t.Fatalf("List: %+v, %v", page, err)
	}
	if ev := page.Items[3]; ev.Chain != "" || ev.Seq != 4 || ev.Kind != store.AuditCreate || ev.PrevHash != prev {
		t.Errorf("the create after the migration: %+v, want seq 4 of the agent's chain after %s", ev, prev)
	}
	// Governance decides at the store clock's millisecond: the event is
	// at that instant, stored in microseconds.
	if ev := page.Items[4]; ev.Chain != "s1" || ev.Seq != 1 || !ev.At.Equal(clock.Truncate(time.Millisecond)) {
		t.Errorf("the use after the migration: %+v, want seq 1 of s1's chain at %v", ev, clock)
	}
}
