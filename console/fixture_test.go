package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// xss is agent-written content that must render as text and run nothing.
const xss = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`

// fixture names what populate wrote.
type fixture struct {
	Governed  string // active, with recorded uses
	Closed    string
	Conv      string // a conversation with a tool call, a long text, the xss message
	Child     string
	Runtime   string
	Upload    string
	AgentKey  store.SessionKey
	LongText  string
	Messages  int
	Uploaded  []byte
	Clock     *storetest.Clock
	Sessions  int
	RunID     string
	ToolInput string
	// StaleRuntime is a runtime session whose turn's process died (see
	// staleTurn); Reservation is a live reservation of Governed.
	StaleRuntime string
	Reservation  string
}

// populate writes the fixture through the store's public API.
func populate(t testing.TB, st store.Store, clock *storetest.Clock) fixture {
	t.Helper()
	ctx := context.Background()
	f := fixture{Clock: clock, Conv: "conv/main", Child: "conv/child", Runtime: "rt-1", Upload: "notes.txt",
		AgentKey: store.SessionKey{App: "demo-app", User: "alice", Session: "s1"}, RunID: "run-1"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	gov := st.Governance()
	s, err := gov.Create(ctx, store.CreateRequest{ID: "gov-1", AgentID: "agent-7", AuthorizedTools: []string{"read_file", "search"},
		CallBudget: 10, RateLimit: 5, TimeLimit: time.Hour, DeclaredIntent: "fix the parser " + xss, DelegationChain: []string{"root"},
		SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Limit: 10_000}, {Metric: store.MetricCost, Window: store.WindowDay, Limit: 2 * store.MicrosPerUnit, Currency: "USD"}}})
	must(err)
	f.Governed = s.ID
	for i, tools := range [][]string{{"read_file"}, {"search", "read_file"}, {"write_file"}, {"read_file"}} {
		clock.Advance(time.Minute)
		_, err := gov.Use(ctx, store.UseRequest{SessionID: s.ID, AgentID: "agent-7", Tools: tools, RequestID: fmt.Sprintf("req-%d", i)})
		if err != nil && !errorsIsTool(err) {
			t.Fatal(err)
		}
	}
	// Spend: the session's limits and its agent's, a settled
	// reservation, a live one and a refused one.
	sp := st.Spend()
	must(sp.SetAgentLimits(ctx, "agent-7", []store.SpendLimit{{Metric: store.MetricCost, Window: store.WindowDay, Limit: 5 * store.MicrosPerUnit, Currency: "USD"}}))
	usd := func(micros int64) store.SpendAmount {
		return store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: micros}
	}
	_, err = sp.Reserve(ctx, store.ReserveRequest{SessionID: s.ID, RequestID: "res-1", Amount: usd(200_000), Currency: "USD"})
	must(err)
	_, err = sp.Settle(ctx, store.SettleRequest{SessionID: s.ID, RequestID: "res-1", Actual: store.SpendAmount{InputTokens: 800, OutputTokens: 300, CostMicros: 150_000}})
	must(err)
	f.Reservation = "res-live"
	_, err = sp.Reserve(ctx, store.ReserveRequest{SessionID: s.ID, RequestID: f.Reservation, Amount: usd(500_000), Currency: "USD", TTL: time.Hour})
	must(err)
	if _, err := sp.Reserve(ctx, store.ReserveRequest{SessionID: s.ID, RequestID: "res-big", Amount: store.SpendAmount{InputTokens: 50_000}}); !errors.Is(err, store.ErrSpendLimitExceeded) {
		t.Fatalf("a reservation past the limit: %v", err)
	}
	c2, err := gov.Create(ctx, store.CreateRequest{ID: "gov-2", AgentID: "agent-8", AuthorizedTools: []string{"*"}, CallBudget: 3, TimeLimit: time.Hour})
	must(err)
	_, err = gov.Close(ctx, c2.ID)
	must(err)
	f.Closed = c2.ID
	for i := range 5 {
		_, err := gov.Create(ctx, store.CreateRequest{ID: fmt.Sprintf("gov-x%02d", i), AgentID: "agent-9", AuthorizedTools: []string{"search"}, CallBudget: 2, TimeLimit: time.Minute})
		must(err)
	}
	f.Sessions = 7

	conv := st.Conversations()
	c := store.NewConversation(f.Conv)
	c.Config.Name, c.Config.Workspace = "Fix the parser", "/src/parser"
	c.ModelName = "claude-sonnet-4"
	_, err = conv.Save(ctx, c)
	must(err)
	f.LongText = strings.Repeat("long line of output ", 400) + "THE-END"
	f.ToolInput = `{"path":"parser.go"}`
	isErr := false
	msgs := []store.Message{
		store.UserMessage("please fix the parser"),
		{Role: store.RoleAssistant, Content: []store.ContentBlock{store.TextBlock("looking"), store.ToolUseBlock("call-1", "read_file", json.RawMessage(f.ToolInput))}},
		{Role: store.RoleTool, Content: []store.ContentBlock{{Type: store.BlockToolResult, ToolUseID: "call-1", Content: json.RawMessage(`"package parser"`), IsError: &isErr}}},
		store.AssistantMessage(f.LongText),
		store.UserMessage(xss),
	}
	_, err = conv.Append(ctx, store.AppendRequest{ID: f.Conv, Messages: msgs, Usage: &store.TokenUsage{PromptTokens: 1200, CompletionTokens: 300, TotalTokens: 1500}, Cost: 0.0125})
	must(err)
	f.Messages = len(msgs)
	must(conv.PutArtifacts(ctx, f.Conv, store.Artifact{URI: "artifact://out/1", ID: "a1", ToolName: "read_file", Content: "artifact body " + xss, OriginalBytes: 42, ShownBytes: 42}))
	_, err = conv.AppendTraces(ctx, f.Conv, store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: "tool_execution", Name: "read_file", Success: true, DurationMS: 120, OutputBytes: 2048},
		store.TraceEvent{Schema: "a3s.trace_event.v1", Kind: "tool_execution", Name: "go test", Success: false, ExitCode: 1, DurationMS: 3400, OutputBytes: 99})
	must(err)
	must(conv.PutRuns(ctx, f.Conv, store.RunRecord{Snapshot: store.RunSnapshot{ID: f.RunID, Status: "completed", Prompt: "run the tests", ResultText: "ok"},
		Events: []store.RunEvent{{Seq: 1, Event: json.RawMessage(`{"type":"started"}`)}, {Seq: 2, Event: json.RawMessage(`{"type":"done"}`)}}}))
	must(conv.AppendReports(ctx, f.Conv, store.VerificationReport{Schema: "a3s.verification_report.v1", Subject: "parser fix", Status: "passed",
		Checks: []store.VerificationCheck{{ID: "c1", Kind: "test", Description: "go test passes", Status: "passed", Required: true}}}))
	child := store.NewConversation(f.Child)
	child.ParentID = f.Conv
	child.Config.Name = "sub-task"
	_, err = conv.Save(ctx, child)
	must(err)

	rt := st.Runtime()
	_, err = rt.Insert(ctx, store.NewRuntimeSession{ID: f.Runtime, AgentAlias: "coder", WorkspaceDir: "/w", ChatMode: store.ChatModeChat, OwnerID: "tui-1"})
	must(err)
	model := "claude-opus"
	_, err = rt.SetOverrides(ctx, f.Runtime, store.Overrides{Model: &model})
	must(err)
	f.Uploaded = []byte("<html><script>alert(1)</script></html>")
	_, err = rt.PutUpload(ctx, store.PutUploadRequest{SessionID: f.Runtime, RefID: f.Upload, Marker: "[upload]", WorkspacePath: "/w/notes.txt", Content: f.Uploaded})
	must(err)

	as := st.AgentSessions()
	_, err = as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: f.AgentKey, State: store.ScopedState{
		App: map[string]json.RawMessage{"theme": json.RawMessage(`"dark"`)}, Session: map[string]json.RawMessage{"step": json.RawMessage(`1`)}}})
	must(err)
	// The same session id under another user, and another application.
	for _, key := range []store.SessionKey{{App: f.AgentKey.App, User: "bob", Session: f.AgentKey.Session}, {App: "other-app", User: "carol", Session: "s2"}} {
		_, err = as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key})
		must(err)
	}
	for i := range 3 {
		_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: f.AgentKey, Event: store.AgentEvent{InvocationID: fmt.Sprintf("inv-%d", i%2), Data: json.RawMessage(fmt.Sprintf(`{"author":"model","text":%q}`, xss))}})
		must(err)
	}
	return f
}

// staleTurn begins a turn of runtime session "rt-stale" in a store of its
// own, then closes that store without ending the turn, as a process that
// dies does: once the clock passes the turn's lease (populate moves it
// minutes on), the turn reads as stale.
func staleTurn(t testing.TB, open func() (store.Store, error)) string {
	t.Helper()
	ctx := context.Background()
	st, err := open()
	if err != nil {
		t.Fatal(err)
	}
	const id = "rt-stale"
	if _, err := st.Runtime().Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "coder", WorkspaceDir: "/w2", ChatMode: store.ChatModeChat, OwnerID: "tui-2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Runtime().BeginTurn(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return id
}

func errorsIsTool(err error) bool { return errors.Is(err, store.ErrToolNotAuthorized) }

func storeClock() store.Clock { return storetest.NewClock().Now }
