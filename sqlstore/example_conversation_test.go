package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// A conversation: saved once, then grown by appends that insert rows only,
// read back by pages, and saved conditionally on its version.
func Example_conversation() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	st, err := sqlstore.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	conv := st.Conversations()

	c := store.NewConversation("session/42")
	c.Config.Name = "Fix the parser"
	c.LLMConfig = &store.LLMConfig{Provider: "anthropic", Model: "claude-sonnet-4", APIKey: "sk-in-memory-only"}
	if _, err := conv.Save(ctx, c); err != nil {
		log.Fatal(err)
	}

	res, err := conv.Append(ctx, store.AppendRequest{
		ID: "session/42",
		Messages: []store.Message{
			store.UserMessage("run the tests"),
			{Role: store.RoleAssistant, Content: []store.ContentBlock{
				store.ToolUseBlock("toolu_1", "bash", json.RawMessage(`{"command":"go test ./..."}`)),
			}},
			{Role: store.RoleUser, Content: []store.ContentBlock{store.ToolResultBlock("toolu_1", "ok", false)}},
		},
		Usage: &store.TokenUsage{PromptTokens: 812, CompletionTokens: 64, TotalTokens: 876},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first new message at", res.FirstSeq, "- messages:", res.MessageCount)

	last, _ := conv.LastMessages(ctx, "session/42", 2)
	for _, m := range last {
		fmt.Printf("%d %s %s\n", m.Seq, m.Role, m.Content[0].Type)
	}

	loaded, _ := conv.Load(ctx, "session/42")
	fmt.Printf("tokens %d, api key stored: %v\n", loaded.TotalUsage.TotalTokens, loaded.LLMConfig.APIKey != "")

	// Another writer appends; a save of the stale copy is refused.
	conv.AppendMessages(ctx, "session/42", store.AssistantMessage("all green"))
	loaded.Config.Name = "stale edit"
	_, err = conv.Save(ctx, loaded)
	fmt.Println("stale save:", errors.Is(err, store.ErrConflict))
	// Output:
	// first new message at 0 - messages: 3
	// 1 assistant tool_use
	// 2 user tool_result
	// tokens 876, api key stored: false
	// stale save: true
}
