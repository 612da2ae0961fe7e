package sqlstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

// openConvTest opens a store on a fresh file and closes it at test end.
func openConvTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := FreshDBPath(t, "sessions.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// convRawDB opens a second, independent connection pool on the file, for
// inspecting and damaging it behind the store's back.
func convRawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, "file:"+escapePath(path)+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func convQueryPlan(t *testing.T, db *sql.DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %q: %v", query, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// conversationTables lists every table of the conversation schema; all of
// them have a session_id column (or are conversations itself).
func conversationTables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	// Retired histories (lineage, migration 15) belong to no conversation:
	// what forks of a deleted conversation read, and superseded runs.
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'conversation%'
		AND name NOT LIKE 'conversation_retired%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if len(names) < 8 {
		t.Fatalf("conversation tables %v", names)
	}
	return names
}

// convPlanQuery is a query whose plan must search index (a name or part of
// one) and never scan a table.
type convPlanQuery struct {
	sql   string
	args  []any
	index string
	sort  bool // may sort its (already filtered) result
}

func convCheckPlans(t *testing.T, db *sql.DB, queries map[string]convPlanQuery) {
	t.Helper()
	for name, q := range queries {
		plan := convQueryPlan(t, db, q.sql, q.args...)
		if strings.Contains(plan, "SCAN ") {
			t.Errorf("%s scans a table:\n%s", name, plan)
		}
		if !strings.Contains(plan, "USING") || !strings.Contains(plan, q.index) {
			t.Errorf("%s does not search an index of %s:\n%s", name, q.index, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") && !q.sort {
			t.Errorf("%s sorts in a temporary b-tree:\n%s", name, plan)
		}
	}
}

// TestConversationQueriesUseIndexes checks with EXPLAIN QUERY PLAN that
// message reads, appends, listing and the lookups behind cascading deletes
// search an index instead of scanning a table.
func TestConversationQueriesUseIndexes(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	// Some data, so that ANALYZE below has something to measure.
	c := st.Conversations()
	for i := range 20 {
		id := "plan-" + string(rune('a'+i))
		if _, err := c.Save(ctx, store.Conversation{ID: id, ParentID: "p"}); err != nil {
			t.Fatal(err)
		}
		msgs := make([]store.Message, 50)
		for j := range msgs {
			msgs[j] = store.UserMessage("m")
		}
		if _, err := c.AppendMessages(ctx, id, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	db := convRawDB(t, path)
	queries := map[string]convPlanQuery{
		"messages from":      {msgRangeSQL, []any{"x", 0, 100}, "conversation_messages", false},
		"messages before":    {msgBeforeSQL, []any{"x", 100, 100}, "conversation_messages", false},
		"last message":       {msgLastSQL, []any{"x"}, "conversation_messages", false},
		"whole history":      {msgAllSQL, []any{"x"}, "conversation_messages", false},
		"trim head":          {msgDeleteHeadSQL, []any{"x", 5}, "conversation_messages", false},
		"list":               {listBaseSQL + listTailSQL, []any{"", "", 100}, "conversations_tenant", false},
		"list by parent":     {listBaseSQL + listParentSQL + listTailSQL, []any{"", "", "p", 100}, "conversations_parent", false},
		"list stale":         {listBaseSQL + listUpdatedSQL + listTailSQL, []any{"", "", 5, 100}, "conversations", true},
		"stale":              {staleSQL, []any{"", 5, 10}, "conversations_updated", false},
		"delete one":         {convDeleteSQL, []any{"x", ""}, "conversations", false},
		"load row":           {convGetSQL, []any{"x", ""}, "conversations", false},
		"cost records":       {costAllSQL, []any{"x"}, "conversation_cost_records", false},
		"artifacts":          {artifactAllSQL, []any{"x", ""}, "conversation_artifacts", false},
		"traces":             {traceRangeSQL, []any{"x", "", 0, -1}, "conversation_trace_events", false},
		"last trace":         {traceLastSQL, []any{"x"}, "conversation_trace_events", false},
		"runs":               {runAllSQL, []any{"x", ""}, "conversation_runs_created", false},
		"run events of run":  {runEventsOfRunSQL, []any{"x", "r"}, "conversation_run_events", false},
		"run events of conv": {runEventsOfConvSQL, []any{"x"}, "conversation_run_events", false},
		"reports":            {reportAllSQL, []any{"x", ""}, "conversation_reports", false},
	}
	// The reads of records with the conversation's data key (a probe of
	// the conversations primary key besides the same index range).
	for name, q := range map[string]convPlanQuery{
		"artifact keyed":        {sqlcore.Statements["artifactGetKeyed"], []any{"x", "x", "u", ""}, "conversation_artifacts", false},
		"artifacts keyed":       {sqlcore.Statements["artifactAllKeyed"], []any{"x", "x", ""}, "conversation_artifacts", false},
		"traces keyed":          {sqlcore.Statements["traceRangeKeyed"], []any{"x", "x", "", 0, -1}, "conversation_trace_events", false},
		"reports keyed":         {sqlcore.Statements["reportAllKeyed"], []any{"x", "x", ""}, "conversation_reports", false},
		"run keyed":             {sqlcore.Statements["runGetKeyed"], []any{"x", "x", "r", ""}, "conversation_runs", false},
		"runs keyed":            {sqlcore.Statements["runAllKeyed"], []any{"x", "x", ""}, "conversation_runs_created", false},
		"run events feed keyed": {sqlcore.Statements["feedRunEventsKeyed"], []any{"x", "x", "r", 0, 10}, "conversation_run_events", false},
	} {
		if q.sql == "" {
			t.Fatalf("statement of %s not registered", name)
		}
		queries[name] = q
	}
	// Plans are checked with the planner's default assumptions, then again
	// with statistics of this small database (where a scan is tempting).
	for _, analyze := range []bool{false, true} {
		if analyze {
			if _, err := db.Exec("ANALYZE"); err != nil {
				t.Fatal(err)
			}
		}
		convCheckPlans(t, db, queries)
	}

	// A cascading delete runs "DELETE FROM child WHERE <fk columns> = ?"
	// for every child table: each must find its rows through an index
	// ("delete one" above shows the cascade in its plan too).
	for _, table := range conversationTables(t, db) {
		if table == "conversations" {
			continue
		}
		q := "DELETE FROM " + table + " WHERE session_id = ?"
		args := []any{"x"}
		if table == "conversation_run_events" {
			q += " AND run_id = ?"
			args = append(args, "r")
		}
		plan := convQueryPlan(t, db, q, args...)
		if strings.Contains(plan, "SCAN ") || !strings.Contains(plan, "USING") {
			t.Errorf("cascade into %s scans:\n%s", table, plan)
		}
	}
	// Foreign keys are on for the store's writes: the cascade is real.
	var fk int
	err := st.write(ctx, func(tx *wtx) error { return tx.get(&fk, "PRAGMA foreign_keys") })
	if err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
}

// TestConversationDeleteCascadesEveryTable counts rows in every table of
// the conversation schema: deleting one conversation removes all of its
// rows and none of another's.
func TestConversationDeleteCascadesEveryTable(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	for _, id := range []string{"victim", "bystander"} {
		conv := store.NewConversation(id)
		conv.Messages = []store.Message{store.UserMessage("a"), store.AssistantMessage("b")}
		cost := 0.1
		conv.CostRecords = []store.CostRecord{{Model: "m", Provider: "p", CostUSD: &cost}}
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if err := c.PutArtifacts(ctx, id, store.Artifact{URI: "u1", Content: "x"}, store.Artifact{URI: "u2", Content: "y"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendTraces(ctx, id, store.TraceEvent{Kind: "tool_execution", Name: "read"}); err != nil {
			t.Fatal(err)
		}
		run := store.RunRecord{Snapshot: store.RunSnapshot{ID: "r1", Prompt: "p"},
			Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"type":"start"}`)}, {Seq: 1, Event: json.RawMessage(`{"type":"end"}`)}}}
		if err := c.PutRuns(ctx, id, run); err != nil {
			t.Fatal(err)
		}
		if err := c.AppendReports(ctx, id, store.VerificationReport{Subject: "s", Status: "passed"}); err != nil {
			t.Fatal(err)
		}
	}
	db := convRawDB(t, path)
	tables := conversationTables(t, db)
	count := func(table, id string) int {
		col := "session_id"
		if table == "conversations" {
			col = "id"
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM "+table+" WHERE "+col+" = ?", id).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		return n
	}
	before := map[string]int{}
	for _, table := range tables {
		if count(table, "victim") == 0 {
			t.Fatalf("test setup wrote nothing to %s", table)
		}
		before[table] = count(table, "bystander")
	}
	if err := c.Delete(ctx, "victim"); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		if n := count(table, "victim"); n != 0 {
			t.Errorf("%s keeps %d rows of the deleted conversation", table, n)
		}
		if n := count(table, "bystander"); n != before[table] {
			t.Errorf("%s: bystander has %d rows, had %d", table, n, before[table])
		}
	}
	var violations int
	if err := db.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&violations); err != nil || violations != 0 {
		t.Fatalf("foreign key check: %d violations, %v", violations, err)
	}
}

// convScanFiles reports which of the database's files (main, -wal, -shm)
// contain needle.
func convScanFiles(t *testing.T, path string, needle []byte) []string {
	t.Helper()
	var hits []string
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, filepath.Base(path+suffix))
		}
	}
	return hits
}

// TestConversationAPIKeyNeverWritten scans the bytes of the database file
// and its WAL after saving, appending and importing conversations whose LLM
// configuration carries an API key.
func TestConversationAPIKeyNeverWritten(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	const key = "sk-ant-api03-NEVER-ON-DISK-7f3a9c"
	const control = "CONTROL-MARKER-IN-A-MESSAGE-51e2"
	conv := store.NewConversation("keyed")
	conv.LLMConfig = &store.LLMConfig{Provider: "anthropic", Model: "claude", APIKey: key, BaseURL: "https://api.example.test"}
	conv.Messages = []store.Message{store.UserMessage(control)}
	if _, err := c.Save(ctx, conv); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
	}
	imported, err := a3s.Decode(strings.NewReader(`{"id":"imported","llm_config":{"provider":"openai","model":"gpt","api_key":"` + key + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if imported.LLMConfig.APIKey != key {
		t.Fatal("import did not read the key into memory")
	}
	if _, err := c.Save(ctx, imported); err != nil {
		t.Fatal(err)
	}
	// While the store is open the data sits in the WAL.
	if hits := convScanFiles(t, path, []byte(control)); len(hits) == 0 {
		t.Fatal("the scan does not see stored data: the test would prove nothing")
	}
	if hits := convScanFiles(t, path, []byte(key)); len(hits) > 0 {
		t.Fatalf("API key found in %v", hits)
	}
	for _, id := range []string{"keyed", "imported"} {
		got, err := c.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.LLMConfig == nil || got.LLMConfig.APIKey != "" || got.LLMConfig.Provider == "" {
			t.Fatalf("%s loaded llm config %+v", id, got.LLMConfig)
		}
	}
	// After close (checkpoint into the main file) too.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := convScanFiles(t, path, []byte(control)); len(hits) == 0 {
		t.Fatal("the scan does not see stored data after close")
	}
	if hits := convScanFiles(t, path, []byte(key)); len(hits) > 0 {
		t.Fatalf("API key found in %v after close", hits)
	}
}

// TestConversationDamagedRows damages stored JSON behind the store's back
// (the SQL equivalent of the seed's corrupted, empty and truncated session
// files): reads return ErrCorrupt naming the conversation, never panic, and
// other conversations are unaffected.
func TestConversationDamagedRows(t *testing.T) {
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	db := convRawDB(t, path)
	damage := []struct {
		name   string
		sql    string
		read   func(id string) error
		detail string
	}{
		{"invalid message JSON", `UPDATE conversation_messages SET content = 'not valid json {{{' WHERE session_id = ? AND seq = 1`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "message 1"},
		{"empty message", `UPDATE conversation_messages SET content = '' WHERE session_id = ? AND seq = 0`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "message 0"},
		{"truncated message", `UPDATE conversation_messages SET content = '[{"type":"text","te' WHERE session_id = ? AND seq = 0`,
			func(id string) error { _, err := c.Messages(ctx, id, 0, 10); return err }, "message 0"},
		{"message not an array", `UPDATE conversation_messages SET content = '{"type":"text"}' WHERE session_id = ? AND seq = 1`,
			func(id string) error { _, err := c.LastMessages(ctx, id, 1); return err }, "message 1"},
		{"untyped block", `UPDATE conversation_messages SET content = '[{"text":"x"}]' WHERE session_id = ? AND seq = 1`,
			func(id string) error { _, err := c.PopMessage(ctx, id); return err }, "message 1"},
		{"tool names", `UPDATE conversations SET tool_names = '["bash",' WHERE id = ?`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "tool_names"},
		{"tasks", `UPDATE conversations SET tasks = 'null x' WHERE id = ?`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "tasks"},
		{"llm config", `UPDATE conversations SET llm_config = '{"provider":' WHERE id = ?`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "llm_config"},
		{"policy", `UPDATE conversations SET permission_policy = '{"allow":[' WHERE id = ?`,
			func(id string) error { _, err := c.Load(ctx, id); return err }, "permission_policy"},
		{"trace event", `UPDATE conversation_trace_events SET event = '{' WHERE session_id = ?`,
			func(id string) error { _, err := c.Traces(ctx, id, 0, 0); return err }, "trace event 0"},
		{"report", `UPDATE conversation_reports SET report = '' WHERE session_id = ?`,
			func(id string) error { _, err := c.Reports(ctx, id); return err }, "verification report 0"},
		{"run snapshot", `UPDATE conversation_runs SET snapshot = '{"prompt":' WHERE session_id = ?`,
			func(id string) error { _, err := c.Runs(ctx, id); return err }, `run "r1" snapshot`},
		{"run event", `UPDATE conversation_run_events SET event = 'nope' WHERE session_id = ?`,
			func(id string) error { _, err := c.Run(ctx, id, "r1"); return err }, `run "r1" event 0`},
	}
	populate := func(id string) {
		conv := store.NewConversation(id)
		conv.Messages = []store.Message{store.UserMessage("a"), store.AssistantMessage("b")}
		conv.Config.PermissionPolicy = json.RawMessage(`{"allow":[]}`)
		conv.LLMConfig = &store.LLMConfig{Provider: "p", Model: "m"}
		if _, err := c.Save(ctx, conv); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AppendTraces(ctx, id, store.TraceEvent{Kind: "k"}); err != nil {
			t.Fatal(err)
		}
		if err := c.AppendReports(ctx, id, store.VerificationReport{Subject: "s", Status: "passed"}); err != nil {
			t.Fatal(err)
		}
		if err := c.PutRuns(ctx, id, store.RunRecord{Snapshot: store.RunSnapshot{ID: "r1"},
			Events: []store.RunEvent{{Event: json.RawMessage(`{}`)}}}); err != nil {
			t.Fatal(err)
		}
	}
	populate("healthy/neighbour")
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			id := "damaged/" + d.name
			populate(id)
			if _, err := db.Exec(d.sql, id); err != nil {
				t.Fatal(err)
			}
			err := d.read(id)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("read of a damaged row: %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), `"`+id+`"`) || !strings.Contains(err.Error(), d.detail) {
				t.Fatalf("error %q does not name the conversation and %s", err, d.detail)
			}
			// The rest of the store is fine.
			if _, err := c.Load(ctx, "healthy/neighbour"); err != nil {
				t.Fatalf("neighbour: %v", err)
			}
			// A damaged conversation can still be deleted, or overwritten.
			if _, err := c.Save(ctx, store.Conversation{ID: id}); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConversationIDsNeverTouchTheFilesystem saves ids that look like
// paths and checks that the directory holds only the database's own files.
func TestConversationIDsNeverTouchTheFilesystem(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "store")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(sub, "sessions.db")
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	ids := []string{"../../../etc/passwd", "../escape", `..\..\windows`, "session/a", "/abs/path", "sub/dir/file.json", "artifacts/x", "traces/y"}
	for _, id := range ids {
		if _, err := st.Conversations().Save(ctx, store.Conversation{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := st.Conversations().PutArtifacts(ctx, id, store.Artifact{URI: "a3s://" + id, Content: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "sessions.db") {
			t.Fatalf("unexpected file %q in the store directory (all: %v)", n, names)
		}
	}
	parent, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(parent) != 1 || parent[0].Name() != "store" {
		t.Fatalf("files appeared beside the store directory: %v", parent)
	}
	got := []string{}
	p, err := st.Conversations().List(ctx, store.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Items {
		got = append(got, s.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Fatalf("ids %v, want %v", got, ids)
	}
}

// TestConversationA3SFixtures imports every sample a3s session file,
// stores it, loads it and exports it again: the export decodes to the same
// conversation, and the API key stays in memory only.
func TestConversationA3SFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "a3s", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("fixtures: %v", files)
	}
	st, path := openConvTest(t)
	ctx := context.Background()
	c := st.Conversations()
	var keys []string
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			conv, err := a3s.Decode(fh)
			if err != nil {
				t.Fatal(err)
			}
			if conv.LLMConfig != nil && conv.LLMConfig.APIKey != "" {
				keys = append(keys, conv.LLMConfig.APIKey)
			}
			if _, err := c.Save(ctx, conv); err != nil {
				t.Fatal(err)
			}
			got, err := c.Load(ctx, conv.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Messages) != len(conv.Messages) || got.Config.Name != conv.Config.Name ||
				len(got.Tasks) != len(conv.Tasks) || got.TotalCost != conv.TotalCost {
				t.Fatalf("loaded %+v", got)
			}
			out, err := a3s.Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := a3s.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			// Times of messages are the store's (the format has none);
			// version and count are the store's.
			again.Version, again.MessageCount = got.Version, got.MessageCount
			for i := range again.Messages {
				again.Messages[i].CreatedAt = got.Messages[i].CreatedAt
			}
			a, _ := json.Marshal(again)
			b, _ := json.Marshal(got)
			if !bytes.Equal(a, b) {
				t.Fatalf("export does not round-trip:\n got %s\nwant %s", a, b)
			}
		})
	}
	if len(keys) == 0 {
		t.Fatal("no fixture carries an API key: the scan below would prove nothing")
	}
	for _, k := range keys {
		if hits := convScanFiles(t, path, []byte(k)); len(hits) > 0 {
			t.Fatalf("API key of a fixture found in %v", hits)
		}
	}
}
