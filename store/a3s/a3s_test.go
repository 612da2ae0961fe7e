package a3s_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/a3s"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "a3s", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, data []byte) store.Conversation {
	t.Helper()
	c, err := a3s.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return c
}

func generic(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A file written by the a3s store in full comes back out of Encode with
// the same JSON value.
func TestCanonicalFileRoundTrips(t *testing.T) {
	in := fixture(t, "coding-session.json")
	c := decode(t, in)
	if c.ID != "sess-7c1e2f40-coding" || c.State != store.StateActive || len(c.Messages) != 6 {
		t.Fatalf("decoded %q %q with %d messages", c.ID, c.State, len(c.Messages))
	}
	if m := c.Messages[1]; m.Content[0].Type != store.BlockReasoning || !strings.Contains(m.Content[0].Text, "ordering") {
		t.Fatalf("reasoning_content not a leading reasoning block: %+v", m.Content)
	}
	if c.Config.AutoCompactThreshold != 0.75 || c.Config.PlanningMode != store.PlanningAuto || c.Config.StorageType != store.StorageFile {
		t.Fatalf("config %+v", c.Config)
	}
	if len(c.CostRecords) != 3 || !c.CostRecords[0].Timestamp.Equal(time.Date(2025, 5, 30, 9, 14, 2, 481e6, time.UTC)) {
		t.Fatalf("cost records %+v", c.CostRecords)
	}
	if !c.CreatedAt.Equal(time.Unix(1748596400, 0)) {
		t.Fatalf("created_at %v", c.CreatedAt)
	}
	out, err := a3s.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := generic(t, out), generic(t, in); !reflect.DeepEqual(got, want) {
		t.Fatalf("re-encoded file differs:\n%s", out)
	}
}

func TestTodosAliasAndDefaults(t *testing.T) {
	c := decode(t, fixture(t, "legacy-todos.json"))
	if len(c.Tasks) != 3 {
		t.Fatalf("tasks from the todos alias: %+v", c.Tasks)
	}
	if c.Tasks[0].Content != "Read section 4.2.2 (heuristic freshness)" {
		t.Fatalf("task content from its description alias: %q", c.Tasks[0].Content)
	}
	if c.Tasks[1].Priority != store.PriorityMedium {
		t.Fatalf("default priority %q", c.Tasks[1].Priority)
	}
	if c.Config.AutoCompactThreshold != store.DefaultAutoCompactThreshold || c.Config.StorageType != store.StorageFile ||
		c.Config.PlanningMode != store.PlanningAuto || c.TotalCost != 0 || len(c.CostRecords) != 0 {
		t.Fatalf("defaults not applied: %+v", c.Config)
	}
	if c.State != store.StateCompleted || c.Config.SystemPrompt != "" {
		t.Fatalf("state %q prompt %q", c.State, c.Config.SystemPrompt)
	}
	if c.LLMConfig == nil || c.LLMConfig.APIKey != "sk-proj-LEGACY-FIXTURE-KEY-0b9d31" || c.LLMConfig.BaseURL == "" {
		t.Fatalf("llm config %+v", c.LLMConfig)
	}
	out, err := a3s.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"sk-proj-LEGACY", `"todos"`, "client_build"} {
		if bytes.Contains(out, []byte(banned)) {
			t.Fatalf("export contains %s", banned)
		}
	}
	if !bytes.Contains(out, []byte(`"tasks"`)) {
		t.Fatal("export has no tasks")
	}
}

