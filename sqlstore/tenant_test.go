package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestTenantChildRows: the rows a tenant's session owns carry its tenant,
// and so do the rows of a tenant's conversation, its retired histories,
// its runtime rows and the search documents of all of them, because every
// INSERT names it (migrations 34 and 38 dropped the triggers that copied
// it from the session or conversation row); the default tenant's stay the
// empty name. Read with raw SQL.
func TestTenantChildRows(t *testing.T) {
	ctx := context.Background()
	path := sqlstore.FreshDBPath(t, "sessions.db")
	st, err := sqlstore.Open(ctx, path, sqlstore.WithClock(storetest.NewClock().Now))
	if err != nil {
		t.Fatal(err)
	}
	key := store.SessionKey{App: "app", User: "user", Session: "session"}
	for _, name := range []string{"", "tenant-a", "tenant-b"} {
		as := st.AgentSessions()
		if name != "" {
			ts, err := st.Tenant(name)
			if err != nil {
				t.Fatal(err)
			}
			as = ts.AgentSessions()
		}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			v := json.RawMessage(fmt.Sprint(i))
			if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
				Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), Data: json.RawMessage(`{"content":{"parts":[{"text":"hello"}]}}`)},
				Delta: store.ScopedState{App: map[string]json.RawMessage{"k": v}, User: map[string]json.RawMessage{"k": v},
					Session: map[string]json.RawMessage{"k": v}}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := as.Fork(ctx, store.ForkRequest{Key: key, At: 2, Session: "fork"}); err != nil {
			t.Fatal(err)
		}
		c, rt := st.Conversations(), st.Runtime()
		if name != "" {
			ts, _ := st.Tenant(name)
			c, rt = ts.Conversations(), ts.Runtime()
		}
		tenantConversationRows(t, ctx, c, rt, "of-"+name)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"agent_sessions", "agent_events", "agent_state_log",
		"agent_app_state", "agent_user_state", "search_docs",
		"conversations", "conversation_messages", "conversation_cost_records", "conversation_artifacts",
		"conversation_trace_events", "conversation_runs", "conversation_run_events", "conversation_reports",
		"conversation_retired", "conversation_retired_messages",
		"runtime_sessions", "runtime_cancel_causes", "uploads"} {
		per := map[string]int64{}
		rows, err := db.Query("SELECT tenant, count(*) FROM " + table + " GROUP BY tenant")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var tenant string
			var n int64
			if err := rows.Scan(&tenant, &n); err != nil {
				t.Fatal(err)
			}
			per[tenant] = n
		}
		rows.Close()
		if len(per) != 3 || per[""] == 0 || per["tenant-a"] != per[""] || per["tenant-b"] != per[""] {
			t.Errorf("%s: rows per tenant %v; want the same number (> 0) for '', tenant-a and tenant-b", table, per)
		}
	}
}

// tenantConversationRows writes a row into every table of conversations
// and runtime sessions through c and rt (ids end in suffix: they are
// global): a conversation with messages, a cost record, an artifact, a
// trace, a run with an event and a report, forked and then rewound (a
// retired history with messages), and a runtime session with an upload
// and a cancelled turn.
func tenantConversationRows(t *testing.T, ctx context.Context, c store.Conversations, rt store.Runtime, suffix string) {
	t.Helper()
	id := "conv-" + suffix
	conv := store.NewConversation(id)
	conv.Messages = []store.Message{store.UserMessage("one"), store.AssistantMessage("two"), store.UserMessage("three")}
	conv.CostRecords = []store.CostRecord{{Model: "m", Provider: "p", TotalTokens: 1}}
	if _, err := c.Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	if err := c.PutArtifacts(ctx, id, store.Artifact{URI: "a3s://x/1", ID: "x", ToolName: "t", Content: "c"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendTraces(ctx, id, store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := c.PutRuns(ctx, id, store.RunRecord{Snapshot: store.RunSnapshot{ID: "run", Status: store.RunCreated},
		Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"type":"start"}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.AppendReports(ctx, id, store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "s", Status: store.VerificationPassed}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: id, At: 2, NewID: "fork-" + suffix}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: id, To: 0}); err != nil {
		t.Fatal(err)
	}
	rid := "rt-" + suffix
	if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: rid, AgentAlias: "a", WorkspaceDir: "/w", ChatMode: store.ChatModeChat}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: rid, RefID: "r", WorkspacePath: "w", Content: []byte(suffix)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rt.BeginTurn(ctx, rid); err != nil {
		t.Fatal(err)
	}
	if ok, err := rt.Cancel(ctx, rid, store.CauseClientRequest); err != nil || !ok {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
}
