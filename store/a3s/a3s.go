// Package a3s reads and writes the a3s session-file format: the JSON
// document the a3s-code file store writes per session (serde's encoding of
// its SessionData). Decode reads one into a store.Conversation, validated
// as Conversations.Save would validate it:
//
//   - "tasks" may also be spelled "todos" (both at once is an error), and a
//     task's "content" may be spelled "description";
//   - missing fields take the a3s defaults (auto-compact threshold 0.80,
//     context window 200000, storage "file", planning "Auto", empty lists);
//   - unknown fields are ignored, as a3s ignores them;
//   - created_at and updated_at are unix seconds; states and planning modes
//     are the a3s variant names ("Active", "Auto"), matched case-insensitively;
//   - a message's "reasoning_content" becomes a leading reasoning block;
//   - an "api_key" in "llm_config" is read into LLMConfig.APIKey (memory
//     only: no store writes it).
//
// Encode writes the same format back (without the API key), so that a
// file survives Decode → Save → Load → Encode with the same meaning.
package a3s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// MaxFileBytes bounds a session file Decode accepts.
const MaxFileBytes = 256 << 20

// fileSession and the types below are the file's JSON shapes.
type fileSession struct {
	ID              *string           `json:"id"`
	Config          *fileConfig       `json:"config"`
	State           *string           `json:"state"`
	Messages        []fileMessage     `json:"messages"`
	ContextUsage    *fileContextUsage `json:"context_usage"`
	TotalUsage      *fileUsage        `json:"total_usage"`
	TotalCost       float64           `json:"total_cost"`
	ModelName       *string           `json:"model_name,omitempty"`
	CostRecords     []fileCostRecord  `json:"cost_records"`
	ToolNames       []string          `json:"tool_names"`
	ThinkingEnabled bool              `json:"thinking_enabled"`
	ThinkingBudget  *int64            `json:"thinking_budget"`
	CreatedAt       int64             `json:"created_at"`
	UpdatedAt       int64             `json:"updated_at"`
	LLMConfig       *fileLLMConfig    `json:"llm_config,omitempty"`
	Tasks           json.RawMessage   `json:"tasks"`
	Todos           json.RawMessage   `json:"todos,omitempty"`
	ParentID        *string           `json:"parent_id,omitempty"`
}

type fileConfig struct {
	Name                 string          `json:"name"`
	Workspace            string          `json:"workspace"`
	SystemPrompt         *string         `json:"system_prompt"`
	MaxContextLength     int64           `json:"max_context_length"`
	AutoCompact          bool            `json:"auto_compact"`
	AutoCompactThreshold *float64        `json:"auto_compact_threshold"`
	StorageType          *string         `json:"storage_type"`
	QueueConfig          json.RawMessage `json:"queue_config,omitempty"`
	ConfirmationPolicy   json.RawMessage `json:"confirmation_policy,omitempty"`
	PermissionPolicy     json.RawMessage `json:"permission_policy,omitempty"`
	ParentID             *string         `json:"parent_id,omitempty"`
	SecurityConfig       json.RawMessage `json:"security_config,omitempty"`
	PlanningMode         *string         `json:"planning_mode"`
	GoalTracking         bool            `json:"goal_tracking"`
}

type fileMessage struct {
	Role             string               `json:"role"`
	Content          []store.ContentBlock `json:"content"`
	ReasoningContent *string              `json:"reasoning_content,omitempty"`
}

type fileContextUsage struct {
	UsedTokens int64   `json:"used_tokens"`
	MaxTokens  *int64  `json:"max_tokens"`
	Percent    float64 `json:"percent"`
	Turns      int64   `json:"turns"`
}

// usage is TokenUsage as a3s writes it: absent cache counters are null.
type fileUsage struct {
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	CacheReadTokens  *int64 `json:"cache_read_tokens"`
	CacheWriteTokens *int64 `json:"cache_write_tokens"`
}

type fileCostRecord struct {
	Model            string   `json:"model"`
	Provider         string   `json:"provider"`
	PromptTokens     int64    `json:"prompt_tokens"`
	CompletionTokens int64    `json:"completion_tokens"`
	TotalTokens      int64    `json:"total_tokens"`
	CostUSD          *float64 `json:"cost_usd"`
	Timestamp        string   `json:"timestamp"`
	SessionID        *string  `json:"session_id"`
}

