package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestTenantChildRows: the rows a tenant's session owns but that no INSERT
// of the library names the tenant of (events, session state, the state
// log, search documents) take it from the session row (migration 17's
// triggers); the default tenant's stay ”. Read with raw SQL.
func TestTenantChildRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sessions.db")
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
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"agent_sessions", "agent_events", "agent_session_state", "agent_state_log",
		"agent_app_state", "agent_user_state", "search_docs"} {
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
