package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// tenantTables are the tables of migrations 17 and 18 that carry a tenant
// and a row-level security policy (less agent_session_state, dropped by
// migration 40).
var tenantTables = []string{
	"agent_sessions", "agent_events", "agent_state_log",
	"agent_app_state", "agent_user_state",
	"conversations", "conversation_messages", "conversation_cost_records",
	"conversation_artifacts", "conversation_trace_events", "conversation_runs",
	"conversation_run_events", "conversation_reports",
	"governed_sessions", "governed_use_requests",
	"runtime_sessions", "runtime_cancel_causes", "uploads",
	"spend_limits", "spend_reservations", "audit_events", "audit_heads",
	"retention_holds", "search_docs",
	"conversation_retired", "conversation_retired_messages",
}

// convTenantTables are the tables of conversations and runtime sessions
// that seedTenants writes in every tenant.
var convTenantTables = []string{
	"conversations", "conversation_messages", "conversation_cost_records",
	"conversation_artifacts", "conversation_trace_events", "conversation_runs",
	"conversation_run_events", "conversation_reports",
	"conversation_retired", "conversation_retired_messages",
	"runtime_sessions", "runtime_cancel_causes", "uploads",
}

// seedTenantConversations writes, through the facets of tenant name (the
// store itself for ""), a conversation with a row in every child table, a
// fork of it, then deletes it (its messages the fork reads go to a retired
// history); and a runtime session with an upload and a cancelled turn (a
// cause row). Ids are qualified by the tenant: they are global keys.
func seedTenantConversations(t *testing.T, ctx context.Context, c store.Conversations, rt store.Runtime, name string) {
	t.Helper()
	id := "conv-of-" + name
	conv := store.NewConversation(id)
	conv.Messages = []store.Message{store.UserMessage("q of " + name), store.AssistantMessage("a of " + name)}
	conv.CostRecords = []store.CostRecord{{Model: "m", Provider: "p", TotalTokens: 1}}
	if _, err := c.Save(ctx, conv); err != nil {
		t.Fatalf("%q: save: %v", name, err)
	}
	if err := c.PutArtifacts(ctx, id, store.Artifact{URI: "a3s://x/" + name, ID: "x", ToolName: "t", Content: name}); err != nil {
		t.Fatalf("%q: artifacts: %v", name, err)
	}
	if _, err := c.AppendTraces(ctx, id, store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: name}); err != nil {
		t.Fatalf("%q: traces: %v", name, err)
	}
	run := store.RunRecord{Snapshot: store.RunSnapshot{ID: "run", Status: store.RunCreated, Prompt: name},
		Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"type":"start"}`)}}}
	if err := c.PutRuns(ctx, id, run); err != nil {
		t.Fatalf("%q: runs: %v", name, err)
	}
	if err := c.AppendReports(ctx, id, store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "s", Status: store.VerificationPassed}); err != nil {
		t.Fatalf("%q: reports: %v", name, err)
	}
	if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: id, At: 1, NewID: "fork-of-" + name}); err != nil {
		t.Fatalf("%q: fork: %v", name, err)
	}
	if err := c.Delete(ctx, id); err != nil {
		t.Fatalf("%q: delete: %v", name, err)
	}
	// The conversation again, now without forks, holding every record.
	if _, err := c.Save(ctx, conv); err != nil {
		t.Fatalf("%q: save again: %v", name, err)
	}
	for _, err := range []error{
		c.PutArtifacts(ctx, id, store.Artifact{URI: "a3s://x/" + name, ID: "x", ToolName: "t", Content: name}),
		c.PutRuns(ctx, id, run),
		c.AppendReports(ctx, id, store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "s", Status: store.VerificationPassed}),
	} {
		if err != nil {
			t.Fatalf("%q: records: %v", name, err)
		}
	}
	if _, err := c.AppendTraces(ctx, id, store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: name}); err != nil {
		t.Fatalf("%q: traces: %v", name, err)
	}
	rid := "runtime-of-" + name
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: rid, AgentAlias: "agent", WorkspaceDir: "/ws", ChatMode: store.ChatModeChat}); err != nil {
		t.Fatalf("%q: runtime: %v", name, err)
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: rid, RefID: "r", WorkspacePath: "w", Content: []byte(name)}); err != nil {
		t.Fatalf("%q: upload: %v", name, err)
	}
	if _, _, err := rt.BeginTurn(ctx, rid); err != nil {
		t.Fatalf("%q: turn: %v", name, err)
	}
	if ok, err := rt.Cancel(ctx, rid, store.CauseClientRequest); err != nil || !ok {
		t.Fatalf("%q: cancel: %v, %v", name, ok, err)
	}
}

// seedTenants writes the same agent-session keys, with events and state in
// every scope, into the default tenant and the tenants named, through the
// library, and a governed session and a conversation in the default
// tenant.
func seedTenants(t *testing.T, ctx context.Context, st *pgstore.Store, tenants ...string) {
	t.Helper()
	key := store.SessionKey{App: "app", User: "user", Session: "session"}
	for _, name := range append([]string{""}, tenants...) {
		as, c, rt, ret := st.AgentSessions(), st.Conversations(), st.Runtime(), st.Retention()
		if name != "" {
			ts, err := st.Tenant(name)
			if err != nil {
				t.Fatal(err)
			}
			as, c, rt, ret = ts.AgentSessions(), ts.Conversations(), ts.Runtime(), ts.Retention()
		}
		seedTenantConversations(t, ctx, c, rt, name)
		// The same hold in every tenant (migration 23).
		if err := ret.Hold(ctx, store.SessionRef{Facet: store.HoldAgentSessions, App: key.App, UserID: key.User, ID: key.Session}, "of "+name); err != nil {
			t.Fatalf("%q: hold: %v", name, err)
		}
		v := json.RawMessage(fmt.Sprintf("%q", "of "+name))
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		for i := 1; i <= 3; i++ {
			_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
				Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i),
					Data: json.RawMessage(fmt.Sprintf(`{"content":{"parts":[{"text":"words of %s"}]}}`, name))},
				Delta: store.ScopedState{App: map[string]json.RawMessage{"k": v}, User: map[string]json.RawMessage{"k": v},
					Session: map[string]json.RawMessage{"k": v}}})
			if err != nil {
				t.Fatalf("%q: append: %v", name, err)
			}
		}
	}
	if _, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "agent", AuthorizedTools: []string{"*"}, CallBudget: 5, TimeLimit: time.Hour}); err != nil {
		t.Fatal(err)
	}
}

// newTenantRole creates a role subject to the row-level security policies
// (granted the schema's tables, owner of none) and returns its name; it is
// dropped when t ends.
func newTenantRole(t *testing.T, ctx context.Context, schema string, login bool) string {
	t.Helper()
	pool := adminPool(t)
	var b [6]byte
	rand.Read(b[:])
	role := "tenant_role_" + hex.EncodeToString(b[:])
	create := "CREATE ROLE " + role
	if login {
		create += " LOGIN"
	}
	for _, q := range []string{
		create,
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := pool.Exec(context.Background(), q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
	return role
}

// tenantSchemaOf returns the search_path of a location newSchema made.
func tenantSchemaOf(t *testing.T, loc string) string {
	t.Helper()
	u, err := url.Parse(loc)
	if err == nil && u.Query().Get("search_path") != "" {
		return u.Query().Get("search_path")
	}
	cfg, err := pgx.ParseConfig(loc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.RuntimeParams["search_path"]
}

// asTenantRole runs fn in a transaction of the test's connection switched
// to role (SET LOCAL ROLE) with the transaction's tenant set as the
// library sets it (set_config(..., true)); tenant nil sets none. The
// transaction is rolled back.
func asTenantRole(t *testing.T, ctx context.Context, loc, role string, tenant *string, fn func(tx pgx.Tx)) {
	t.Helper()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
		t.Fatal(err)
	}
	if tenant != nil {
		if _, err := tx.Exec(ctx, "SELECT set_config('sessionstore.tenant', $1, true)", *tenant); err != nil {
			t.Fatal(err)
		}
	}
	fn(tx)
}

// counts returns, per table, the number of rows of each tenant the
// transaction sees.
func tenantCounts(t *testing.T, ctx context.Context, tx pgx.Tx) map[string]map[string]int64 {
	t.Helper()
	out := map[string]map[string]int64{}
	for _, table := range tenantTables {
		rows, err := tx.Query(ctx, "SELECT tenant, count(*) FROM "+table+" GROUP BY tenant")
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		out[table] = map[string]int64{}
		for rows.Next() {
			var tenant string
			var n int64
			if err := rows.Scan(&tenant, &n); err != nil {
				t.Fatal(err)
			}
			out[table][tenant] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
	}
	return out
}

// TestTenantRowLevelSecurity: raw SQL as a role subject to the policies
// sees and changes only the rows of the transaction's tenant, nothing
// without a tenant or with the default tenant's, and cannot write a row of
// another tenant; the owner keeps seeing every row.
func TestTenantRowLevelSecurity(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seedTenants(t, ctx, st, "tenant-a", "tenant-b")
	// The search documents are folded in after the writes (migration
	// 27); a check folds what is queued.
	if _, err := st.CheckSearchIndex(ctx); err != nil {
		t.Fatal(err)
	}
	role := newTenantRole(t, ctx, tenantSchemaOf(t, loc), false)

	// The owner (the test's own connection) sees every tenant, and the
	// library filled the tenant of every child row without naming it.
	owner, err := pgx.Connect(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	ownerTx, err := owner.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := tenantCounts(t, ctx, ownerTx)
	ownerTx.Rollback(ctx)
	for _, table := range []string{"agent_sessions", "agent_events", "agent_state_log",
		"agent_app_state", "agent_user_state", "search_docs", "retention_holds"} {
		for _, tenant := range []string{"", "tenant-a", "tenant-b"} {
			if all[table][tenant] == 0 || all[table][tenant] != all[table][""] {
				t.Errorf("owner: %s has %v rows per tenant; want the same number (> 0) in each", table, all[table])
			}
		}
	}
	for _, table := range convTenantTables {
		for _, tenant := range []string{"", "tenant-a", "tenant-b"} {
			if all[table][tenant] == 0 || all[table][tenant] != all[table][""] {
				t.Errorf("owner: %s has %v rows per tenant; want the same number (> 0) in each", table, all[table])
			}
		}
	}
	if all["governed_sessions"][""] != 1 {
		t.Errorf("owner: governed_sessions per tenant %v", all["governed_sessions"])
	}

	a, empty := "tenant-a", ""
	for _, tc := range []struct {
		name   string
		tenant *string
		want   string // the only tenant visible; "-" none
	}{
		{"NoTenantSeesNothing", nil, "-"},
		{"DefaultTenantSeesNothing", &empty, "-"},
		{"TenantSeesItsRowsOnly", &a, a},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asTenantRole(t, ctx, loc, role, tc.tenant, func(tx pgx.Tx) {
				for table, per := range tenantCounts(t, ctx, tx) {
					for tenant, n := range per {
						if tenant != tc.want {
							t.Errorf("%s: sees %d rows of tenant %q", table, n, tenant)
						} else if n != all[table][tenant] {
							t.Errorf("%s: sees %d of its %d rows", table, n, all[table][tenant])
						}
					}
					if tc.want != "-" && all[table][tc.want] > 0 && per[tc.want] == 0 {
						t.Errorf("%s: sees none of its rows", table)
					}
				}
			})
		})
	}

	t.Run("WritesStayInTheTenant", func(t *testing.T) {
		asTenantRole(t, ctx, loc, role, &a, func(tx pgx.Tx) {
			// A row without a tenant takes the transaction's.
			if _, err := tx.Exec(ctx, "INSERT INTO agent_app_state (app, key, value) VALUES ('app', 'new', '1')"); err != nil {
				t.Fatalf("insert: %v", err)
			}
			var tenant string
			if err := tx.QueryRow(ctx, "SELECT tenant FROM agent_app_state WHERE app = 'app' AND key = 'new'").Scan(&tenant); err != nil || tenant != a {
				t.Fatalf("inserted row's tenant %q, %v", tenant, err)
			}
			// Updates and deletes without a WHERE reach the tenant's rows only.
			for q, want := range map[string]int64{
				"UPDATE agent_events SET data = '{}'":                   all["agent_events"][a],
				"UPDATE agent_user_state SET value = '0'":               all["agent_user_state"][a],
				"DELETE FROM agent_state_log":                           all["agent_state_log"][a],
				"UPDATE conversation_retired SET fork_next = fork_next": all["conversation_retired"][a],
				"DELETE FROM conversation_retired_messages":             all["conversation_retired_messages"][a],
				"UPDATE runtime_cancel_causes SET taken = true":         all["runtime_cancel_causes"][a],
				"UPDATE governed_sessions SET calls_made = 0":           0,
			} {
				tag, err := tx.Exec(ctx, q)
				if err != nil || tag.RowsAffected() != want {
					t.Errorf("%s: %d rows, %v; want %d", q, tag.RowsAffected(), err, want)
				}
			}
			// A row of another tenant, or of the default tenant, is refused.
			for _, q := range []string{
				"INSERT INTO agent_app_state (tenant, app, key, value) VALUES ('tenant-b', 'app', 'x', '1')",
				"INSERT INTO agent_app_state (tenant, app, key, value) VALUES ('', 'app', 'x', '1')",
			} {
				if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
					t.Fatal(err)
				}
				_, err := tx.Exec(ctx, q)
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
					t.Errorf("%s: %v; want a row-level security violation (42501)", q, err)
				}
				if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
					t.Fatal(err)
				}
			}
			// Moving a row to another tenant is refused too.
			if _, err := tx.Exec(ctx, "SAVEPOINT s"); err != nil {
				t.Fatal(err)
			}
			_, err := tx.Exec(ctx, "UPDATE agent_sessions SET tenant = 'tenant-b'")
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Errorf("moving a session to another tenant: %v; want a row-level security violation", err)
			}
		})
	})
}

// TestTenantStoreAsTenantRole: a store connected as a role subject to the
// policies works through a tenant handle (each of its transactions sets
// the tenant) and sees the tenant's rows only.
func TestTenantStoreAsTenantRole(t *testing.T) {
	ctx := context.Background()
	loc := newSchema(t)
	st, err := pgstore.Open(ctx, loc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seedTenants(t, ctx, st, "tenant-a", "tenant-b")
	role := newTenantRole(t, ctx, tenantSchemaOf(t, loc), true)
	roleLoc, err := withParam(loc, "user", role)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pgstore.Open(ctx, roleLoc, pgstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatalf("open as %s: %v", role, err)
	}
	defer rs.Close()
	// The owner's tenant handles read without setting the tenant; the
	// tenant role's must set it (or the policies would hide every row).
	if !st.BypassesRLS() || rs.BypassesRLS() {
		t.Fatalf("bypasses row-level security: owner %v, %s %v; want true, false", st.BypassesRLS(), role, rs.BypassesRLS())
	}
	ts, err := rs.Tenant("tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	as := ts.AgentSessions()
	key := store.SessionKey{App: "app", User: "user", Session: "session"}
	s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true})
	if err != nil || len(s.Events) != 3 || string(s.State.App["k"]) != `"of tenant-a"` {
		t.Fatalf("GetSession as the tenant role = %+v, %v", s, err)
	}
	if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{ID: "e4", Data: json.RawMessage(`{}`)}}); err != nil {
		t.Fatalf("append as the tenant role: %v", err)
	}
	other := store.SessionKey{App: "app", User: "user", Session: "new"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: other}); err != nil {
		t.Fatalf("create as the tenant role: %v", err)
	}
	// Holds and reads as the tenant role: its own only; the operator's
	// methods are refused.
	ret := ts.Retention()
	otherRef := store.SessionRef{Facet: store.HoldAgentSessions, App: other.App, UserID: other.User, ID: other.Session}
	if err := ret.Hold(ctx, otherRef, "role"); err != nil {
		t.Fatalf("hold as the tenant role: %v", err)
	}
	if hs, err := ret.Holds(ctx); err != nil || len(hs) != 2 || hs[0].Reason != "role" || hs[1].Reason != "of tenant-a" {
		t.Fatalf("Holds as the tenant role = %+v, %v; want tenant-a's two", hs, err)
	}
	if ok, err := ret.Release(ctx, otherRef); err != nil || !ok {
		t.Fatalf("release as the tenant role: %v, %v", ok, err)
	}
	if err := ret.Accessed(ctx, otherRef); err != nil {
		t.Fatalf("Accessed as the tenant role: %v", err)
	}
	if _, err := ret.Sweep(ctx, store.SweepOptions{DryRun: true}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("Sweep as the tenant role = %v, want ErrInvalidInput", err)
	}
	// Conversations and runtime sessions as the tenant role: reads, an
	// append, a fork and a rewind (which writes a retired history), a
	// turn and its cause; another tenant's id is not found, and taking it
	// is refused.
	c, rt := ts.Conversations(), ts.Runtime()
	conv, err := c.Load(ctx, "conv-of-tenant-a")
	if err != nil || len(conv.Messages) != 2 {
		t.Fatalf("Load as the tenant role = %+v, %v", conv, err)
	}
	if _, err := c.AppendMessages(ctx, conv.ID, store.UserMessage("more"), store.UserMessage("and more")); err != nil {
		t.Fatalf("append as the tenant role: %v", err)
	}
	if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: conv.ID, At: 2, NewID: "role-fork"}); err != nil {
		t.Fatalf("fork as the tenant role: %v", err)
	}
	if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: conv.ID, To: 0}); err != nil {
		t.Fatalf("rewind as the tenant role: %v", err)
	}
	if sup, err := c.Superseded(ctx, conv.ID); err != nil || len(sup) != 1 {
		t.Fatalf("Superseded as the tenant role = %+v, %v", sup, err)
	}
	if msgs, err := c.Messages(ctx, "role-fork", 0, 10); err != nil || len(msgs) != 3 {
		t.Fatalf("the fork reads %d messages as the tenant role (%v), want 3", len(msgs), err)
	}
	if _, err := c.Load(ctx, "conv-of-tenant-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load of tenant-b's conversation as tenant-a's role = %v, want ErrNotFound", err)
	}
	if _, err := c.Save(ctx, store.NewConversation("conv-of-tenant-b")); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Save of tenant-b's id as tenant-a's role = %v, want ErrConflict", err)
	}
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: "runtime-of-tenant-b", AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Insert of tenant-b's runtime id as tenant-a's role = %v, want ErrConflict", err)
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "runtime-of-tenant-a", RefID: "r2", WorkspacePath: "w", Content: []byte("x")}); err != nil {
		t.Fatalf("upload as the tenant role: %v", err)
	}
	gen, _, err := rt.BeginTurn(ctx, "runtime-of-tenant-a")
	if err != nil {
		t.Fatalf("turn as the tenant role: %v", err)
	}
	if ok, err := rt.Cancel(ctx, "runtime-of-tenant-a", store.CauseClientRequest); err != nil || !ok {
		t.Fatalf("cancel as the tenant role: %v, %v", ok, err)
	}
	if cause, ok, err := rt.TakeCancelCause(ctx, "runtime-of-tenant-a", gen); err != nil || !ok || cause != store.CauseClientRequest {
		t.Fatalf("TakeCancelCause as the tenant role = %q, %v, %v", cause, ok, err)
	}
	if _, err := rt.Get(ctx, "runtime-of-tenant-b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of tenant-b's runtime session as tenant-a's role = %v, want ErrNotFound", err)
	}

	// Governance, spend and audit through the handle, as the tenant role:
	// every transaction sets the tenant, so the policies let the rows by.
	gov := ts.Governance()
	gs, err := gov.Create(ctx, store.CreateRequest{AgentID: "agent", AuthorizedTools: []string{"t"}, CallBudget: 3,
		TimeLimit: time.Hour, MaxActivePerAgent: 1,
		SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Window: store.WindowLifetime, Limit: 100}}})
	if err != nil {
		t.Fatalf("governed create as the tenant role: %v", err)
	}
	for i, req := range []store.UseRequest{{SessionID: gs.ID, Tools: []string{"t"}}, {SessionID: gs.ID, Tools: []string{"t"}, RequestID: "r"},
		{SessionID: gs.ID, Tools: []string{}}} {
		if _, err := gov.Use(ctx, req); err != nil {
			t.Fatalf("governed use %d as the tenant role: %v", i, err)
		}
	}
	if _, err := gov.Use(ctx, store.UseRequest{SessionID: gs.ID, Tools: []string{"t", "t"}}); !errors.Is(err, store.ErrBudgetExceeded) {
		t.Fatalf("governed use over the budget as the tenant role = %v, want ErrBudgetExceeded", err)
	}
	if got, err := gov.Get(ctx, gs.ID); err != nil || got.CallsMade != 2 {
		t.Fatalf("governed get as the tenant role = %+v, %v", got, err)
	}
	if _, err := ts.Spend().Reserve(ctx, store.ReserveRequest{SessionID: gs.ID, RequestID: "res", Amount: store.SpendAmount{InputTokens: 5}}); err != nil {
		t.Fatalf("reserve as the tenant role: %v", err)
	}
	if _, err := ts.Spend().Settle(ctx, store.SettleRequest{SessionID: gs.ID, RequestID: "res", Actual: store.SpendAmount{InputTokens: 4}}); err != nil {
		t.Fatalf("settle as the tenant role: %v", err)
	}
	if _, err := gov.Close(ctx, gs.ID); err != nil {
		t.Fatalf("governed close as the tenant role: %v", err)
	}
	if n, err := gov.Cleanup(ctx); err != nil || n != 1 {
		t.Fatalf("governed cleanup as the tenant role = %d, %v", n, err)
	}
	if rep, err := ts.Audit().Verify(ctx); err != nil || len(rep.Problems) != 0 || rep.Events < 6 {
		t.Fatalf("audit verify as the tenant role = %+v, %v", rep, err)
	}
	if rep, err := rs.Audit().Verify(ctx); err != nil || rep.Events != 0 {
		t.Fatalf("the default tenant's audit as the tenant role = %+v, %v; want nothing", rep, err)
	}
	if rep, err := ta0(t, st).Audit().Verify(ctx); err != nil || len(rep.Problems) != 0 || rep.Events < 6 {
		t.Fatalf("tenant-a's audit read by the owner = %+v, %v", rep, err)
	}
	// The store's own (default-tenant) facet, through the same role, sees
	// nothing: the policies hide the default tenant.
	p, err := rs.AgentSessions().ListSessions(ctx, store.ListAgentSessionsRequest{App: "app", Limit: 10})
	if err != nil || len(p.Items) != 0 {
		t.Fatalf("default-tenant list as the tenant role = %d sessions, %v; want none", len(p.Items), err)
	}
	// The owner sees tenant-a's new rows under tenant-a only.
	tb, err := st.Tenant("tenant-b")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := tb.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key}); err != nil || s.EventCount != 3 {
		t.Fatalf("tenant-b's session after tenant-a's append: %+v, %v", s, err)
	}
	ta, err := st.Tenant("tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ta.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: key}); err != nil || s.EventCount != 4 {
		t.Fatalf("tenant-a's session read by the owner: %+v, %v", s, err)
	}
}

// ta0 is tenant-a's handle on st.
func ta0(t *testing.T, st *pgstore.Store) store.TenantStore {
	t.Helper()
	ts, err := st.Tenant("tenant-a")
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