type fileLLMConfig struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	APIKey   *string `json:"api_key,omitempty"`
	BaseURL  *string `json:"base_url"`
}

type fileTask struct {
	ID              string   `json:"id"`
	Content         *string  `json:"content,omitempty"`
	Description     *string  `json:"description,omitempty"`
	Status          string   `json:"status"`
	Priority        string   `json:"priority"`
	Tool            *string  `json:"tool,omitempty"`
	Dependencies    []string `json:"dependencies,omitempty"`
	SuccessCriteria *string  `json:"success_criteria,omitempty"`
}

// Decode reads one a3s session file (see the package documentation) and
// returns the conversation it describes, validated as Save would validate
// it. A malformed file is a *store.InvalidInputError whose field starts
// with "a3s".
func Decode(r io.Reader) (store.Conversation, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return store.Conversation{}, err
	}
	if len(data) > MaxFileBytes {
		return store.Conversation{}, store.Invalid("a3s", "file too large")
	}
	var f fileSession
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return store.Conversation{}, store.Invalid("a3s", "not a session file: "+jsonReason(err))
	}
	if dec.More() {
		return store.Conversation{}, store.Invalid("a3s", "trailing data after the session object")
	}
	c := store.NewConversation("")
	if f.ID == nil || *f.ID == "" {
		return store.Conversation{}, store.Invalid("a3s.id", "missing")
	}
	c.ID = *f.ID
	if f.Config != nil {
		cfg := f.Config
		c.Config.Name, c.Config.Workspace = cfg.Name, cfg.Workspace
		if cfg.SystemPrompt != nil {
			c.Config.SystemPrompt = *cfg.SystemPrompt
		}
		c.Config.MaxContextLength = cfg.MaxContextLength
		c.Config.AutoCompact = cfg.AutoCompact
		if cfg.AutoCompactThreshold != nil {
			c.Config.AutoCompactThreshold = *cfg.AutoCompactThreshold
		}
		if cfg.StorageType != nil {
			c.Config.StorageType = strings.ToLower(*cfg.StorageType)
		}
		c.Config.QueueConfig = cfg.QueueConfig
		c.Config.ConfirmationPolicy = cfg.ConfirmationPolicy
		c.Config.PermissionPolicy = cfg.PermissionPolicy
		c.Config.SecurityConfig = cfg.SecurityConfig
		if cfg.ParentID != nil {
			c.Config.ParentID = *cfg.ParentID
		}
		if cfg.PlanningMode != nil {
			c.Config.PlanningMode = strings.ToLower(*cfg.PlanningMode)
		}
		c.Config.GoalTracking = cfg.GoalTracking
	}
	if f.State != nil {
		c.State = store.ConversationState(strings.ToLower(*f.State))
	} else {
		c.State = store.StateUnknown
	}
	c.Messages = make([]store.Message, len(f.Messages))
	for i, m := range f.Messages {
		msg := store.Message{Role: m.Role, Content: m.Content}
		if m.ReasoningContent != nil {
			msg.Content = append([]store.ContentBlock{store.ReasoningBlock(*m.ReasoningContent)}, m.Content...)
		}
		if msg.Content == nil {
			msg.Content = []store.ContentBlock{}
		}
		c.Messages[i] = msg
	}
	if u := f.ContextUsage; u != nil {
		c.ContextUsage = store.ContextUsage{UsedTokens: u.UsedTokens, Percent: u.Percent, Turns: u.Turns, MaxTokens: store.DefaultMaxContextTokens}
		if u.MaxTokens != nil {
			c.ContextUsage.MaxTokens = *u.MaxTokens
		}
	}
	if u := f.TotalUsage; u != nil {
		c.TotalUsage = store.TokenUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
			TotalTokens: u.TotalTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	}
	c.TotalCost = f.TotalCost
	if f.ModelName != nil {
		c.ModelName = *f.ModelName
	}
	for i, r := range f.CostRecords {
		rec := store.CostRecord{Model: r.Model, Provider: r.Provider, PromptTokens: r.PromptTokens,
			CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens, CostUSD: r.CostUSD}
		if r.SessionID != nil {
			rec.SessionID = *r.SessionID
		}
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			return store.Conversation{}, store.Invalid(fmt.Sprintf("a3s.cost_records[%d].timestamp", i), "not an RFC 3339 time")
		}
		rec.Timestamp = ts.UTC()
		c.CostRecords = append(c.CostRecords, rec)
	}
	c.ToolNames = f.ToolNames
	c.ThinkingEnabled = f.ThinkingEnabled
	c.ThinkingBudget = f.ThinkingBudget
	for name, sec := range map[string]int64{"created_at": f.CreatedAt, "updated_at": f.UpdatedAt} {
		if sec < 0 || sec > maxUnixSeconds {
			return store.Conversation{}, store.Invalid("a3s."+name, "out of range")
		}
	}
	c.CreatedAt = time.Unix(f.CreatedAt, 0).UTC()
	c.UpdatedAt = time.Unix(f.UpdatedAt, 0).UTC()
	if l := f.LLMConfig; l != nil {
		c.LLMConfig = &store.LLMConfig{Provider: l.Provider, Model: l.Model}
		if l.APIKey != nil {
			c.LLMConfig.APIKey = *l.APIKey
		}
		if l.BaseURL != nil {
			c.LLMConfig.BaseURL = *l.BaseURL
		}
	}
	tasks := f.Tasks
	if f.Todos != nil {
		if f.Tasks != nil {
			return store.Conversation{}, store.Invalid("a3s.tasks", `both "tasks" and its alias "todos" are present`)
		}
		tasks = f.Todos
	}
	if len(tasks) > 0 && string(tasks) != "null" {
		var ts []fileTask
		if err := json.Unmarshal(tasks, &ts); err != nil {
			return store.Conversation{}, store.Invalid("a3s.tasks", "malformed: "+jsonReason(err))
		}
		for i, t := range ts {
			task := store.Task{ID: t.ID, Status: t.Status, Priority: t.Priority, Dependencies: t.Dependencies}
			switch {
			case t.Content != nil && t.Description != nil:
				return store.Conversation{}, store.Invalid(fmt.Sprintf("a3s.tasks[%d]", i), `both "content" and its alias "description" are present`)
			case t.Content != nil:
				task.Content = *t.Content
			case t.Description != nil:
				task.Content = *t.Description
			default:
				return store.Conversation{}, store.Invalid(fmt.Sprintf("a3s.tasks[%d].content", i), "missing")
			}
			if task.Priority == "" {
				task.Priority = store.PriorityMedium
			}
			if t.Tool != nil {
				task.Tool = *t.Tool
			}
			if t.SuccessCriteria != nil {
				task.SuccessCriteria = *t.SuccessCriteria
			}
			c.Tasks = append(c.Tasks, task)
		}
	}
	if f.ParentID != nil {
		c.ParentID = *f.ParentID
	}
	key := ""
	if c.LLMConfig != nil {
		key = c.LLMConfig.APIKey
	}
	n, _, err := store.NormalizeConversation(c)
	if err != nil {
		var ie *store.InvalidInputError
		if errors.As(err, &ie) {
			return store.Conversation{}, store.Invalid("a3s."+ie.Field, ie.Reason)
		}
		return store.Conversation{}, err
	}
	if n.LLMConfig != nil {
		n.LLMConfig.APIKey = key // in memory only
	}
	n.Version = 0
	return n, nil
}

