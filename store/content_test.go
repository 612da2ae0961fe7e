package store_test

import (
	"encoding/json"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// TestContentBlockJSON: the JSON form of content blocks, which is also the
// stored form ValidateMessage returns, and its way back.
func TestContentBlockJSON(t *testing.T) {
	yes := false
	blocks := []store.ContentBlock{
		store.TextBlock(""),
		store.ReasoningBlock("why"),
		store.ToolUseBlock("id1", "bash", nil),
		store.ToolResultBlock("id1", "out", true),
		{Type: store.BlockToolResult, ToolUseID: "id2", Content: json.RawMessage(`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`), IsError: &yes},
		{Type: "image", Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"type":"base64","data":"AA=="}`), "cache_control": json.RawMessage(`{"type":"ephemeral"}`)}},
	}
	enc, err := store.ValidateMessage("message", &store.Message{Role: store.RoleUser, Content: blocks})
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":""},{"type":"reasoning","text":"why"},{"type":"tool_use","id":"id1","name":"bash","input":{}},` +
		`{"type":"tool_result","tool_use_id":"id1","content":"out","is_error":true},` +
		`{"type":"tool_result","tool_use_id":"id2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"is_error":false},` +
		`{"type":"image","cache_control":{"type":"ephemeral"},"source":{"type":"base64","data":"AA=="}}]`
	if string(enc) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", enc, want)
	}
	var dec []store.ContentBlock
	if err := json.Unmarshal(enc, &dec); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(dec)
	if err != nil || string(again) != want {
		t.Fatalf("re-encoded %s, %v", again, err)
	}
	if dec[4].ResultText() != "a\nb" || dec[3].ResultText() != "out" {
		t.Fatalf("result texts %q %q", dec[4].ResultText(), dec[3].ResultText())
	}
	if m := (store.Message{Content: dec}); m.Text() != "" {
		t.Fatalf("text %q", m.Text())
	}
}
