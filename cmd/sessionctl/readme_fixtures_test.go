package main

// The transcripts' fixtures (README.md and docs/*.md): data a program
// writes through the library, which sessionctl cannot write itself.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

// readmeFixtures write what a transcript shows that sessionctl cannot
// write itself, through the library, on the run's clock.
var readmeFixtures = map[string]func(e *testEnv){
	"agent-sessions": readmeAgentSessions,
	"conversation":   readmeConversation,
	"key-file":       func(e *testEnv) { readmeKeyFile(e, "v1") },
	"key-file-v2":    func(e *testEnv) { readmeKeyFile(e, "v2") },
}

// readmeKeyFile adds a new key-encryption key of version to the key file
// kek in the working directory (mode 0600), as its last, current line.
func readmeKeyFile(e *testEnv, version string) {
	line, err := keys.GenerateEntry(version)
	if err != nil {
		e.t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(e.dir, "kek"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		e.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		e.t.Fatal(err)
	}
}

// readmeAgentSessions writes two agent sessions of the app "support": ada's
// s1 with twelve events in two invocations and state in every scope, and
// bob's s1 without events.
func readmeAgentSessions(e *testEnv) {
	t := e.t
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	as := st.AgentSessions()
	ada := store.SessionKey{App: "support", User: "ada", Session: "s1"}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: ada, State: store.ScopedState{
		App:  map[string]json.RawMessage{"greeting": json.RawMessage(`"hi"`)},
		User: map[string]json.RawMessage{"tier": json.RawMessage(`"gold"`)},
	}}); err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		e.clock.Advance(700 * time.Millisecond)
		author := "user"
		if i%2 == 1 {
			author = "model"
		}
		ev := store.AgentEvent{ID: fmt.Sprintf("e%d", i), InvocationID: fmt.Sprintf("inv-%d", 1+i/6),
			Data: json.RawMessage(fmt.Sprintf(`{"author":%q,"n":%d}`, author, i))}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: ada, Event: ev, Delta: store.ScopedState{
			Session: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Second)
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "support", User: "bob", Session: "s1"}}); err != nil {
		t.Fatal(err)
	}
}

// readmeConversation writes the conversation conv-1: a question, a tool
// call and its result, and the answer, with usage and cost.
func readmeConversation(e *testEnv) {
	t := e.t
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	c := store.NewConversation("conv-1")
	c.Config.Name = "fix the flaky test"
	if _, err := st.Conversations().Save(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().Append(ctx, store.AppendRequest{ID: "conv-1", Messages: []store.Message{
		store.UserMessage("The parser test is flaky."),
		{Role: store.RoleAssistant, Content: []store.ContentBlock{store.ToolUseBlock("t1", "bash", json.RawMessage(`{"command":"go test ./parser"}`))}},
		{Role: store.RoleUser, Content: []store.ContentBlock{store.ToolResultBlock("t1", "FAIL: TestParse (map order)", true)}},
		store.AssistantMessage("The test depended on map order; fixed."),
		store.UserMessage("Thanks."),
	}, Usage: &store.TokenUsage{PromptTokens: 2400, CompletionTokens: 180, TotalTokens: 2580}, Cost: 0.0121}); err != nil {
		t.Fatal(err)
	}
}