// maxUnixSeconds is the last second of year 9999.
const maxUnixSeconds = 253402300799

// Encode writes c in the a3s session-file format (indented, like the
// a3s file store). The API key is never written; reasoning blocks become
// the message's "reasoning_content" (joined with newlines when several).
func Encode(c store.Conversation) ([]byte, error) {
	f := fileSession{
		ID:    &c.ID,
		State: ptr(variant(string(c.State))),
		TotalUsage: &fileUsage{PromptTokens: c.TotalUsage.PromptTokens, CompletionTokens: c.TotalUsage.CompletionTokens,
			TotalTokens: c.TotalUsage.TotalTokens, CacheReadTokens: c.TotalUsage.CacheReadTokens,
			CacheWriteTokens: c.TotalUsage.CacheWriteTokens},
		TotalCost:       c.TotalCost,
		ThinkingEnabled: c.ThinkingEnabled,
		ThinkingBudget:  c.ThinkingBudget,
		CreatedAt:       c.CreatedAt.Unix(),
		UpdatedAt:       c.UpdatedAt.Unix(),
		ToolNames:       c.ToolNames,
		Messages:        []fileMessage{},
		CostRecords:     []fileCostRecord{},
	}
	if f.ToolNames == nil {
		f.ToolNames = []string{}
	}
	cfg := c.Config
	f.Config = &fileConfig{
		Name: cfg.Name, Workspace: cfg.Workspace, SystemPrompt: optString(cfg.SystemPrompt),
		MaxContextLength: cfg.MaxContextLength, AutoCompact: cfg.AutoCompact,
		AutoCompactThreshold: &cfg.AutoCompactThreshold, StorageType: &cfg.StorageType,
		QueueConfig: cfg.QueueConfig, ConfirmationPolicy: cfg.ConfirmationPolicy,
		PermissionPolicy: cfg.PermissionPolicy, SecurityConfig: cfg.SecurityConfig,
		ParentID: optString(cfg.ParentID), PlanningMode: ptr(variant(cfg.PlanningMode)),
		GoalTracking: cfg.GoalTracking,
	}
	for _, m := range c.Messages {
		out := fileMessage{Role: m.Role, Content: []store.ContentBlock{}}
		var reasoning []string
		for _, b := range m.Content {
			if b.Type == store.BlockReasoning {
				reasoning = append(reasoning, b.Text)
				continue
			}
			out.Content = append(out.Content, b)
		}
		if reasoning != nil {
			out.ReasoningContent = ptr(strings.Join(reasoning, "\n"))
		}
		f.Messages = append(f.Messages, out)
	}
	f.ContextUsage = &fileContextUsage{UsedTokens: c.ContextUsage.UsedTokens, MaxTokens: &c.ContextUsage.MaxTokens,
		Percent: c.ContextUsage.Percent, Turns: c.ContextUsage.Turns}
	f.ModelName = optString(c.ModelName)
	for _, r := range c.CostRecords {
		f.CostRecords = append(f.CostRecords, fileCostRecord{Model: r.Model, Provider: r.Provider,
			PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens,
			CostUSD: r.CostUSD, Timestamp: formatTime(r.Timestamp), SessionID: optString(r.SessionID)})
	}
	if c.LLMConfig != nil {
		f.LLMConfig = &fileLLMConfig{Provider: c.LLMConfig.Provider, Model: c.LLMConfig.Model, BaseURL: optString(c.LLMConfig.BaseURL)}
	}
	tasks := make([]fileTask, 0, len(c.Tasks))
	for _, t := range c.Tasks {
		tasks = append(tasks, fileTask{ID: t.ID, Content: ptr(t.Content), Status: t.Status, Priority: t.Priority,
			Tool: optString(t.Tool), Dependencies: t.Dependencies, SuccessCriteria: optString(t.SuccessCriteria)})
	}
	tb, err := json.Marshal(tasks)
	if err != nil {
		return nil, err
	}
	f.Tasks = tb
	f.ParentID = optString(c.ParentID)
	return json.MarshalIndent(f, "", "  ")
}

// formatTime formats t as the a3s runtime (chrono) does: RFC 3339 in UTC with
// "Z", fractional seconds only when there are some, in groups of three.
func formatTime(t time.Time) string {
	t = t.UTC()
	switch ns := t.Nanosecond(); {
	case ns == 0:
		return t.Format("2006-01-02T15:04:05Z")
	case ns%1_000_000 == 0:
		return t.Format("2006-01-02T15:04:05.000Z")
	case ns%1_000 == 0:
		return t.Format("2006-01-02T15:04:05.000000Z")
	default:
		return t.Format("2006-01-02T15:04:05.000000000Z")
	}
}

// variant spells a lower-case name as the a3s enum variant ("in_progress"
// → "InProgress").
func variant(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jsonReason describes a JSON decoding error by position and kind, without
// echoing the data.
func jsonReason(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %s has the wrong type", te.Field)
		}
		return "wrong JSON type"
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "truncated JSON"
	}
	return "malformed"
}
