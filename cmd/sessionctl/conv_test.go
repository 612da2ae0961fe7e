package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// openStore opens the env's database with its clock, for fixtures the CLI
// does not write itself.
func (e *testEnv) openStore() cliStore {
	e.t.Helper()
	e.seedFromTemplate() // openOrCreate would create a missing file
	g := &globals{db: e.db, now: e.clock.Now}
	st, err := g.openOrCreate(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

// convFixture writes conversations through the library: c1 (messages with
// a tool call, usage, cost, an artifact, trace events, a run with events,
// a report), c1/child (a child of c1 with 5 messages) and old (last
// updated 60 days before the clock).
func (e *testEnv) convFixture() {
	t := e.t
	t.Helper()
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	conv := st.Conversations()
	c := store.NewConversation("c1")
	c.Config.Name = "fix the parser"
	c.Config.Workspace = "/work/repo"
	c.ModelName = "model-a"
	if _, err := conv.Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	cost := 0.25
	_, err := conv.Append(ctx, store.AppendRequest{ID: "c1", Messages: []store.Message{
		store.UserMessage("The parser test is flaky.\nPlease fix it."),
		{Role: store.RoleAssistant, Content: []store.ContentBlock{store.ReasoningBlock("look first"), store.ToolUseBlock("t1", "read_file", json.RawMessage(`{"path": "parser.go"}`))}},
		{Role: store.RoleTool, Content: []store.ContentBlock{store.ToolResultBlock("t1", "package parser", false)}},
		{Role: store.RoleTool, Content: []store.ContentBlock{store.ToolResultBlock("t2", "exit status 1", true)}},
		store.AssistantMessage("Fixed: the test depended on map order."),
	}, Usage: &store.TokenUsage{PromptTokens: 900, CompletionTokens: 100, TotalTokens: 1000}, Cost: cost,
		CostRecords: []store.CostRecord{{Model: "model-a", Provider: "p", TotalTokens: 1000, CostUSD: &cost}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := conv.PutArtifacts(ctx, "c1", store.Artifact{URI: "a3s://tool-output/read/1", ID: "1", ToolName: "read_file",
		Content: "package parser\n", OriginalBytes: 15, ShownBytes: 15}); err != nil {
		t.Fatal(err)
	}
	if _, err := conv.AppendTraces(ctx, "c1",
		store.TraceEvent{Schema: "trace.v1", Kind: store.TraceToolExecution, Name: "read_file", Success: true, DurationMS: 12, OutputBytes: 15},
		store.TraceEvent{Schema: "trace.v1", Kind: store.TraceProgramExecution, Name: "go test", ExitCode: 1, DurationMS: 2300, OutputBytes: 900}); err != nil {
		t.Fatal(err)
	}
	if err := conv.PutRuns(ctx, "c1", store.RunRecord{
		Snapshot: store.RunSnapshot{ID: "run-1", Status: store.RunCompleted, Prompt: "fix the flaky parser test", ResultText: "fixed"},
		Events: []store.RunEvent{
			{Seq: 0, Timestamp: e.clock.Now(), Event: json.RawMessage(`{"type": "started"}`)},
			{Seq: 1, Timestamp: e.clock.Now(), Event: json.RawMessage(`{"type": "finished", "ok": true}`)},
		}}); err != nil {
		t.Fatal(err)
	}
	if err := conv.AppendReports(ctx, "c1", store.VerificationReport{Schema: "v1", Subject: "parser fix", Status: store.VerificationPassed,
		Checks: []store.VerificationCheck{
			{ID: "tests", Kind: "test", Description: "go test ./parser", Status: store.VerificationPassed, Required: true},
			{ID: "race", Kind: "test", Description: "go test -race", Status: store.VerificationSkipped},
		}, ResidualRisks: []string{"only one platform"}}); err != nil {
		t.Fatal(err)
	}
	child := store.NewConversation("c1/child")
	child.ParentID = "c1"
	child.State = store.StatePaused
	for i := range 5 {
		child.Messages = append(child.Messages, store.UserMessage(fmt.Sprintf("message %d", i)))
	}
	if _, err := conv.Save(ctx, child); err != nil {
		t.Fatal(err)
	}
	old := store.NewConversation("old")
	old.State = store.StateCompleted
	old.CreatedAt = e.clock.Now().Add(-90 * 24 * time.Hour)
	old.UpdatedAt = e.clock.Now().Add(-60 * 24 * time.Hour)
	old.Messages = []store.Message{store.UserMessage("hello"), store.AssistantMessage("hi")}
	if _, err := conv.Save(ctx, old); err != nil {
		t.Fatal(err)
	}
}

func TestGoldenConversations(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGoldenConversations)
}

func testGoldenConversations(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.run("create", "--id", "c1", "--agent", "a1", "--tool", "read_file", "--budget", "10").want(t, 0)
	e.convFixture()
	for _, c := range []struct {
		name string
		args []string
	}{
		{"conv_list", []string{"list", "--facet", "conversations"}},
		{"conv_list_parent_json", []string{"list", "--parent", "c1", "--json"}},
		{"conv_show", []string{"show", "c1"}},
		{"conv_show_json", []string{"show", "c1", "--json"}},
		{"conv_messages", []string{"messages", "c1"}},
		{"conv_messages_page", []string{"messages", "c1", "--from", "1", "--limit", "2", "--width", "40"}},
		{"conv_messages_json", []string{"messages", "c1", "--last", "2", "--json"}},
		{"conv_artifacts", []string{"artifacts", "c1"}},
		{"conv_artifacts_json", []string{"artifacts", "c1", "--json"}},
		{"conv_artifact_content", []string{"artifacts", "c1", "--uri", "a3s://tool-output/read/1"}},
		{"conv_traces", []string{"traces", "c1"}},
		{"conv_traces_json", []string{"traces", "c1", "--from", "1", "--json"}},
		{"conv_runs", []string{"runs", "c1", "--events"}},
		{"conv_runs_json", []string{"runs", "c1", "--json"}},
		{"conv_reports", []string{"reports", "c1"}},
		{"conv_reports_json", []string{"reports", "c1", "--json"}},
		{"conv_records_empty", []string{"traces", "c1/child"}},
		{"conv_export", []string{"export", "c1/child"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(c.args...).want(t, 0)
			golden(t, c.name, e.normalize(r.stdout+r.stderr))
		})
	}
}

func TestConversationCommandErrors(t *testing.T) {
	t.Parallel()
	bothBackends(t, testConversationCommandErrors)
}

func testConversationCommandErrors(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.convFixture()
	for _, args := range [][]string{
		{"messages", "nope"}, {"artifacts", "nope"}, {"traces", "nope"}, {"runs", "nope"}, {"reports", "nope"},
		{"artifacts", "c1", "--uri", "a3s://missing"},
	} {
		e.run(args...).want(t, exitNotFound).oneLineErr(t, "not found")
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"messages"}, "missing ID"},
		{[]string{"messages", "c1", "--from", "-1"}, "--from must not be negative"},
		{[]string{"messages", "c1", "--limit", "0"}, "--limit must be between 1 and 9999"},
		{[]string{"messages", "c1", "--last", "-2"}, "--last must be between"},
		{[]string{"traces", "c1", "--from", "-1"}, "from: must not be negative"},
		{[]string{"list", "--facet", "uploads"}, "--facet must be governed, runtime or conversations"},
		{[]string{"list", "--parent", "c1", "--agent", "a"}, "--agent and --status apply to governed sessions"},
		{[]string{"list", "--facet", "governed", "--parent", "c1"}, "--parent applies to conversations"},
		{[]string{"gc"}, "give --older-than, --keep-last or both"},
		{[]string{"gc", "--older-than", "-1h"}, `invalid value "-1h" for flag --older-than: a negative duration is refused`},
		{[]string{"gc", "--keep-last", "-3"}, "--keep-last must not be negative"},
	} {
		e.run(c.args...).want(t, exitUsage).oneLineErr(t, c.msg)
	}
	r := e.run("messages", "c1", "--limit", "2").want(t, 0)
	if r.stderr != "more messages follow: add --from 2 for the next page\n" {
		t.Errorf("paging hint: %q", r.stderr)
	}
	var doc messagesJSON
	if err := json.Unmarshal([]byte(e.run("messages", "c1", "--from", "4", "--limit", "1", "--json").want(t, 0).stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Messages) != 1 || doc.Messages[0].Seq != 4 || doc.NextFrom != nil || doc.MessageCount != 5 {
		t.Errorf("last page: %+v", doc)
	}
	if r := e.run("messages", "c1", "--from", "50").want(t, 0); r.stdout != "no messages (the conversation has 5)\n" {
		t.Errorf("past the end: %q", r.stdout)
	}
}

func TestGC(t *testing.T) {
	t.Parallel()
	bothBackends(t, testGC)
}

func testGC(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	e.convFixture()
	var dry, real gcJSON
	r := e.run("gc", "--older-than", "720h", "--keep-last", "2", "--dry-run", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &dry); err != nil {
		t.Fatal(err)
	}
	if dry.WALResult != nil || !dry.DryRun {
		t.Errorf("dry run: %s", r.stdout)
	}
	before := e.run("list", "--facet", "conversations", "--json").want(t, 0).stdout
	if after := e.run("list", "--facet", "conversations", "--json").want(t, 0).stdout; after != before {
		t.Fatal("dry run changed the conversations")
	}
	r = e.run("gc", "--older-than", "720h", "--keep-last", "2", "--json").want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &real); err != nil {
		t.Fatal(err)
	}
	// "old" goes; c1 (5 messages) and c1/child (5) keep their last 2.
	// SQLite checkpoints its WAL afterwards; PostgreSQL has nothing to report.
	walOK := (e.pg && real.WALResult == nil) || (!e.pg && real.WALResult != nil && real.WALBytesAfter == 0)
	if real.DeletedConversations != 1 || real.TrimmedConversations != 2 || real.RemovedMessages != 6 || !walOK {
		t.Fatalf("gc: %s", r.stdout)
	}
	if dry.DeletedConversations != real.DeletedConversations || dry.TrimmedConversations != real.TrimmedConversations || dry.RemovedMessages != real.RemovedMessages {
		t.Errorf("dry run %+v differs from the real run %+v", dry, real)
	}
	e.run("show", "old").want(t, exitNotFound)
	var msgs messagesJSON
	if err := json.Unmarshal([]byte(e.run("messages", "c1", "--json").want(t, 0).stdout), &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs.Messages) != 2 || msgs.Messages[0].Seq != 3 || msgs.MessageCount != 2 {
		t.Errorf("c1 after gc: %+v", msgs)
	}
	// Records survive trimming; deleting a conversation takes its records.
	e.run("runs", "c1").want(t, 0)
	r = e.run("gc", "--older-than", "1ms").want(t, 0)
	if !strings.HasPrefix(r.stdout, "deleted 0 conversations not updated since ") {
		t.Errorf("second gc: %q", r.stdout)
	}
	e.clock.Advance(time.Hour)
	if e.pg {
		e.run("gc", "--older-than", "1m", "--vacuum").want(t, exitError).oneLineErr(t, "--vacuum is not supported on PostgreSQL: autovacuum reclaims space")
		r = e.run("gc", "--older-than", "1m").want(t, 0)
		if r.stdout != "deleted 2 conversations not updated since 2026-01-02 04:03:05Z\n" {
			t.Errorf("gc of everything:\n%s", r.stdout)
		}
	} else {
		r = e.run("gc", "--older-than", "1m", "--vacuum").want(t, 0)
		if !strings.HasPrefix(r.stdout, "deleted 2 conversations not updated since 2026-01-02 04:03:05Z\nwal: ") || !strings.Contains(r.stdout, "vacuum: database file") {
			t.Errorf("gc of everything:\n%s", r.stdout)
		}
	}
	e.run("runs", "c1").want(t, exitNotFound).oneLineErr(t, "not found")
}

func TestExportImportConversations(t *testing.T) {
	t.Parallel()
	bothBackends(t, testExportImportConversations)
}

func testExportImportConversations(t *testing.T, newTestEnv envMaker) {
	src := newTestEnv(t)
	src.run("create", "--id", "c1", "--agent", "a1", "--tool", "read_file", "--budget", "10").want(t, 0)
	src.run("use", "c1", "--tool", "read_file").want(t, 0)
	src.convFixture()
	file := filepath.Join(src.dir, "all.json")
	r := src.run("export", "--output", file).want(t, 0)
	if r.stderr != "exported 1 governed session, 3 conversations and 2 audit chains to "+file+"\n" {
		t.Errorf("export: %q", r.stderr)
	}
	dst := newTestEnv(t)
	dst.clock = src.clock
	r = dst.run("import", file).want(t, 0)
	if r.stdout != "imported 1 governed session, 3 conversations and 2 audit chains from 1 file\n" {
		t.Errorf("import: %q", r.stdout)
	}
	for _, args := range [][]string{
		{"show", "c1", "--json"}, {"show", "old", "--json"}, {"show", "c1/child", "--json"},
		{"messages", "c1", "--json"}, {"artifacts", "c1", "--json"}, {"traces", "c1", "--json"},
		{"runs", "c1", "--json"}, {"reports", "c1", "--json"}, {"list", "--json"},
	} {
		// Everything, versions included, reads back as it was.
		want := src.run(args...).want(t, 0).stdout
		got := dst.run(args...).want(t, 0).stdout
		if got != want {
			t.Errorf("%v after import differs:\n%s\nwant:\n%s", args, got, want)
		}
	}
	// Importing again conflicts before writing anything; --skip-existing skips.
	before := fileState(t, dst.db)
	dst.run("import", file).want(t, exitConflict).oneLineErr(t, "c1 exists (use --skip-existing)")
	sameFiles(t, before, fileState(t, dst.db))
	r = dst.run("import", "--skip-existing", file).want(t, 0)
	if r.stdout != "imported nothing from 1 file, 6 existing skipped\n" {
		t.Errorf("import --skip-existing: %q", r.stdout)
	}
}

func TestImportA3S(t *testing.T) {
	t.Parallel()
	bothBackends(t, testImportA3S)
}

func testImportA3S(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "a3s", "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("a3s fixtures: %v %v", files, err)
	}
	r := e.run(append([]string{"import"}, files...)...).want(t, 0)
	if r.stdout != fmt.Sprintf("imported %d conversations from %d files\n", len(files), len(files)) {
		t.Errorf("import: %q", r.stdout)
	}
	golden(t, "a3s_list", e.run("list", "--facet", "conversations").want(t, 0).stdout)
	var page convListJSON
	if err := json.Unmarshal([]byte(e.run("list", "--parent", "sess-7c1e2f40-coding", "--json").want(t, 0).stdout), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].ID != "sess-7c1e2f40-coding/child/review" {
		t.Errorf("children: %+v", page.Items)
	}
	// The API key of the legacy file is never written.
	if e.storeBytesContain([]byte("LEGACY-FIXTURE-KEY")) {
		t.Fatal("the a3s api_key reached the database")
	}
	// A broken a3s file is refused with the field named, and writes nothing.
	bad := filepath.Join(e.dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"id": "x", "todos": [{"id": 1}], "tasks": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fileState(t, e.db)
	e.run("import", bad).want(t, exitUsage).oneLineErr(t, "an a3s session file: invalid input")
	sameFiles(t, before, fileState(t, e.db))
}
