package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

// RunConversations runs the conversation-persistence tests: every test of
// the a3s seed (translated where it was about files), plus O(1) appends
// under contention across goroutines and processes, ranged reads, undo,
// retention, optimistic versions, cascading deletes and bad input.
func RunConversations(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		// Ported from the a3s seed.
		{"SaveAndLoad", testConvSaveAndLoad},
		{"LoadNonexistentIsNotFound", testConvLoadNonexistent},
		{"Delete", testConvDelete},
		{"SaveAndLoadArtifacts", testConvArtifacts},
		{"SaveAndLoadTraceEvents", testConvTraceEvents},
		{"SaveAndLoadRunRecords", testConvRunRecords},
		{"SaveAndLoadVerificationReports", testConvReports},
		{"DeleteRemovesArtifacts", testConvDeleteArtifacts},
		{"DeleteRemovesTraceEvents", testConvDeleteTraces},
		{"DeleteRemovesRunRecords", testConvDeleteRuns},
		{"DeleteRemovesVerificationReports", testConvDeleteReports},
		{"List", testConvList},
		{"Overwrite", testConvOverwrite},
		{"PathLikeIDsAreStoredVerbatim", testConvPathLikeIDs},
		{"WithPolicies", testConvPolicies},
		{"WithLLMConfigKeyNotPersisted", testConvLLMConfig},
		{"SerializationRoundTrip", testConvSerialization},
		{"Exists", testConvExists},
		{"HealthCheck", testConvHealthCheck},
		{"HealthCheckAfterCloseFails", testConvHealthCheckClosed},
		{"ConcurrentSavesLeaveOneCompleteVersion", testConvConcurrentSaves},
		// Beyond the seed.
		{"EveryFieldRoundTrips", testConvEveryField},
		{"DefaultsApplied", testConvDefaults},
		{"AppendIsGaplessAcrossGoroutines", testConvAppendGapless},
		{"AppendUpdatesUsageAndTime", testConvAppendUsage},
		{"AppendToMissingIsNotFound", testConvAppendMissing},
		{"ConcurrentAppendersNeverConflict", testConvAppendersNoConflict},
		{"LoadIsConsistentDuringAppends", testConvLoadConsistent},
		{"MessagesRangedReadsAndBackwardCursor", testConvMessagesRanged},
		{"PopMessageUndo", testConvPop},
		{"TrimMessagesKeepsLastN", testConvTrim},
		{"TrimAllMessages", testConvTrimAll},
		{"DeleteUpdatedBefore", testConvDeleteUpdatedBefore},
		{"ListPagingParentAndAge", testConvListPaging},
		{"OptimisticVersion", testConvVersion},
		{"RecordWritesBumpVersion", testConvRecordWritesBumpVersion},
		{"ConcurrentConditionalSavesOneWins", testConvConditionalRace},
		{"DeleteCascadesNoLeftovers", testConvDeleteNoLeftovers},
		{"SaveKeepsArtifactsTracesRunsReports", testConvSaveKeepsRecords},
		{"RecordsForMissingConversationAreNotFound", testConvRecordsMissing},
		{"ArtifactReplacedOnSameURI", testConvArtifactReplace},
		{"RunEventsAppend", testConvRunEventsAppend},
		{"TracesAppendAndPage", testConvTracesAppend},
		{"ReportsAppendAndReplace", testConvReportsAppendReplace},
		{"StateSurvivesReopen", testConvReopen},
		{"A3SImportRoundTrip", testConvA3SImport},
		{"InvalidInputWritesNothing", testConvInvalidInput},
		{"MultiProcessAppendsGapless", testConvMultiProcess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newEnv(t, h))
		})
	}
}

func (e *env) conv() store.Conversations { return e.st.Conversations() }

func (e *env) save(c store.Conversation) int64 {
	e.t.Helper()
	v, err := e.conv().Save(e.ctx, c)
	if err != nil {
		e.t.Fatalf("Save(%q): %v", c.ID, err)
	}
	return v
}

func (e *env) load(id string) store.Conversation {
	e.t.Helper()
	c, err := e.conv().Load(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Load(%q): %v", id, err)
	}
	return c
}

func (e *env) appendMsgs(id string, msgs ...store.Message) store.AppendResult {
	e.t.Helper()
	r, err := e.conv().AppendMessages(e.ctx, id, msgs...)
	if err != nil {
		e.t.Fatalf("AppendMessages(%q): %v", id, err)
	}
	return r
}

func (e *env) exists(id string) bool {
	e.t.Helper()
	ok, err := e.conv().Exists(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Exists(%q): %v", id, err)
	}
	return ok
}

// seedSession mirrors the seed's create_test_session_data.
func seedSession() store.Conversation {
	c := store.NewConversation("test-session-1")
	c.Config.Name = "Test Session"
	c.Config.Workspace = "/tmp/workspace"
	c.Config.SystemPrompt = "You are helpful."
	c.Config.MaxContextLength = 200000
	c.State = store.StateActive
	c.Messages = []store.Message{store.UserMessage("Hello"), store.AssistantMessage("Hi there!")}
	c.ContextUsage = store.ContextUsage{UsedTokens: 100, MaxTokens: 200000, Percent: 0.0005, Turns: 2}
	c.TotalUsage = store.TokenUsage{PromptTokens: 50, CompletionTokens: 50, TotalTokens: 100}
	c.ToolNames = []string{"bash", "read"}
	c.CreatedAt = time.Unix(1700000000, 0)
	c.UpdatedAt = time.Unix(1700000100, 0)
	return c
}