func TestChildSession(t *testing.T) {
	c := decode(t, fixture(t, "delegated-child.json"))
	if c.ParentID != "sess-7c1e2f40-coding" || c.Config.ParentID != c.ParentID || c.State != store.StatePaused {
		t.Fatalf("parent %q/%q state %q", c.ParentID, c.Config.ParentID, c.State)
	}
	if c.ThinkingBudget == nil || *c.ThinkingBudget != 8192 || !c.ThinkingEnabled {
		t.Fatalf("thinking %v %v", c.ThinkingEnabled, c.ThinkingBudget)
	}
	img := c.Messages[0].Content[0]
	if img.Type != "image" || !bytes.Contains(img.Extra["source"], []byte("image/png")) {
		t.Fatalf("image block %+v", img)
	}
	res := c.Messages[2].Content[0]
	if res.ResultText() != "src/parser/lexer.rs:12: static KEYWORDS: [&str; 9]" || string(res.Extra["trust"]) != `"trusted"` {
		t.Fatalf("tool result %+v", res)
	}
	if c.Config.PlanningMode != store.PlanningDisabled || c.Config.StorageType != store.StorageMemory {
		t.Fatalf("config %+v", c.Config)
	}
	if c.TotalUsage.CacheReadTokens == nil || *c.TotalUsage.CacheReadTokens != 0 || c.TotalUsage.CacheWriteTokens != nil {
		t.Fatalf("usage %+v", c.TotalUsage)
	}
}

func TestRejectsMalformedFiles(t *testing.T) {
	cases := map[string]string{
		"empty":              ``,
		"not json":           `not valid json {{{`,
		"truncated":          `{"id":"partial-session","message`,
		"array":              `[]`,
		"null":               `null`,
		"no id":              `{"config":{}}`,
		"empty id":           `{"id":""}`,
		"id with newline":    `{"id":"a\nb"}`,
		"both aliases":       `{"id":"x","tasks":[],"todos":[]}`,
		"both task names":    `{"id":"x","tasks":[{"id":"1","content":"a","description":"b","status":"pending"}]}`,
		"task without text":  `{"id":"x","tasks":[{"id":"1","status":"pending"}]}`,
		"wrong type":         `{"id":"x","created_at":"yesterday"}`,
		"negative time":      `{"id":"x","created_at":-5}`,
		"far future":         `{"id":"x","updated_at":99999999999999}`,
		"unknown state":      `{"id":"x","state":"Sleeping"}`,
		"bad planning mode":  `{"id":"x","config":{"planning_mode":"Always"}}`,
		"bad timestamp":      `{"id":"x","cost_records":[{"model":"m","provider":"p","prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"timestamp":"noon"}]}`,
		"negative tokens":    `{"id":"x","total_usage":{"prompt_tokens":-1,"completion_tokens":0,"total_tokens":0}}`,
		"untyped block":      `{"id":"x","messages":[{"role":"user","content":[{"text":"hi"}]}]}`,
		"block not object":   `{"id":"x","messages":[{"role":"user","content":["hi"]}]}`,
		"message without":    `{"id":"x","messages":[{"content":[]}]}`,
		"threshold too high": `{"id":"x","config":{"auto_compact_threshold":3}}`,
		"trailing data":      `{"id":"x"} {"id":"y"}`,
		"huge number":        `{"id":"x","total_usage":{"prompt_tokens":1e400}}`,
	}
	for name, in := range cases {
		_, err := a3s.Decode(strings.NewReader(in))
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
	}
}

func TestUnknownFieldsIgnored(t *testing.T) {
	c := decode(t, []byte(`{"id":"x","future":{"a":1},"config":{"name":"n","later":true},"messages":[{"role":"user","content":[],"meta":1}]}`))
	if c.ID != "x" || c.Config.Name != "n" || len(c.Messages) != 1 {
		t.Fatalf("decoded %+v", c)
	}
}

// FuzzDecode: no input panics; whatever decodes encodes, and decodes
// again to the same conversation.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"coding-session.json", "legacy-todos.json", "delegated-child.json", "errored.json"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`{"id":"x","todos":[{"id":"1","description":"d","status":"pending"}]}`))
	f.Add([]byte(`{"id":"x","messages":[{"role":"user","content":[{"type":"tool_result","content":[1,{"a":null}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := a3s.Decode(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, store.ErrInvalidInput) {
				t.Fatalf("error %v is not ErrInvalidInput", err)
			}
			return
		}
		out, err := a3s.Encode(c)
		if err != nil {
			t.Fatalf("decoded but cannot encode: %v", err)
		}
		again, err := a3s.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("own export does not decode: %v\n%s", err, out)
		}
		a, _ := json.Marshal(again)
		b, _ := json.Marshal(c)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the conversation:\n%s\n%s", a, b)
		}
	})
}
