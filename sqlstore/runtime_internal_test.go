package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func openTemp(t testing.TB, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), FreshDBPath(t, "sessions.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func queryPlan(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rows, err := s.reads.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n")
}

// TestRuntimeQueryPlans checks that every hot runtime query is an index
// lookup, never a scan of a table that grows with the number of sessions.
func TestRuntimeQueryPlans(t *testing.T) {
	s := openTemp(t)
	for _, c := range []struct {
		name, query string
		args        []any
		want        []string
	}{
		{"poll", rtPollSQL, []any{"[]"}, []string{
			"SEARCH s USING INDEX sqlite_autoindex_runtime_sessions_1 (id=?)",
			"SEARCH c USING PRIMARY KEY (session_id=? AND generation=?)"}},
		{"evict", rtEvictSQL, []any{"o", "chat", 0, "", ""}, []string{
			"USING INDEX runtime_sessions_owner_mode (owner_id=? AND chat_mode=?)",
			"SEARCH uploads USING PRIMARY KEY (session_id=?)"}},
		// The lease heartbeat and the reaping of dead turns' causes.
		{"renew turns", rtRenewTurnsSQL, []any{0, "owner"}, []string{"USING INDEX runtime_sessions_turn_owner (turn_owner=?)"}},
		{"renew causes", rtRenewCausesSQL, []any{0, "owner"}, []string{"USING INDEX runtime_cancel_causes_owner (owner=?)"}},
		{"reap causes", rtReapCausesSQL, []any{0}, []string{"USING INDEX runtime_cancel_causes_lease (lease_ms<?)"}},
		{"reap session causes", rtReapSessionSQL, []any{"s", 0}, []string{"USING PRIMARY KEY (session_id=?)"}},
		{"count by agent", rtCountByAgentSQL, nil, []string{"USING COVERING INDEX runtime_sessions_agent"}},
		{"list ids", rtListIDsSQL, []any{"", "", 10}, []string{"USING COVERING INDEX runtime_sessions_tenant (tenant=? AND id>?)"}},
		{"turn", rtTurnSQL, []any{"s", ""}, []string{"USING INDEX sqlite_autoindex_runtime_sessions_1 (id=?)"}},
		{"take cause", rtTakeCauseSQL, []any{"s", 1, ""}, []string{"USING PRIMARY KEY (session_id=? AND generation=?)"}},
		{"list uploads", upListSQL, []any{"s", "", "", 10}, []string{"SEARCH uploads USING PRIMARY KEY (session_id=? AND ref_id>?)"}},
		{"read upload", upReadSQL, []any{"s", "r", ""}, []string{
			"SEARCH u USING PRIMARY KEY (session_id=? AND ref_id=?)",
			"SEARCH b USING INDEX sqlite_autoindex_upload_blobs_1 (tenant=? AND sha256=?)"}},
		{"history len", rtHistoryLenSQL, []any{"s"}, []string{"SEARCH conversation_messages USING COVERING INDEX"}},
		// The blob collector's reference check (in the triggers), per
		// tenant (migration 25).
		{"blob refs", `SELECT 1 FROM uploads WHERE tenant = ? AND sha256 = ?`, []any{"", []byte{1}}, []string{"USING COVERING INDEX uploads_sha256 (tenant=? AND sha256=?)"}},
	} {
		plan := queryPlan(t, s, c.query, c.args...)
		for _, w := range c.want {
			if !strings.Contains(plan, w) {
				t.Errorf("%s: plan lacks %q:\n%s", c.name, w, plan)
			}
		}
		for _, line := range strings.Split(plan, "\n") {
			if strings.HasPrefix(line, "SCAN ") && !strings.Contains(line, "COVERING INDEX") && !strings.HasPrefix(line, "SCAN j ") {
				t.Errorf("%s: table scan: %s", c.name, line)
			}
		}
	}
}

func count(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	if err := s.reads.GetContext(context.Background(), &n, "SELECT count(*) FROM "+table); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUploadBlobsDeduplicatedAndCollected: identical content is stored once,
// and content no entry refers to is deleted with its last entry, whether
// it is overwritten, its session removed or evicted.
func TestUploadBlobsDeduplicatedAndCollected(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	rt := s.Runtime()
	for _, id := range []string{"a", "b"} {
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "x", WorkspaceDir: ".", ChatMode: "chat", OwnerID: "o"}); err != nil {
			t.Fatal(err)
		}
	}
	put := func(session, ref, content string) {
		t.Helper()
		if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: session, RefID: ref, WorkspacePath: "p", Content: []byte(content)}); err != nil {
			t.Fatal(err)
		}
	}
	put("a", "1", "same")
	put("a", "2", "same")
	put("b", "1", "same")
	if n := count(t, s, "upload_blobs"); n != 1 {
		t.Fatalf("%d blobs for identical content, want 1", n)
	}
	put("a", "1", "other")
	if n := count(t, s, "upload_blobs"); n != 2 {
		t.Fatalf("%d blobs, want 2", n)
	}
	put("a", "1", "third") // "other" loses its only reference
	if n := count(t, s, "upload_blobs"); n != 2 {
		t.Fatalf("%d blobs after overwrite, want 2", n)
	}
	if _, err := rt.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n, m := count(t, s, "upload_blobs"), count(t, s, "uploads"); n != 1 || m != 1 {
		t.Fatalf("after removing a: %d blobs, %d entries; want 1, 1", n, m)
	}
	if _, err := rt.EvictSameModeSiblings(ctx, store.EvictRequest{OwnerID: "o", ChatMode: "chat"}); err != nil {
		t.Fatal(err)
	}
	if n, m := count(t, s, "upload_blobs"), count(t, s, "uploads"); n != 0 || m != 0 {
		t.Fatalf("after evicting b: %d blobs, %d entries; want none", n, m)
	}
}