// fullSession sets every field to a non-default value.
func fullSession(id string) store.Conversation {
	c := seedSession()
	c.ID = id
	c.Config.AutoCompact = true
	c.Config.AutoCompactThreshold = 0.65
	c.Config.StorageType = store.StorageCustom
	c.Config.QueueConfig = json.RawMessage(`{"lanes":{"query":4,"execute":1},"timeout_ms":30000}`)
	c.Config.ConfirmationPolicy = json.RawMessage(`{"enabled":true,"default_timeout_ms":30000,"auto_approve_tools":[]}`)
	c.Config.PermissionPolicy = json.RawMessage(`{"allow":["Bash(cargo:*)"],"deny":[],"ask":[]}`)
	c.Config.SecurityConfig = json.RawMessage(`{"taint_tracking":true,"redact":["api_key"]}`)
	c.Config.ParentID = "parent/config"
	c.Config.PlanningMode = store.PlanningEnabled
	c.Config.GoalTracking = true
	c.State = store.StatePaused
	yes := true
	c.Messages = append(c.Messages,
		store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{
			store.ReasoningBlock("the user wants a listing"),
			store.ToolUseBlock("toolu_01", "bash", json.RawMessage(`{"command":"ls -la"}`)),
		}},
		store.Message{Role: store.RoleUser, Content: []store.ContentBlock{
			store.ToolResultBlock("toolu_01", "total 0", false),
			{Type: store.BlockToolResult, ToolUseID: "toolu_02", IsError: &yes,
				Content: json.RawMessage(`[{"type":"text","text":"boom"}]`),
				Extra:   map[string]json.RawMessage{"trust": json.RawMessage(`"external"`)}},
			{Type: "image", Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`)}},
		}},
	)
	cr, cw, budget, cost := int64(7), int64(3), int64(4096), 0.0125
	c.TotalUsage.CacheReadTokens, c.TotalUsage.CacheWriteTokens = &cr, &cw
	c.TotalCost = 0.0425
	c.ModelName = "claude-sonnet-4"
	c.CostRecords = []store.CostRecord{
		{Model: "claude-sonnet-4", Provider: "anthropic", PromptTokens: 40, CompletionTokens: 10, TotalTokens: 50,
			CostUSD: &cost, Timestamp: time.Date(2025, 3, 1, 12, 0, 0, 123_000_000, time.UTC), SessionID: id},
		{Model: "local", Provider: "ollama", PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2,
			Timestamp: time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)},
	}
	c.ThinkingEnabled = true
	c.ThinkingBudget = &budget
	c.LLMConfig = &store.LLMConfig{Provider: "anthropic", Model: "claude-sonnet-4", BaseURL: "https://api.example.test/v1"}
	c.Tasks = []store.Task{
		{ID: "1", Content: "Read the code", Status: store.TaskCompleted, Priority: store.PriorityHigh, Tool: "read"},
		{ID: "2", Content: "Run tests", Status: store.TaskPending, Priority: store.PriorityMedium,
			Dependencies: []string{"1"}, SuccessCriteria: "exit 0"},
	}
	c.ParentID = "parent/top"
	return c
}

// expectLoaded is what Load returns after saving c as the version-th
// version at the env's current clock.
func (e *env) expectLoaded(c store.Conversation, version int64) store.Conversation {
	e.t.Helper()
	want, _, err := store.NormalizeConversation(c)
	if err != nil {
		e.t.Fatalf("normalize: %v", err)
	}
	now := e.storedNow()
	want.Version = version
	if want.CreatedAt.IsZero() {
		want.CreatedAt = now
	}
	if want.UpdatedAt.IsZero() {
		want.UpdatedAt = now
	}
	for i := range want.Messages {
		if want.Messages[i].CreatedAt.IsZero() {
			want.Messages[i].CreatedAt = now
		}
	}
	for i := range want.CostRecords {
		if want.CostRecords[i].Timestamp.IsZero() {
			want.CostRecords[i].Timestamp = now
		}
	}
	return want
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal got: %v", what, err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("%s: marshal want: %v", what, err)
	}
	if string(g) != string(w) {
		t.Fatalf("%s differs:\n got %s\nwant %s", what, g, w)
	}
}

func testConvSaveAndLoad(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	loaded := e.load(s.ID)
	if loaded.ID != s.ID || loaded.Config.Name != s.Config.Name {
		t.Fatalf("loaded %q/%q, want %q/%q", loaded.ID, loaded.Config.Name, s.ID, s.Config.Name)
	}
	if len(loaded.Messages) != 2 || loaded.MessageCount != 2 {
		t.Fatalf("loaded %d messages (count %d), want 2", len(loaded.Messages), loaded.MessageCount)
	}
	if loaded.State != store.StateActive {
		t.Fatalf("state = %q, want active", loaded.State)
	}
	sameJSON(t, "conversation", loaded, e.expectLoaded(s, 1))
}

func testConvLoadNonexistent(t *testing.T, e *env) {
	for _, id := range []string{"nonexistent", "does-not-exist-at-all"} {
		_, err := e.conv().Load(e.ctx, id)
		wantErr(t, err, store.ErrNotFound)
		var nf *store.NotFoundError
		if !errors.As(err, &nf) || nf.ID != id {
			t.Fatalf("error %v does not carry the id", err)
		}
	}
}

func testConvDelete(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	if !e.exists(s.ID) {
		t.Fatal("saved conversation does not exist")
	}
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if e.exists(s.ID) {
		t.Fatal("deleted conversation exists")
	}
	_, err := e.conv().Load(e.ctx, s.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, e.conv().Delete(e.ctx, s.ID), store.ErrNotFound)
}

func seedArtifact() store.Artifact {
	return store.Artifact{URI: "a3s://tool-output/test/a", ID: "tool-output:test:a", ToolName: "test",
		Content: "artifact content", OriginalBytes: 16, ShownBytes: 4}
}

func testConvArtifacts(t *testing.T, e *env) {
	s := seedSession()
	s.ID = "session/a"
	e.save(s)
	if err := e.conv().PutArtifacts(e.ctx, s.ID, seedArtifact()); err != nil {
		t.Fatal(err)
	}
	all, err := e.conv().Artifacts(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d artifacts, want 1", len(all))
	}
	a, err := e.conv().Artifact(e.ctx, s.ID, "a3s://tool-output/test/a")
	if err != nil {
		t.Fatal(err)
	}
	if a.Content != "artifact content" {
		t.Fatalf("content %q", a.Content)
	}
	want := seedArtifact()
	now := e.storedNow()
	want.CreatedAt, want.UpdatedAt = now, now
	sameJSON(t, "artifact", a, want)
	_, err = e.conv().Artifact(e.ctx, s.ID, "a3s://tool-output/test/missing")
	wantErr(t, err, store.ErrNotFound)
}

func seedTrace(name string, success bool, exit int64, ms int64, out int64, uris ...string) store.TraceEvent {
	ev := store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: name,
		Success: success, ExitCode: exit, DurationMS: ms, OutputBytes: out}
	if len(uris) > 0 {
		ev.MetadataKeys = []string{"artifact"}
		ev.ArtifactURIs = uris
	}
	return ev
}

func (e *env) stamp(ev store.TraceEvent, seq int64) store.TraceEvent {
	ev.Seq, ev.CreatedAt = seq, e.storedNow()
	return ev
}

func testConvTraceEvents(t *testing.T, e *env) {
	s := seedSession()
	s.ID = "session/a"
	e.save(s)
	ev := seedTrace("read", true, 0, 9, 12, "a3s://tool-output/read/abc")
	if err := e.conv().SaveTraces(e.ctx, s.ID, []store.TraceEvent{ev}); err != nil {
		t.Fatal(err)
	}
	got, err := e.conv().Traces(e.ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "trace events", got, []store.TraceEvent{e.stamp(ev, 0)})
}

// seedRun mirrors the seed's create_test_run_records: one run with one
// start event.
func seedRun() store.RunRecord {
	return store.RunRecord{
		Snapshot: store.RunSnapshot{ID: "run-1", Status: store.RunCreated, Prompt: "persist run",
			CreatedAt: time.UnixMilli(1700000000000), UpdatedAt: time.UnixMilli(1700000000005)},
		Events: []store.RunEvent{{Seq: 0, Timestamp: time.UnixMilli(1700000000005),
			Event: json.RawMessage(`{"type":"start","prompt":"persist run"}`)}},
	}
}

func testConvRunRecords(t *testing.T, e *env) {
	s := seedSession()
	s.ID = "session/a"
	e.save(s)
	if err := e.conv().PutRuns(e.ctx, s.ID, seedRun()); err != nil {
		t.Fatal(err)
	}
	runs, err := e.conv().Runs(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Snapshot.Prompt != "persist run" || len(runs[0].Events) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	want := seedRun()
	want.Snapshot.EventCount = 1
	want.Snapshot.CreatedAt = want.Snapshot.CreatedAt.UTC()
	want.Snapshot.UpdatedAt = want.Snapshot.UpdatedAt.UTC()
	want.Events[0].Timestamp = want.Events[0].Timestamp.UTC()
	sameJSON(t, "runs", runs, []store.RunRecord{want})
	one, err := e.conv().Run(e.ctx, s.ID, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "run", one, want)
}

// seedReport mirrors the seed's create_test_verification_report.
func seedReport() store.VerificationReport {
	return store.VerificationReport{
		Schema: "a3s.verification_report.v1", Subject: "program:test", Status: store.VerificationPassed,
		Checks: []store.VerificationCheck{{ID: "check:test", Kind: "test", Description: "Run tests",
			Status: store.VerificationPassed, Required: true}},
	}
}

func testConvReports(t *testing.T, e *env) {
	s := seedSession()
	s.ID = "session/a"
	e.save(s)
	r := seedReport()
	if err := e.conv().SaveReports(e.ctx, s.ID, []store.VerificationReport{r}); err != nil {
		t.Fatal(err)
	}
	got, err := e.conv().Reports(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	r.CreatedAt = e.storedNow()
	sameJSON(t, "reports", got, []store.VerificationReport{r})
}

func testConvDeleteArtifacts(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	if err := e.conv().PutArtifacts(e.ctx, s.ID, seedArtifact()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conv().Artifact(e.ctx, s.ID, seedArtifact().URI); err != nil {
		t.Fatal(err)
	}
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.conv().Artifacts(e.ctx, s.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = e.conv().Artifact(e.ctx, s.ID, seedArtifact().URI)
	wantErr(t, err, store.ErrNotFound)
}

func testConvDeleteTraces(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	ev := seedTrace("grep", false, 1, 2, 24)
	if _, err := e.conv().AppendTraces(e.ctx, s.ID, ev); err != nil {
		t.Fatal(err)
	}
	got, err := e.conv().Traces(e.ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "trace events", got, []store.TraceEvent{e.stamp(ev, 0)})
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.conv().Traces(e.ctx, s.ID, 0, 0)
	wantErr(t, err, store.ErrNotFound)
}

func testConvDeleteRuns(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	if err := e.conv().PutRuns(e.ctx, s.ID, seedRun()); err != nil {
		t.Fatal(err)
	}
	runs, err := e.conv().Runs(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].Events) != 1 {
		t.Fatalf("runs = %+v", runs)
	}
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.conv().Runs(e.ctx, s.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = e.conv().Run(e.ctx, s.ID, "run-1")
	wantErr(t, err, store.ErrNotFound)
}

func testConvDeleteReports(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	if err := e.conv().AppendReports(e.ctx, s.ID, seedReport()); err != nil {
		t.Fatal(err)
	}
	got, err := e.conv().Reports(e.ctx, s.ID)
	if err != nil || len(got) != 1 {
		t.Fatalf("reports %v, %v", got, err)
	}
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.conv().Reports(e.ctx, s.ID)
	wantErr(t, err, store.ErrNotFound)
}

func (e *env) listIDs(f store.ConversationFilter) []string {
	e.t.Helper()
	var ids []string
	for {
		p, err := e.conv().List(e.ctx, f)
		if err != nil {
			e.t.Fatalf("List: %v", err)
		}
		for _, s := range p.Items {
			ids = append(ids, s.ID)
		}
		if p.Next == "" {
			return ids
		}
		f.After = p.Next
	}
}

func testConvList(t *testing.T, e *env) {
	if ids := e.listIDs(store.ConversationFilter{}); len(ids) != 0 {
		t.Fatalf("fresh store lists %v", ids)
	}
	for i := 1; i <= 3; i++ {
		s := seedSession()
		s.ID = fmt.Sprintf("session-%d", i)
		e.save(s)
	}
	ids := e.listIDs(store.ConversationFilter{})
	if !slices.Equal(ids, []string{"session-1", "session-2", "session-3"}) {
		t.Fatalf("list = %v", ids)
	}
	p, err := e.conv().List(e.ctx, store.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	want := e.expectLoaded(seedSession(), 1)
	want.ID = "session-1"
	sameJSON(t, "summary", p.Items[0], want.Summary())
}

func testConvOverwrite(t *testing.T, e *env) {
	s := seedSession()
	if v := e.save(s); v != 1 {
		t.Fatalf("first save version %d", v)
	}
	s.Messages = append(s.Messages, store.UserMessage("Another message"))
	s.UpdatedAt = time.Unix(1700000200, 0)
	if v := e.save(s); v != 2 {
		t.Fatalf("second save version %d", v)
	}
	loaded := e.load(s.ID)
	if len(loaded.Messages) != 3 || loaded.MessageCount != 3 {
		t.Fatalf("%d messages (count %d), want 3", len(loaded.Messages), loaded.MessageCount)
	}
	if !loaded.UpdatedAt.Equal(time.Unix(1700000200, 0)) {
		t.Fatalf("updated_at = %v", loaded.UpdatedAt)
	}
	if !loaded.CreatedAt.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("created_at = %v", loaded.CreatedAt)
	}
	// A shorter history replaces the longer one entirely.
	s.Messages = s.Messages[:1]
	e.save(s)
	if got := e.load(s.ID); len(got.Messages) != 1 || got.Messages[0].Text() != "Hello" {
		t.Fatalf("after shrinking: %+v", got.Messages)
	}
}

// The seed sanitized ids into file names ("../../../etc/passwd" →
// "______etc_passwd"), so distinct ids could collide. Here ids are data.
func testConvPathLikeIDs(t *testing.T, e *env) {
	ids := []string{"../../../etc/passwd", `foo\bar\baz`, `foo/bar\baz..qux`, "session/a", "foo_bar_baz",
		"foo_bar_baz_qux", "______etc_passwd", ".", "..", "/", `\`, "a/../b", "名前/セッション"}
	for i, id := range ids {
		s := seedSession()
		s.ID = id
		s.Config.Name = fmt.Sprintf("n%d", i)
		e.save(s)
	}
	for i, id := range ids {
		got := e.load(id)
		if got.ID != id || got.Config.Name != fmt.Sprintf("n%d", i) {
			t.Fatalf("id %q loaded as %q named %q", id, got.ID, got.Config.Name)
		}
	}
	listed := e.listIDs(store.ConversationFilter{})
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("listed %q, want %q", listed, want)
	}
}

func testConvPolicies(t *testing.T, e *env) {
	s := seedSession()
	s.Config.ConfirmationPolicy = json.RawMessage(`{"enabled":true,"default_timeout_ms":30000,"timeout_action":"reject"}`)
	s.Config.PermissionPolicy = json.RawMessage(`{"deny":[],"allow":[{"rule":"Bash(cargo:*)"}],"ask":[],"default_decision":"ask","enabled":true}`)
	s.Config.QueueConfig = json.RawMessage(`{"control_max_concurrency":2,"query_max_concurrency":4,"enable_metrics":false}`)
	e.save(s)
	got := e.load(s.ID)
	for name, pair := range map[string][2]json.RawMessage{
		"confirmation_policy": {got.Config.ConfirmationPolicy, s.Config.ConfirmationPolicy},
		"permission_policy":   {got.Config.PermissionPolicy, s.Config.PermissionPolicy},
		"queue_config":        {got.Config.QueueConfig, s.Config.QueueConfig},
	} {
		if string(pair[0]) != string(pair[1]) {
			t.Fatalf("%s = %s, want %s (byte for byte)", name, pair[0], pair[1])
		}
	}
	if got.Config.SecurityConfig != nil {
		t.Fatalf("unset security config loaded as %s", got.Config.SecurityConfig)
	}
	// Whitespace is not kept, meaning is.
	s.Config.PermissionPolicy = json.RawMessage("{\n  \"allow\": [ \"x\" ]\n}")
	e.save(s)
	if got := e.load(s.ID).Config.PermissionPolicy; string(got) != `{"allow":["x"]}` {
		t.Fatalf("permission policy = %s", got)
	}
}

func testConvLLMConfig(t *testing.T, e *env) {
	s := seedSession()
	s.LLMConfig = &store.LLMConfig{Provider: "anthropic", Model: "claude-3-5-sonnet-20241022", APIKey: "secret"}
	e.save(s)
	if s.LLMConfig.APIKey != "secret" {
		t.Fatal("Save cleared the caller's key")
	}
	l := e.load(s.ID).LLMConfig
	if l == nil || l.Provider != "anthropic" || l.Model != "claude-3-5-sonnet-20241022" {
		t.Fatalf("llm config = %+v", l)
	}
	if l.APIKey != "" {
		t.Fatal("the API key was persisted")
	}
	if l.BaseURL != "" {
		t.Fatalf("base url = %q", l.BaseURL)
	}
}

func testConvSerialization(t *testing.T, e *env) {
	s := fullSession("serial")
	s.LLMConfig.APIKey = "sk-never-in-json"
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "sk-never-in-json") {
		t.Fatal("the API key is in the JSON encoding")
	}
	var parsed store.Conversation
	if err := json.Unmarshal(b, &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed.ID != s.ID || len(parsed.Messages) != len(s.Messages) {
		t.Fatalf("parsed %q with %d messages", parsed.ID, len(parsed.Messages))
	}
	// What was saved and loaded serializes the same way again.
	e.save(s)
	loaded := e.load(s.ID)
	b2, _ := json.Marshal(loaded)
	var again store.Conversation
	if err := json.Unmarshal(b2, &again); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "round trip", again, loaded)
}

func testConvExists(t *testing.T, e *env) {
	s := seedSession()
	if e.exists(s.ID) || e.exists("unknown-id") {
		t.Fatal("exists before save")
	}
	e.save(s)
	if !e.exists(s.ID) {
		t.Fatal("not exists after save")
	}
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if e.exists(s.ID) {
		t.Fatal("exists after delete")
	}
}

func testConvHealthCheck(t *testing.T, e *env) {
	if err := e.st.HealthCheck(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.st.Backend() == "" || e.st.Backend() == "unknown" {
		t.Fatalf("backend name %q", e.st.Backend())
	}
}

// The seed's health check failed on a missing directory; a closed store is
// the equivalent here.
func testConvHealthCheckClosed(t *testing.T, e *env) {
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.st.HealthCheck(e.ctx), store.ErrStoreClosed)
	_, err := e.conv().Load(e.ctx, "x")
	wantErr(t, err, store.ErrStoreClosed)
	_, err = e.conv().Save(e.ctx, seedSession())
	wantErr(t, err, store.ErrStoreClosed)
}

// Concurrent saves of one session: every save succeeds and what remains is
// exactly one of the saved versions, complete.
func testConvConcurrentSaves(t *testing.T, e *env) {
	base := seedSession()
	e.save(base)
	const writers = 8
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			s := seedSession()
			s.Config.Name = fmt.Sprintf("writer-%d", w)
			s.Messages = nil
			for i := range 10 + w*7 {
				s.Messages = append(s.Messages, store.UserMessage(fmt.Sprintf("w%d-m%d", w, i)))
			}
			for range 5 {
				if _, err := e.conv().Save(e.ctx, s); err != nil {
					t.Errorf("save: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := e.load(base.ID)
	var w int
	if _, err := fmt.Sscanf(got.Config.Name, "writer-%d", &w); err != nil {
		t.Fatalf("name %q", got.Config.Name)
	}
	if len(got.Messages) != 10+w*7 || got.MessageCount != int64(len(got.Messages)) {
		t.Fatalf("writer %d's version has %d messages (count %d), want %d", w, len(got.Messages), got.MessageCount, 10+w*7)
	}
	for i, m := range got.Messages {
		if m.Seq != int64(i) || m.Text() != fmt.Sprintf("w%d-m%d", w, i) {
			t.Fatalf("message %d = %d %q: versions mixed", i, m.Seq, m.Text())
		}
	}
	if got.Version != 1+writers*5 {
		t.Fatalf("version %d, want %d", got.Version, 1+writers*5)
	}
}

func testConvEveryField(t *testing.T, e *env) {
	s := fullSession("every/field")
	v := e.save(s)
	got := e.load(s.ID)
	sameJSON(t, "conversation", got, e.expectLoaded(s, v))
	if got.TotalUsage.CacheReadTokens == nil || *got.TotalUsage.CacheReadTokens != 7 {
		t.Fatalf("cache read tokens %v", got.TotalUsage.CacheReadTokens)
	}
	if got.CostRecords[1].CostUSD != nil || *got.CostRecords[0].CostUSD != 0.0125 {
		t.Fatal("optional cost not kept")
	}
	if got.TotalCost != 0.0425 {
		t.Fatalf("total cost %v", got.TotalCost)
	}
	b := got.Messages[3].Content[1]
	if b.IsError == nil || !*b.IsError || string(b.Extra["trust"]) != `"external"` || b.ResultText() != "boom" {
		t.Fatalf("tool result block %+v", b)
	}
	if got.Messages[3].Content[0].ResultText() != "total 0" {
		t.Fatalf("tool result text %q", got.Messages[3].Content[0].ResultText())
	}
	if img := got.Messages[3].Content[2]; img.Type != "image" || !strings.Contains(string(img.Extra["source"]), "iVBORw0KGgo=") {
		t.Fatalf("image block %+v", img)
	}
	info, err := e.conv().Info(e.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "info", info, got.Summary())
}

func testConvDefaults(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "bare"})
	got := e.load("bare")
	if got.Config.AutoCompactThreshold != store.DefaultAutoCompactThreshold || got.ContextUsage.MaxTokens != store.DefaultMaxContextTokens {
		t.Fatalf("threshold %v, max tokens %d", got.Config.AutoCompactThreshold, got.ContextUsage.MaxTokens)
	}
	if got.State != store.StateUnknown || got.Config.StorageType != store.StorageFile || got.Config.PlanningMode != store.PlanningAuto {
		t.Fatalf("state %q storage %q planning %q", got.State, got.Config.StorageType, got.Config.PlanningMode)
	}
	if got.Messages == nil || got.ToolNames == nil || got.Tasks == nil || got.CostRecords == nil {
		t.Fatal("lists must load as empty, not nil")
	}
	now := e.clock.Now()
	if !got.CreatedAt.Equal(now) || !got.UpdatedAt.Equal(now) {
		t.Fatalf("times %v %v, want the clock %v", got.CreatedAt, got.UpdatedAt, now)
	}
	if got.LLMConfig != nil || got.ThinkingBudget != nil || got.TotalUsage.CacheReadTokens != nil {
		t.Fatal("unset optional fields loaded as set")
	}
}

// 1000 appends from 8 goroutines: every message lands exactly once, and the
// positions are 0..999 without gaps.
func testConvAppendGapless(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "gapless"})
	const workers, each = 8, 125
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				msgs := []store.Message{store.UserMessage(fmt.Sprintf("w%d-%d", w, i))}
				if _, err := e.conv().AppendMessages(e.ctx, "gapless", msgs...); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkGapless(t, e, "gapless", workers*each, func(w int) string { return fmt.Sprintf("w%d-", w) }, workers, each)
}

// checkGapless asserts that conversation id holds n messages at positions
// 0..n-1 and that each writer's messages appear once, in its order.
func checkGapless(t *testing.T, e *env, id string, n int, prefix func(int) string, writers, each int) {
	t.Helper()
	got := e.load(id)
	if len(got.Messages) != n || got.MessageCount != int64(n) {
		t.Fatalf("%d messages (count %d), want %d", len(got.Messages), got.MessageCount, n)
	}
	next := make([]int, writers)
	for i, m := range got.Messages {
		if m.Seq != int64(i) {
			t.Fatalf("message %d has seq %d: gap", i, m.Seq)
		}
		text := m.Text()
		found := false
		for w := range writers {
			if rest, ok := strings.CutPrefix(text, prefix(w)); ok {
				if rest != strconv.Itoa(next[w]) {
					t.Fatalf("writer %d: got %q, want its message %d", w, text, next[w])
				}
				next[w]++
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("unexpected message %q", text)
		}
	}
	for w, c := range next {
		if c != each {
			t.Fatalf("writer %d has %d messages, want %d", w, c, each)
		}
	}
	if c, err := e.conv().MessageCount(e.ctx, id); err != nil || c != int64(n) {
		t.Fatalf("MessageCount = %d, %v", c, err)
	}
}

func testConvAppendUsage(t *testing.T, e *env) {
	s := seedSession()
	v := e.save(s)
	e.clock.Advance(90 * time.Second)
	cr := int64(5)
	cost := 0.002
	res, err := e.conv().Append(e.ctx, store.AppendRequest{
		ID:           s.ID,
		Messages:     []store.Message{store.UserMessage("next"), store.AssistantMessage("done")},
		Usage:        &store.TokenUsage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CacheReadTokens: &cr},
		Cost:         0.002,
		CostRecords:  []store.CostRecord{{Model: "m", Provider: "p", PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: &cost}},
		ContextUsage: &store.ContextUsage{UsedTokens: 115, MaxTokens: 200000, Percent: 0.000575, Turns: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstSeq != 2 || res.MessageCount != 4 || res.Version != v+1 {
		t.Fatalf("append result %+v", res)
	}
	got := e.load(s.ID)
	if got.TotalUsage.PromptTokens != 60 || got.TotalUsage.CompletionTokens != 55 || got.TotalUsage.TotalTokens != 115 ||
		got.TotalUsage.CacheReadTokens == nil || *got.TotalUsage.CacheReadTokens != 5 || got.TotalUsage.CacheWriteTokens != nil {
		t.Fatalf("usage %+v", got.TotalUsage)
	}
	if got.TotalCost != 0.002 || got.ContextUsage.Turns != 3 || got.ContextUsage.UsedTokens != 115 {
		t.Fatalf("cost %v context %+v", got.TotalCost, got.ContextUsage)
	}
	if len(got.CostRecords) != 1 || !got.CostRecords[0].Timestamp.Equal(e.clock.Now()) {
		t.Fatalf("cost records %+v", got.CostRecords)
	}
	if !got.UpdatedAt.Equal(e.clock.Now()) || !got.Messages[3].CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("updated_at %v, message time %v, want %v", got.UpdatedAt, got.Messages[3].CreatedAt, e.clock.Now())
	}
	if got.Version != v+1 || got.MessageCount != 4 {
		t.Fatalf("version %d count %d", got.Version, got.MessageCount)
	}
	// An empty append still touches the conversation and bumps its version.
	res, err = e.conv().AppendMessages(e.ctx, s.ID)
	if err != nil || res.FirstSeq != 4 || res.MessageCount != 4 {
		t.Fatalf("empty append: %+v, %v", res, err)
	}
}

func testConvAppendMissing(t *testing.T, e *env) {
	_, err := e.conv().AppendMessages(e.ctx, "missing", store.UserMessage("x"))
	wantErr(t, err, store.ErrNotFound)
	if e.exists("missing") {
		t.Fatal("append created the conversation")
	}
}

// Two writers appending to one conversation both succeed: appends never
// need a version, so a second writer never kills a running turn.
func testConvAppendersNoConflict(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "shared"})
	other := e.open().Conversations()
	var wg sync.WaitGroup
	for w, c := range []store.Conversations{e.conv(), other} {
		wg.Go(func() {
			for i := range 50 {
				if _, err := c.AppendMessages(e.ctx, "shared", store.UserMessage(fmt.Sprintf("s%d-%d", w, i))); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkGapless(t, e, "shared", 100, func(w int) string { return fmt.Sprintf("s%d-", w) }, 2, 50)
}

// Load reads the conversation row and its messages as one snapshot: the
// count always matches the messages, even while appends run.
func testConvLoadConsistent(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "snap"})
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ctx.Err() == nil && i < 400; i++ {
			if _, err := e.conv().AppendMessages(e.ctx, "snap", store.UserMessage("m"), store.AssistantMessage("r")); err != nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	})
	for range 100 {
		c := e.load("snap")
		if int64(len(c.Messages)) != c.MessageCount {
			cancel()
			wg.Wait()
			t.Fatalf("snapshot mixed: %d messages, count %d", len(c.Messages), c.MessageCount)
		}
	}
	cancel()
	wg.Wait()
}

func texts(ms []store.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text()
	}
	return out
}

func seqs(ms []store.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func testConvMessagesRanged(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "ranged"})
	var msgs []store.Message
	for i := range 25 {
		msgs = append(msgs, store.UserMessage(fmt.Sprintf("m%d", i)))
	}
	e.appendMsgs("ranged", msgs...)
	page, err := e.conv().Messages(e.ctx, "ranged", 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(page), []string{"m5", "m6", "m7"}) || !slices.Equal(seqs(page), []int64{5, 6, 7}) {
		t.Fatalf("page = %v %v", texts(page), seqs(page))
	}
	if page, _ := e.conv().Messages(e.ctx, "ranged", 24, 10); !slices.Equal(texts(page), []string{"m24"}) {
		t.Fatalf("tail page = %v", texts(page))
	}
	if page, err := e.conv().Messages(e.ctx, "ranged", 25, 10); err != nil || len(page) != 0 || page == nil {
		t.Fatalf("past the end: %v, %v", page, err)
	}
	last, err := e.conv().LastMessages(e.ctx, "ranged", 4)
	if err != nil || !slices.Equal(texts(last), []string{"m21", "m22", "m23", "m24"}) {
		t.Fatalf("last 4 = %v, %v", texts(last), err)
	}
	// Page backwards with the cursor from the newest to the oldest.
	var back []string
	before := int64(math.MaxInt64)
	for {
		p, err := e.conv().MessagesBefore(e.ctx, "ranged", before, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
		back = append(texts(p), back...)
		before = p[0].Seq
	}
	if !slices.Equal(back, texts(msgs)) {
		t.Fatalf("backward paging gave %v", back)
	}
	if n, err := e.conv().MessageCount(e.ctx, "ranged"); err != nil || n != 25 {
		t.Fatalf("count %d, %v", n, err)
	}
	for _, f := range []func() error{
		func() error { _, err := e.conv().Messages(e.ctx, "nope", 0, 10); return err },
		func() error { _, err := e.conv().MessagesBefore(e.ctx, "nope", 10, 10); return err },
		func() error { _, err := e.conv().LastMessages(e.ctx, "nope", 3); return err },
		func() error { _, err := e.conv().MessageCount(e.ctx, "nope"); return err },
	} {
		wantErr(t, f(), store.ErrNotFound)
	}
	_, err = e.conv().Messages(e.ctx, "ranged", -1, 10)
	wantErr(t, err, store.ErrInvalidInput)
	_, err = e.conv().Messages(e.ctx, "ranged", 0, -1)
	wantErr(t, err, store.ErrInvalidInput)
}

func testConvPop(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "undo"})
	e.appendMsgs("undo", store.UserMessage("a"), store.AssistantMessage("b"))
	m, err := e.conv().PopMessage(e.ctx, "undo")
	if err != nil || m.Text() != "b" || m.Seq != 1 || m.Role != store.RoleAssistant {
		t.Fatalf("pop = %+v, %v", m, err)
	}
	if r := e.appendMsgs("undo", store.AssistantMessage("c")); r.FirstSeq != 1 || r.MessageCount != 2 {
		t.Fatalf("append after pop: %+v", r)
	}
	got := e.load("undo")
	if !slices.Equal(texts(got.Messages), []string{"a", "c"}) || !slices.Equal(seqs(got.Messages), []int64{0, 1}) {
		t.Fatalf("history %v %v", texts(got.Messages), seqs(got.Messages))
	}
	for range 2 {
		if _, err := e.conv().PopMessage(e.ctx, "undo"); err != nil {
			t.Fatal(err)
		}
	}
	_, err = e.conv().PopMessage(e.ctx, "undo")
	wantErr(t, err, store.ErrNotFound)
	if !e.exists("undo") {
		t.Fatal("popping the last message removed the conversation")
	}
	_, err = e.conv().PopMessage(e.ctx, "nope")
	wantErr(t, err, store.ErrNotFound)
}

func testConvTrim(t *testing.T, e *env) {
	s := store.Conversation{ID: "trim", UpdatedAt: time.Unix(1700000000, 0)}
	e.save(s)
	for i := range 10 {
		e.appendMsgs("trim", store.UserMessage(fmt.Sprintf("m%d", i)))
	}
	before := e.load("trim")
	e.clock.Advance(time.Hour)
	n, err := e.conv().TrimMessages(e.ctx, "trim", 3)
	if err != nil || n != 7 {
		t.Fatalf("trim removed %d, %v", n, err)
	}
	got := e.load("trim")
	if !slices.Equal(texts(got.Messages), []string{"m7", "m8", "m9"}) || !slices.Equal(seqs(got.Messages), []int64{7, 8, 9}) {
		t.Fatalf("kept %v %v", texts(got.Messages), seqs(got.Messages))
	}
	if got.MessageCount != 3 || got.Version != before.Version+1 || !got.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("count %d version %d→%d updated %v→%v", got.MessageCount, before.Version, got.Version, before.UpdatedAt, got.UpdatedAt)
	}
	if r := e.appendMsgs("trim", store.UserMessage("m10")); r.FirstSeq != 10 || r.MessageCount != 4 {
		t.Fatalf("append after trim %+v", r)
	}
	if n, err := e.conv().TrimMessages(e.ctx, "trim", 10); err != nil || n != 0 {
		t.Fatalf("trim to more than there is: %d, %v", n, err)
	}
	if n, err := e.conv().TrimMessages(e.ctx, "trim", 0); err != nil || n != 4 {
		t.Fatalf("trim to zero: %d, %v", n, err)
	}
	if c, _ := e.conv().MessageCount(e.ctx, "trim"); c != 0 {
		t.Fatalf("count %d", c)
	}
	_, err = e.conv().TrimMessages(e.ctx, "trim", -1)
	wantErr(t, err, store.ErrInvalidInput)
	_, err = e.conv().TrimMessages(e.ctx, "nope", 1)
	wantErr(t, err, store.ErrNotFound)
}

func testConvTrimAll(t *testing.T, e *env) {
	sizes := map[string]int{"a": 1, "b": 5, "c": 0, "d": 12}
	for id, n := range sizes {
		e.save(store.Conversation{ID: id})
		for i := range n {
			e.appendMsgs(id, store.UserMessage(fmt.Sprintf("%s%d", id, i)))
		}
	}
	res, err := e.conv().TrimAllMessages(e.ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Conversations != 2 || res.Removed != 3+10 {
		t.Fatalf("trim all: %+v", res)
	}
	for id, n := range sizes {
		got := e.load(id)
		if want := min(n, 2); len(got.Messages) != want || got.MessageCount != int64(want) {
			t.Fatalf("%s keeps %d (count %d), want %d", id, len(got.Messages), got.MessageCount, want)
		}
		if n > 0 && got.Messages[len(got.Messages)-1].Text() != fmt.Sprintf("%s%d", id, n-1) {
			t.Fatalf("%s lost its newest message", id)
		}
	}
}

func testConvDeleteUpdatedBefore(t *testing.T, e *env) {
	for i, id := range []string{"old-1", "old-2", "old-3", "fresh"} {
		e.save(store.Conversation{ID: id})
		if err := e.conv().PutArtifacts(e.ctx, id, seedArtifact()); err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			e.clock.Advance(time.Minute)
		}
	}
	e.clock.Advance(time.Hour)
	// "fresh" was updated one hour ago, the others 1 to 3 minutes before it.
	cutoff := e.clock.Now().Add(-time.Hour)
	stale := e.listIDs(store.ConversationFilter{UpdatedBefore: cutoff})
	if !slices.Equal(stale, []string{"old-1", "old-2", "old-3"}) {
		t.Fatalf("stale = %v", stale)
	}
	n, err := e.conv().DeleteUpdatedBefore(e.ctx, cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if e.exists("old-1") || e.exists("old-2") || !e.exists("old-3") {
		t.Fatal("limit did not delete the oldest first")
	}
	n, err = e.conv().DeleteUpdatedBefore(e.ctx, cutoff, 0)
	if err != nil || n != 1 || e.exists("old-3") || !e.exists("fresh") {
		t.Fatalf("deleted %d, %v", n, err)
	}
	_, err = e.conv().Artifacts(e.ctx, "old-1")
	wantErr(t, err, store.ErrNotFound)
	_, err = e.conv().DeleteUpdatedBefore(e.ctx, time.Time{}, 0)
	wantErr(t, err, store.ErrInvalidInput)
}

func testConvListPaging(t *testing.T, e *env) {
	var all []string
	for i := range 23 {
		id := fmt.Sprintf("c%02d", i)
		s := store.Conversation{ID: id}
		if i%3 == 0 {
			s.ParentID = "root/x"
		}
		e.save(s)
		e.appendMsgs(id, store.UserMessage("hi"))
		all = append(all, id)
	}
	p, err := e.conv().List(e.ctx, store.ConversationFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 10 || p.Next != "c09" || p.Items[0].MessageCount != 1 {
		t.Fatalf("first page: %d items, next %q", len(p.Items), p.Next)
	}
	if ids := e.listIDs(store.ConversationFilter{Limit: 4}); !slices.Equal(ids, all) {
		t.Fatalf("paged list %v", ids)
	}
	children := e.listIDs(store.ConversationFilter{ParentID: "root/x", Limit: 3})
	if !slices.Equal(children, []string{"c00", "c03", "c06", "c09", "c12", "c15", "c18", "c21"}) {
		t.Fatalf("children %v", children)
	}
	_, err = e.conv().List(e.ctx, store.ConversationFilter{Limit: -1})
	wantErr(t, err, store.ErrInvalidInput)
}

func testConvVersion(t *testing.T, e *env) {
	s := seedSession()
	v1 := e.save(s)
	loaded := e.load(s.ID)
	if loaded.Version != v1 {
		t.Fatalf("loaded version %d, saved %d", loaded.Version, v1)
	}
	// Someone appends: the loaded copy is now stale.
	r := e.appendMsgs(s.ID, store.UserMessage("concurrent"))
	if r.Version != v1+1 {
		t.Fatalf("append version %d", r.Version)
	}
	loaded.Config.Name = "stale edit"
	_, err := e.conv().Save(e.ctx, loaded)
	wantErr(t, err, store.ErrConflict)
	if got := e.load(s.ID); got.Config.Name != s.Config.Name || len(got.Messages) != 3 {
		t.Fatalf("a refused save wrote: name %q, %d messages", got.Config.Name, len(got.Messages))
	}
	fresh := e.load(s.ID)
	fresh.Config.Name = "fresh edit"
	v3, err := e.conv().Save(e.ctx, fresh)
	if err != nil || v3 != r.Version+1 {
		t.Fatalf("save with current version: %d, %v", v3, err)
	}
	// Conditional appends.
	_, err = e.conv().Append(e.ctx, store.AppendRequest{ID: s.ID, Messages: []store.Message{store.UserMessage("x")}, ExpectVersion: v1})
	wantErr(t, err, store.ErrConflict)
	if _, err := e.conv().Append(e.ctx, store.AppendRequest{ID: s.ID, Messages: []store.Message{store.UserMessage("x")}, ExpectVersion: v3}); err != nil {
		t.Fatal(err)
	}
	// A versioned save of a deleted conversation does not resurrect it.
	cur := e.load(s.ID)
	if err := e.conv().Delete(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.conv().Save(e.ctx, cur)
	wantErr(t, err, store.ErrConflict)
	if e.exists(s.ID) {
		t.Fatal("conditional save recreated a deleted conversation")
	}
	var ce *store.ConflictError
	if !errors.As(err, &ce) || ce.ID != s.ID {
		t.Fatalf("conflict error %v", err)
	}
}

// Several writers save the same loaded version at once: exactly one wins.
func testConvConditionalRace(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	base := e.load(s.ID)
	const writers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	for w := range writers {
		wg.Go(func() {
			c := base
			c.Config.Name = fmt.Sprintf("w%d", w)
			_, err := e.conv().Save(e.ctx, c)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrConflict):
				conflicts++
			default:
				t.Errorf("save: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 || conflicts != writers-1 {
		t.Fatalf("%d wins, %d conflicts", wins, conflicts)
	}
	if got := e.load(s.ID); got.Version != base.Version+1 {
		t.Fatalf("version %d, want %d", got.Version, base.Version+1)
	}
}

// After a delete, a new conversation with the same id starts empty: no
// message, cost record, artifact, trace, run or report survived.
func testConvDeleteNoLeftovers(t *testing.T, e *env) {
	id := "reused/id"
	e.populate(id)
	if err := e.conv().Delete(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	e.save(store.Conversation{ID: id})
	got := e.load(id)
	if len(got.Messages) != 0 || len(got.CostRecords) != 0 || got.MessageCount != 0 {
		t.Fatalf("leftover history: %d messages, %d cost records", len(got.Messages), len(got.CostRecords))
	}
	e.wantNoRecords(id)
	if r := e.appendMsgs(id, store.UserMessage("first")); r.FirstSeq != 0 {
		t.Fatalf("numbering continued at %d", r.FirstSeq)
	}
}

// populate gives conversation id a history and one of every record.
func (e *env) populate(id string) {
	e.t.Helper()
	s := fullSession(id)
	e.save(s)
	if err := e.conv().PutArtifacts(e.ctx, id, seedArtifact()); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.conv().AppendTraces(e.ctx, id, seedTrace("read", true, 0, 1, 1)); err != nil {
		e.t.Fatal(err)
	}
	if err := e.conv().PutRuns(e.ctx, id, seedRun()); err != nil {
		e.t.Fatal(err)
	}
	if err := e.conv().AppendReports(e.ctx, id, seedReport()); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) wantNoRecords(id string) {
	e.t.Helper()
	if a, err := e.conv().Artifacts(e.ctx, id); err != nil || len(a) != 0 {
		e.t.Fatalf("artifacts %v, %v", a, err)
	}
	if tr, err := e.conv().Traces(e.ctx, id, 0, 0); err != nil || len(tr) != 0 {
		e.t.Fatalf("traces %v, %v", tr, err)
	}
	if r, err := e.conv().Runs(e.ctx, id); err != nil || len(r) != 0 {
		e.t.Fatalf("runs %v, %v", r, err)
	}
	if _, err := e.conv().Run(e.ctx, id, "run-1"); !errors.Is(err, store.ErrNotFound) {
		e.t.Fatalf("run-1: %v", err)
	}
	if r, err := e.conv().Reports(e.ctx, id); err != nil || len(r) != 0 {
		e.t.Fatalf("reports %v, %v", r, err)
	}
}

func testConvSaveKeepsRecords(t *testing.T, e *env) {
	id := "keeps"
	e.populate(id)
	s := seedSession()
	s.ID = id
	e.save(s)
	if a, err := e.conv().Artifacts(e.ctx, id); err != nil || len(a) != 1 {
		t.Fatalf("artifacts after overwrite: %v, %v", a, err)
	}
	if tr, err := e.conv().Traces(e.ctx, id, 0, 0); err != nil || len(tr) != 1 {
		t.Fatalf("traces after overwrite: %v, %v", tr, err)
	}
	if r, err := e.conv().Runs(e.ctx, id); err != nil || len(r) != 1 {
		t.Fatalf("runs after overwrite: %v, %v", r, err)
	}
	if r, err := e.conv().Reports(e.ctx, id); err != nil || len(r) != 1 {
		t.Fatalf("reports after overwrite: %v, %v", r, err)
	}
	if got := e.load(id); len(got.CostRecords) != 0 || len(got.Messages) != 2 {
		t.Fatalf("overwrite kept %d cost records, %d messages", len(got.CostRecords), len(got.Messages))
	}
}

func testConvRecordsMissing(t *testing.T, e *env) {
	id := "session/a"
	c := e.conv()
	for name, err := range map[string]error{
		"PutArtifacts":    c.PutArtifacts(e.ctx, id, seedArtifact()),
		"AppendTraces":    func() error { _, err := c.AppendTraces(e.ctx, id, seedTrace("x", true, 0, 0, 0)); return err }(),
		"SaveTraces":      c.SaveTraces(e.ctx, id, nil),
		"PutRuns":         c.PutRuns(e.ctx, id, seedRun()),
		"AppendRunEvents": func() error { _, err := c.AppendRunEvents(e.ctx, id, "run-1", seedRun().Events...); return err }(),
		"AppendReports":   c.AppendReports(e.ctx, id, seedReport()),
		"SaveReports":     c.SaveReports(e.ctx, id, []store.VerificationReport{seedReport()}),
		"Artifacts":       func() error { _, err := c.Artifacts(e.ctx, id); return err }(),
		"Traces":          func() error { _, err := c.Traces(e.ctx, id, 0, 0); return err }(),
		"Runs":            func() error { _, err := c.Runs(e.ctx, id); return err }(),
		"Reports":         func() error { _, err := c.Reports(e.ctx, id); return err }(),
		"Info":            func() error { _, err := c.Info(e.ctx, id); return err }(),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s on a missing conversation: %v, want ErrNotFound", name, err)
		}
	}
	// Creating it afterwards finds no orphans.
	e.save(store.Conversation{ID: id})
	e.wantNoRecords(id)
	_, err := c.AppendRunEvents(e.ctx, id, "no-such-run", seedRun().Events...)
	wantErr(t, err, store.ErrNotFound)
}

func testConvArtifactReplace(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "art"})
	a := seedArtifact()
	b := store.Artifact{URI: "a3s://tool-output/read/b", ID: "b", ToolName: "read", Content: "bbb", OriginalBytes: 3, ShownBytes: 3}
	if err := e.conv().PutArtifacts(e.ctx, "art", a, b); err != nil {
		t.Fatal(err)
	}
	created := e.clock.Now()
	e.clock.Advance(time.Minute)
	a.Content, a.ShownBytes = "replaced", 8
	if err := e.conv().PutArtifacts(e.ctx, "art", a); err != nil {
		t.Fatal(err)
	}
	all, err := e.conv().Artifacts(e.ctx, "art")
	if err != nil || len(all) != 2 {
		t.Fatalf("artifacts %v, %v", all, err)
	}
	// Ordered by URI: ".../read/b" before ".../test/a".
	if all[0].URI != b.URI || all[0].Content != "bbb" {
		t.Fatalf("other artifact %+v", all[0])
	}
	if all[1].URI != a.URI || all[1].Content != "replaced" || all[1].ShownBytes != 8 {
		t.Fatalf("replaced artifact %+v", all[1])
	}
	if !all[1].CreatedAt.Equal(created) || !all[1].UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("times %v %v", all[1].CreatedAt, all[1].UpdatedAt)
	}
	if got := e.load("art"); !got.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("artifact write did not count as activity: %v", got.UpdatedAt)
	}
}

func testConvRunEventsAppend(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "runs"})
	if err := e.conv().PutRuns(e.ctx, "runs", seedRun()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	first, err := e.conv().AppendRunEvents(e.ctx, "runs", "run-1",
		store.RunEvent{Event: json.RawMessage(`{"type":"tool_start","name":"bash"}`)},
		store.RunEvent{Event: json.RawMessage(`{"type":"end","text":"ok"}`)})
	if err != nil || first != 1 {
		t.Fatalf("append run events: %d, %v", first, err)
	}
	r, err := e.conv().Run(e.ctx, "runs", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Events) != 3 || r.Events[2].Seq != 2 || string(r.Events[2].Event) != `{"type":"end","text":"ok"}` {
		t.Fatalf("events %+v", r.Events)
	}
	if r.Snapshot.EventCount != 3 || !r.Snapshot.UpdatedAt.Equal(e.clock.Now()) || !r.Events[1].Timestamp.Equal(e.clock.Now()) {
		t.Fatalf("snapshot %+v", r.Snapshot)
	}
	// A runtime that trimmed its buffer (60 events recorded, the last two
	// kept) keeps numbering from its total.
	trimmed := store.RunRecord{
		Snapshot: store.RunSnapshot{ID: "run-2", Status: store.RunExecuting, Prompt: "long", EventCount: 60,
			Extra: json.RawMessage(`{"workspace_change_set":{"base_tree":"abc"}}`)},
		Events: []store.RunEvent{{Seq: 48, Event: json.RawMessage(`{"type":"a"}`)}, {Seq: 49, Event: json.RawMessage(`{"type":"b"}`)}},
	}
	if err := e.conv().PutRuns(e.ctx, "runs", trimmed); err != nil {
		t.Fatal(err)
	}
	if first, err := e.conv().AppendRunEvents(e.ctx, "runs", "run-2", store.RunEvent{Event: json.RawMessage(`{"type":"c"}`)}); err != nil || first != 60 {
		t.Fatalf("append after trim: %d, %v", first, err)
	}
	runs, err := e.conv().Runs(e.ctx, "runs")
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %v, %v", runs, err)
	}
	r2 := runs[1]
	if r2.Snapshot.ID != "run-2" || r2.Snapshot.EventCount != 61 || string(r2.Snapshot.Extra) != `{"workspace_change_set":{"base_tree":"abc"}}` {
		t.Fatalf("run-2 snapshot %+v", r2.Snapshot)
	}
	if !slices.Equal([]int64{r2.Events[0].Seq, r2.Events[1].Seq, r2.Events[2].Seq}, []int64{48, 49, 60}) {
		t.Fatalf("run-2 events %+v", r2.Events)
	}
	// Saving a run again replaces its events.
	if err := e.conv().PutRuns(e.ctx, "runs", seedRun()); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.conv().Run(e.ctx, "runs", "run-1"); len(r.Events) != 1 {
		t.Fatalf("re-saved run has %d events", len(r.Events))
	}
	bad := seedRun()
	bad.Events = append(bad.Events, store.RunEvent{Seq: 0, Event: json.RawMessage(`{}`)})
	wantErr(t, e.conv().PutRuns(e.ctx, "runs", bad), store.ErrInvalidInput)
}

func testConvTracesAppend(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "tr"})
	var all []store.TraceEvent
	for i := range 12 {
		ev := seedTrace(fmt.Sprintf("t%d", i), i%2 == 0, int64(i%3), int64(i), int64(10*i))
		if i == 5 {
			ev.Kind = store.TraceProgramExecution
			ev.Details = json.RawMessage(`{"program_name":"repo_map","success":true,"step_count":7,"failed_steps":0}`)
		}
		first, err := e.conv().AppendTraces(e.ctx, "tr", ev)
		if err != nil || first != int64(i) {
			t.Fatalf("append trace %d: %d, %v", i, first, err)
		}
		all = append(all, e.stamp(ev, int64(i)))
	}
	got, err := e.conv().Traces(e.ctx, "tr", 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "trace page", got, all[4:7])
	got, _ = e.conv().Traces(e.ctx, "tr", 0, 0)
	sameJSON(t, "all traces", got, all)
	if err := e.conv().SaveTraces(e.ctx, "tr", []store.TraceEvent{seedTrace("only", true, 0, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	got, _ = e.conv().Traces(e.ctx, "tr", 0, 0)
	if len(got) != 1 || got[0].Name != "only" || got[0].Seq != 0 {
		t.Fatalf("replaced traces %+v", got)
	}
}

func testConvReportsAppendReplace(t *testing.T, e *env) {
	e.save(store.Conversation{ID: "rep"})
	r1 := seedReport()
	r2 := seedReport()
	r2.Subject, r2.Status = "change:abc", store.VerificationNeedsReview
	r2.ResidualRisks = []string{"no tests cover the parser"}
	r2.EffectDigest = "sha256:0f"
	r2.Checks = append(r2.Checks, store.VerificationCheck{ID: "lint", Kind: "lint", Description: "Run lints",
		Status: store.VerificationSkipped, SuggestedTools: []string{"bash"}, EvidenceURIs: []string{"a3s://x"}, ResidualRisk: "skipped"})
	if err := e.conv().AppendReports(e.ctx, "rep", r1); err != nil {
		t.Fatal(err)
	}
	if err := e.conv().AppendReports(e.ctx, "rep", r2); err != nil {
		t.Fatal(err)
	}
	got, err := e.conv().Reports(e.ctx, "rep")
	if err != nil {
		t.Fatal(err)
	}
	now := e.storedNow()
	r1.CreatedAt, r2.CreatedAt, r2.Seq = now, now, 1
	sameJSON(t, "reports", got, []store.VerificationReport{r1, r2})
	if err := e.conv().SaveReports(e.ctx, "rep", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.conv().Reports(e.ctx, "rep"); len(got) != 0 {
		t.Fatalf("reports after replace with none: %v", got)
	}
}

func testConvReopen(t *testing.T, e *env) {
	id := "durable"
	e.populate(id)
	e.appendMsgs(id, store.UserMessage("after save"))
	before := e.load(id)
	e.reopen()
	after := e.load(id)
	sameJSON(t, "conversation after reopen", after, before)
	if a, err := e.conv().Artifacts(e.ctx, id); err != nil || len(a) != 1 {
		t.Fatalf("artifacts after reopen %v, %v", a, err)
	}
}

// a3sFile is a session file as the a3s file store writes it, with the
// "todos" alias and an API key a hand-edited file might carry.
const a3sFile = `{
  "id": "a3s/imported",
  "config": {
    "name": "Imported",
    "workspace": "/home/dev/project",
    "system_prompt": null,
    "max_context_length": 128000,
    "auto_compact": true,
    "storage_type": "file",
    "permission_policy": {"allow": ["Bash(go test:*)"]},
    "planning_mode": "Enabled",
    "goal_tracking": true
  },
  "state": "Completed",
  "messages": [
    {"role": "user", "content": [{"type": "text", "text": "run the tests"}]},
    {"role": "assistant", "reasoning_content": "use bash", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "go test ./..."}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": false}]}
  ],
  "context_usage": {"used_tokens": 900, "max_tokens": 128000, "percent": 0.007, "turns": 3},
  "total_usage": {"prompt_tokens": 800, "completion_tokens": 100, "total_tokens": 900, "cache_read_tokens": null, "cache_write_tokens": 12},
  "total_cost": 0.01,
  "tool_names": ["bash"],
  "thinking_enabled": false,
  "thinking_budget": null,
  "created_at": 1717000000,
  "updated_at": 1717000300,
  "llm_config": {"provider": "openai", "model": "gpt-4o", "api_key": "sk-imported-secret", "base_url": null},
  "todos": [{"id": "1", "content": "run tests", "status": "completed", "priority": "high"}],
  "some_future_field": {"ignored": true}
}`

func testConvA3SImport(t *testing.T, e *env) {
	c, err := a3s.Decode(strings.NewReader(a3sFile))
	if err != nil {
		t.Fatal(err)
	}
	if c.LLMConfig.APIKey != "sk-imported-secret" || len(c.Tasks) != 1 || c.Config.AutoCompactThreshold != 0.8 {
		t.Fatalf("decoded %+v", c)
	}
	e.save(c)
	got := e.load(c.ID)
	if got.LLMConfig.APIKey != "" {
		t.Fatal("imported API key was persisted")
	}
	want := c
	want.LLMConfig = &store.LLMConfig{Provider: "openai", Model: "gpt-4o"}
	sameJSON(t, "imported conversation", got, e.expectLoaded(want, 1))
	out, err := a3s.Encode(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sk-imported-secret") {
		t.Fatal("export wrote the API key")
	}
	again, err := a3s.Decode(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	again.Version, again.MessageCount = got.Version, got.MessageCount
	for i := range again.Messages {
		again.Messages[i].CreatedAt = got.Messages[i].CreatedAt
	}
	sameJSON(t, "re-imported conversation", again, got)
}

func testConvInvalidInput(t *testing.T, e *env) {
	s := seedSession()
	e.save(s)
	before := e.load(s.ID)
	nan, neg := math.NaN(), int64(-1)
	bad := func(mut func(c *store.Conversation)) store.Conversation {
		c := seedSession()
		mut(&c)
		return c
	}
	saves := map[string]store.Conversation{
		"empty id":          bad(func(c *store.Conversation) { c.ID = "" }),
		"control char id":   bad(func(c *store.Conversation) { c.ID = "a\x00b" }),
		"long id":           bad(func(c *store.Conversation) { c.ID = strings.Repeat("x", store.MaxIDLength+1) }),
		"bad state":         bad(func(c *store.Conversation) { c.State = "sleeping" }),
		"nan cost":          bad(func(c *store.Conversation) { c.TotalCost = nan }),
		"negative cost":     bad(func(c *store.Conversation) { c.TotalCost = -1 }),
		"infinite percent":  bad(func(c *store.Conversation) { c.ContextUsage.Percent = math.Inf(1) }),
		"negative tokens":   bad(func(c *store.Conversation) { c.TotalUsage.PromptTokens = -5 }),
		"negative cache":    bad(func(c *store.Conversation) { c.TotalUsage.CacheReadTokens = &neg }),
		"threshold above 1": bad(func(c *store.Conversation) { c.Config.AutoCompactThreshold = 1.5 }),
		"bad storage":       bad(func(c *store.Conversation) { c.Config.StorageType = "s3" }),
		"bad planning":      bad(func(c *store.Conversation) { c.Config.PlanningMode = "sometimes" }),
		"malformed policy":  bad(func(c *store.Conversation) { c.Config.PermissionPolicy = json.RawMessage(`{"allow":`) }),
		"empty role":        bad(func(c *store.Conversation) { c.Messages[1].Role = "" }),
		"weird role":        bad(func(c *store.Conversation) { c.Messages[1].Role = "as sistant" }),
		"untyped block":     bad(func(c *store.Conversation) { c.Messages[0].Content[0].Type = "" }),
		"malformed input": bad(func(c *store.Conversation) {
			c.Messages[0].Content = []store.ContentBlock{{Type: "tool_use", Input: json.RawMessage(`{oops}`)}}
		}),
		"invalid utf8 text": bad(func(c *store.Conversation) { c.Messages[0].Content[0].Text = "\xff\xfe" }),
		"invalid utf8 name": bad(func(c *store.Conversation) { c.Config.Name = "\xff" }),
		"huge message": bad(func(c *store.Conversation) {
			c.Messages[0].Content[0].Text = strings.Repeat("x", store.MaxMessageBytes)
		}),
		"negative budget":   bad(func(c *store.Conversation) { c.ThinkingBudget = &neg }),
		"negative version":  bad(func(c *store.Conversation) { c.Version = -1 }),
		"empty tool name":   bad(func(c *store.Conversation) { c.ToolNames = []string{""} }),
		"control parent id": bad(func(c *store.Conversation) { c.ParentID = "p\n" }),
		"nan cost record":   bad(func(c *store.Conversation) { c.CostRecords = []store.CostRecord{{CostUSD: &nan}} }),
		"negative max ctx":  bad(func(c *store.Conversation) { c.Config.MaxContextLength = -1 }),
		"nul in prompt":     bad(func(c *store.Conversation) { c.Config.SystemPrompt = "a\x00" }),
		"NaN threshold":     bad(func(c *store.Conversation) { c.Config.AutoCompactThreshold = nan }),
		"tool result input": bad(func(c *store.Conversation) { c.Messages[0].Content[0].Content = json.RawMessage(`[1,`) }),
		"extra not json": bad(func(c *store.Conversation) {
			c.Messages[0].Content[0].Extra = map[string]json.RawMessage{"x": json.RawMessage(`nope`)}
		}),
		"negative used ctx":  bad(func(c *store.Conversation) { c.ContextUsage.UsedTokens = -1 }),
		"too many tools":     bad(func(c *store.Conversation) { c.ToolNames = make([]string, store.MaxListItems+1) }),
		"task invalid utf8":  bad(func(c *store.Conversation) { c.Tasks = []store.Task{{ID: "\xff"}} }),
		"llm model nul byte": bad(func(c *store.Conversation) { c.LLMConfig = &store.LLMConfig{Model: "a\x00"} }),
	}
	for name, c := range saves {
		if _, err := e.conv().Save(e.ctx, c); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: Save = %v, want ErrInvalidInput", name, err)
		}
	}
	appends := map[string]store.AppendRequest{
		"empty id":       {Messages: []store.Message{store.UserMessage("x")}},
		"bad role":       {ID: s.ID, Messages: []store.Message{store.UserMessage("x"), {Role: "", Content: nil}}},
		"negative cost":  {ID: s.ID, Cost: -1},
		"nan cost":       {ID: s.ID, Cost: nan},
		"negative usage": {ID: s.ID, Usage: &store.TokenUsage{TotalTokens: -1}},
		"too many":       {ID: s.ID, Messages: make([]store.Message, store.MaxAppendMessages+1)},
		"bad block":      {ID: s.ID, Messages: []store.Message{{Role: "user", Content: []store.ContentBlock{{Type: "text", Input: json.RawMessage(`{`)}}}}},
		"version":        {ID: s.ID, ExpectVersion: -3},
	}
	for name, r := range appends {
		if _, err := e.conv().Append(e.ctx, r); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: Append = %v, want ErrInvalidInput", name, err)
		}
	}
	c := e.conv()
	for name, err := range map[string]error{
		"artifact without uri": c.PutArtifacts(e.ctx, s.ID, store.Artifact{Content: "x"}),
		"artifact too large":   c.PutArtifacts(e.ctx, s.ID, store.Artifact{URI: "u", Content: strings.Repeat("x", store.MaxArtifactBytes+1)}),
		"artifact negative":    c.PutArtifacts(e.ctx, s.ID, store.Artifact{URI: "u", OriginalBytes: -1}),
		"trace without kind":   func() error { _, err := c.AppendTraces(e.ctx, s.ID, store.TraceEvent{Name: "x"}); return err }(),
		"trace bad details": func() error {
			_, err := c.AppendTraces(e.ctx, s.ID, store.TraceEvent{Kind: "k", Details: json.RawMessage(`{`)})
			return err
		}(),
		"run without id":      c.PutRuns(e.ctx, s.ID, store.RunRecord{}),
		"run event null":      c.PutRuns(e.ctx, s.ID, store.RunRecord{Snapshot: store.RunSnapshot{ID: "r"}, Events: []store.RunEvent{{Event: json.RawMessage(`null`)}}}),
		"run event missing":   func() error { _, err := c.AppendRunEvents(e.ctx, s.ID, "r", store.RunEvent{}); return err }(),
		"report without subj": c.AppendReports(e.ctx, s.ID, store.VerificationReport{Status: "passed"}),
		"trace negative from": func() error { _, err := c.Traces(e.ctx, s.ID, -1, 0); return err }(),
		"empty id load":       func() error { _, err := c.Load(e.ctx, ""); return err }(),
		"empty id delete":     c.Delete(e.ctx, ""),
		"empty artifact uri":  func() error { _, err := c.Artifact(e.ctx, s.ID, ""); return err }(),
	} {
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
	after := e.load(s.ID)
	sameJSON(t, "conversation after rejected writes", after, before)
	e.wantNoRecords(s.ID)
	if ids := e.listIDs(store.ConversationFilter{}); !slices.Equal(ids, []string{s.ID}) {
		t.Fatalf("rejected saves created %v", ids)
	}
	// Error strings describe the input's shape, never its content.
	_, err := e.conv().Save(e.ctx, bad(func(c *store.Conversation) { c.Config.Name = "secret-\xff" }))
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error echoes data: %v", err)
	}
}

func init() {
	registerRole("append-hammer", appendHammerRole)
}

// appendHammerRole appends args[2] messages from args[1] goroutines to
// conversation args[0], each text "<prefix><worker>-<i>" with prefix
// args[3], and reports how many succeeded.
func appendHammerRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	if len(args) != 4 {
		return fmt.Errorf("want 4 args, got %d", len(args))
	}
	workers, _ := strconv.Atoi(args[1])
	each, _ := strconv.Atoi(args[2])
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok int
	var firstErr error
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				_, err := st.Conversations().AppendMessages(ctx, args[0], store.UserMessage(fmt.Sprintf("%s%d-%d", args[3], w, i)))
				mu.Lock()
				if err == nil {
					ok++
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return report(out, map[string]int{"ok": ok})
}

// Appends from three OS processes (and the parent) on one database keep a
// gapless history with every message exactly once.
func testConvMultiProcess(t *testing.T, e *env) {
	const procs, workers, each = 2, 4, 40
	e.save(store.Conversation{ID: "mp"})
	var wg sync.WaitGroup
	defer wg.Wait()
	oks := make([]int, procs)
	for p := range procs {
		cmd, stdout := e.spawn("append-hammer", "mp", strconv.Itoa(workers), strconv.Itoa(each), fmt.Sprintf("p%d-w", p))
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var r map[string]int
				if json.Unmarshal(sc.Bytes(), &r) == nil {
					oks[p] = r["ok"]
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper process %d: %v", p, err)
			}
		})
	}
	if err := appendHammerRole(e.ctx, e.st, []string{"mp", strconv.Itoa(workers), strconv.Itoa(each), "pp-w"}, io.Discard); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for p, ok := range oks {
		if ok != workers*each {
			t.Fatalf("process %d appended %d, want %d", p, ok, workers*each)
		}
	}
	// Every (process, worker) pair is one writer with its own order.
	writers := (procs + 1) * workers
	prefix := func(w int) string {
		p, wk := w/workers, w%workers
		if p == procs {
			return fmt.Sprintf("pp-w%d-", wk)
		}
		return fmt.Sprintf("p%d-w%d-", p, wk)
	}
	checkGapless(t, e, "mp", writers*each, prefix, writers, each)
}

// storedNow is the clock's time at the precision every backend stores:
// UTC, whole milliseconds (the store package documentation).
func (e *env) storedNow() time.Time { return time.UnixMilli(e.clock.Now().UnixMilli()).UTC() }