// TestReadUploadDetectsDamage: content changed behind the store's back is
// refused with ErrCorrupt instead of being returned.
func TestReadUploadDetectsDamage(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	rt := s.Runtime()
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: "s", AgentAlias: "x", WorkspaceDir: ".", ChatMode: "chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "s", RefID: "r", WorkspacePath: "p", Content: []byte("genuine")}); err != nil {
		t.Fatal(err)
	}
	// Damage the content through a connection of its own (the length
	// stays, so the table's checks pass).
	db, err := sql.Open(driverName, writeDSN(s.path, &s.cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE upload_blobs SET content = ?`, []byte("forgery")); err != nil {
		t.Fatal(err)
	}
	_, b, err := rt.ReadUpload(ctx, "s", "r")
	if !errors.Is(err, store.ErrCorrupt) || b != nil {
		t.Fatalf("ReadUpload of damaged content = %q, %v; want ErrCorrupt", b, err)
	}
	if strings.Contains(err.Error(), "forgery") || strings.Contains(err.Error(), "genuine") {
		t.Fatalf("error reveals content: %v", err)
	}
}

func TestRuntimeOptionsValidated(t *testing.T) {
	for name, o := range map[string]Option{
		"negative cap":       WithMaxSessions(-1),
		"zero upload limit":  WithMaxUploadBytes(0),
		"huge upload limit":  WithMaxUploadBytes(MaxUploadLimit + 1),
		"zero poll interval": WithCancelPollInterval(0),
		"slow poll interval": WithCancelPollInterval(time.Minute),
	} {
		_, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), o)
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: Open error %v, want ErrInvalidInput", name, err)
		}
	}
}

// TestCancelPollerRunsOnlyWithTurns: the poller starts with the first
// running turn, stops once the store has none, and Close stops it.
func TestCancelPollerRunsOnlyWithTurns(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t, WithCancelPollInterval(time.Millisecond))
	rt := s.Runtime()
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: "s", AgentAlias: "x", WorkspaceDir: ".", ChatMode: "chat"}); err != nil {
		t.Fatal(err)
	}
	if _, _, polling := s.core.TurnState(); polling {
		t.Fatal("poller running without turns")
	}
	gen, _, err := rt.BeginTurn(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if n, w, polling := s.core.TurnState(); n != 1 || w != 1 || !polling {
		t.Fatalf("with a turn: %d turns, %d watched, polling %v", n, w, polling)
	}
	if _, err := rt.EndTurn(ctx, "s", gen); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, w, polling := s.core.TurnState()
		if n == 0 && w == 0 && !polling {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poller still running without turns: %d %d %v", n, w, polling)
		}
		time.Sleep(time.Millisecond)
	}
	// Close waits for a running poller.
	if _, _, err := rt.BeginTurn(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Close waits for the poller to exit before it reports polling off.
	if n, w, polling := s.core.TurnState(); n != 0 || w != 0 || polling {
		t.Fatalf("after close: %d turns, %d watched, polling %v", n, w, polling)
	}
}

// BenchmarkCancelDeliveryAcrossStores measures the poller path: a cancel
// recorded by another Store (as another process would) reaching the turn
// context. ns/op is dominated by the delivery delay; the median and worst
// delays are reported as metrics.
func BenchmarkCancelDeliveryAcrossStores(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "sessions.db")
	a, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	other, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	if _, err := a.Runtime().Insert(ctx, store.NewRuntimeSession{ID: "s", AgentAlias: "x", WorkspaceDir: ".", ChatMode: "chat"}); err != nil {
		b.Fatal(err)
	}
	var delays []time.Duration
	for b.Loop() {
		gen, tctx, err := a.Runtime().BeginTurn(ctx, "s")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if ok, err := other.Runtime().Cancel(ctx, "s", store.CauseClientRequest); err != nil || !ok {
			b.Fatal(ok, err)
		}
		<-tctx.Done()
		delays = append(delays, time.Since(start))
		if _, err := a.Runtime().EndTurn(ctx, "s", gen); err != nil {
			b.Fatal(err)
		}
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median-ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "worst-ms")
	}
}
