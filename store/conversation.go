package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/internal/jsontext"
)

// ConversationState is the lifecycle state a runtime records for a
// conversation.
type ConversationState string

// Conversation states.
const (
	StateUnknown   ConversationState = "unknown"
	StateActive    ConversationState = "active"
	StatePaused    ConversationState = "paused"
	StateCompleted ConversationState = "completed"
	StateError     ConversationState = "error"
)

// Valid reports whether s is one of the defined states.
func (s ConversationState) Valid() bool {
	switch s {
	case StateUnknown, StateActive, StatePaused, StateCompleted, StateError:
		return true
	}
	return false
}

// Storage types a runtime may record in a conversation's configuration.
const (
	StorageMemory = "memory"
	StorageFile   = "file"
	StorageCustom = "custom"
)

// Planning modes of a conversation's configuration.
const (
	PlanningAuto     = "auto"
	PlanningEnabled  = "enabled"
	PlanningDisabled = "disabled"
)

// Defaults and bounds of conversations.
const (
	// DefaultAutoCompactThreshold is the context fraction that triggers
	// auto-compaction when none is set.
	DefaultAutoCompactThreshold = 0.80
	// DefaultMaxContextTokens is the context window recorded when none is.
	DefaultMaxContextTokens = 200_000
	// MaxTextBytes bounds free-text fields (name, workspace, system prompt,
	// model names, task text).
	MaxTextBytes = 1 << 20
	// MaxDocumentBytes bounds one JSON sub-object (a policy, a run snapshot,
	// a run event, a trace event, a report).
	MaxDocumentBytes = 8 << 20
)

// Conversation is everything an agent runtime persists about one
// conversation session: its configuration, state, usage and cost, tools,
// thinking settings, LLM configuration (never its API key), tasks and
// message history.
type Conversation struct {
	// ID is an opaque identifier; "session/a" and "../x" are valid and are
	// never used as paths.
	ID string `json:"id"`
	// Version increases by one with every change to the conversation, its
	// messages or its records (artifacts, trace events, run records,
	// reports). Set by the store. On Save, a non-zero Version makes the
	// save conditional: it fails with ErrConflict unless the stored
	// version is still this one.
	Version int64 `json:"version"`
	// Config is the session configuration.
	Config ConversationConfig `json:"config"`
	// State is the runtime's state; empty means StateUnknown.
	State ConversationState `json:"state"`
	// Messages is the history, oldest first. Save replaces it; Load returns
	// all of it (use Conversations.Messages to page).
	Messages []Message `json:"messages"`
	// MessageCount is the number of stored messages. Set by the store.
	MessageCount int64 `json:"message_count"`
	// ForkedFrom is set by Load on a fork whose lineage parent is a live
	// conversation: the messages up to At are read from it. Save ignores
	// it; an import restores the conversation as a fork of it when that
	// conversation holds the same messages up to At. Lineage is not
	// ParentID.
	ForkedFrom *ConversationForkPoint `json:"forked_from,omitempty"`
	// DataKeyID is the id of the conversation's data key in the store's
	// keyring when the store keeps it encrypted ("" otherwise). Set by
	// Load; Save ignores it; never exported as such (an export seals the
	// conversation's content with that key instead).
	DataKeyID string `json:"-"`
	// ContextUsage describes the context window.
	ContextUsage ContextUsage `json:"context_usage"`
	// TotalUsage accumulates token usage.
	TotalUsage TokenUsage `json:"total_usage"`
	// TotalCost is the cumulative cost in US dollars.
	TotalCost float64 `json:"total_cost"`
	// ModelName is the model used for cost calculation; empty when unset.
	ModelName string `json:"model_name,omitempty"`
	// CostRecords lists the cost of individual LLM calls, oldest first.
	CostRecords []CostRecord `json:"cost_records"`
	// ToolNames lists the tools available to the session.
	ToolNames []string `json:"tool_names"`
	// ThinkingEnabled turns model thinking on.
	ThinkingEnabled bool `json:"thinking_enabled"`
	// ThinkingBudget is the thinking token budget; nil when unset.
	ThinkingBudget *int64 `json:"thinking_budget,omitempty"`
	// CreatedAt and UpdatedAt are kept as given (millisecond precision);
	// when zero on Save, the store's clock is used. Appends and other
	// writes set UpdatedAt to the store's clock.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LLMConfig is the per-session model client configuration, or nil.
	LLMConfig *LLMConfig `json:"llm_config,omitempty"`
	// Tasks is the session's task list.
	Tasks []Task `json:"tasks"`
	// ParentID names the parent conversation of a delegated child session;
	// empty for none. It is data, not a reference the store enforces.
	ParentID string `json:"parent_id,omitempty"`
}

// ConversationConfig is the session configuration. Policy and queue
// objects are kept as JSON the store does not interpret.
type ConversationConfig struct {
	Name         string `json:"name"`
	Workspace    string `json:"workspace"`
	SystemPrompt string `json:"system_prompt,omitempty"`
	// MaxContextLength is the configured context length (0 = model default).
	MaxContextLength int64 `json:"max_context_length"`
	AutoCompact      bool  `json:"auto_compact"`
	// AutoCompactThreshold is the context fraction (0 to 1] that triggers
	// auto-compaction; 0 means DefaultAutoCompactThreshold.
	AutoCompactThreshold float64 `json:"auto_compact_threshold"`
	// StorageType is StorageMemory, StorageFile or StorageCustom; empty
	// means StorageFile.
	StorageType string `json:"storage_type"`
	// QueueConfig, ConfirmationPolicy, PermissionPolicy and SecurityConfig
	// are JSON objects kept verbatim (compacted); nil when unset.
	QueueConfig        json.RawMessage `json:"queue_config,omitempty"`
	ConfirmationPolicy json.RawMessage `json:"confirmation_policy,omitempty"`
	PermissionPolicy   json.RawMessage `json:"permission_policy,omitempty"`
	// ParentID is the configuration's parent session id; empty for none.
	ParentID       string          `json:"parent_id,omitempty"`
	SecurityConfig json.RawMessage `json:"security_config,omitempty"`
	// PlanningMode is PlanningAuto, PlanningEnabled or PlanningDisabled;
	// empty means PlanningAuto.
	PlanningMode string `json:"planning_mode"`
	GoalTracking bool   `json:"goal_tracking"`
}

// ContextUsage describes the context window of a conversation.
type ContextUsage struct {
	UsedTokens int64 `json:"used_tokens"`
	// MaxTokens is the window size; 0 means DefaultMaxContextTokens.
	MaxTokens int64   `json:"max_tokens"`
	Percent   float64 `json:"percent"`
	Turns     int64   `json:"turns"`
}

// TokenUsage counts tokens. The cache counters are nil when the provider
// did not report them.
type TokenUsage struct {
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	CacheReadTokens  *int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens *int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns u plus d, saturating at math.MaxInt64. A cache counter is nil
// only when it is nil in both.
func (u TokenUsage) Add(d TokenUsage) TokenUsage {
	return TokenUsage{
		PromptTokens:     satAdd(u.PromptTokens, d.PromptTokens),
		CompletionTokens: satAdd(u.CompletionTokens, d.CompletionTokens),
		TotalTokens:      satAdd(u.TotalTokens, d.TotalTokens),
		CacheReadTokens:  addOpt(u.CacheReadTokens, d.CacheReadTokens),
		CacheWriteTokens: addOpt(u.CacheWriteTokens, d.CacheWriteTokens),
	}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func addOpt(a, b *int64) *int64 {
	if a == nil && b == nil {
		return nil
	}
	var x, y int64
	if a != nil {
		x = *a
	}
	if b != nil {
		y = *b
	}
	s := satAdd(x, y)
	return &s
}

// LLMConfig is a per-session model client configuration. APIKey lives in
// memory only: no store ever writes it, and a loaded config has it empty.
type LLMConfig struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// APIKey is never persisted (and never encoded as JSON).
	APIKey  string `json:"-"`
	BaseURL string `json:"base_url,omitempty"`
}

// Task statuses and priorities used by runtimes.
const (
	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskCompleted  = "completed"
	TaskFailed     = "failed"
	TaskSkipped    = "skipped"
	TaskCancelled  = "cancelled"

	PriorityHigh   = "high"
	PriorityMedium = "medium"
	PriorityLow    = "low"
)

// Task is one item of a conversation's task list (a plan step or a to-do).
type Task struct {
	ID              string   `json:"id"`
	Content         string   `json:"content"`
	Status          string   `json:"status"`
	Priority        string   `json:"priority"`
	Tool            string   `json:"tool,omitempty"`
	Dependencies    []string `json:"dependencies,omitempty"`
	SuccessCriteria string   `json:"success_criteria,omitempty"`
}

// CostRecord is the cost of one LLM call.
type CostRecord struct {
	Model            string `json:"model"`
	Provider         string `json:"provider"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	// CostUSD is nil when no pricing was configured.
	CostUSD   *float64  `json:"cost_usd,omitempty"`
	Timestamp time.Time `json:"timestamp"`
	// SessionID is the session the runtime attributed the call to; empty
	// for none.
	SessionID string `json:"session_id,omitempty"`
}

// ConversationSummary is a conversation's metadata without its messages,
// cost records or configuration documents: what List returns.
type ConversationSummary struct {
	ID           string            `json:"id"`
	Version      int64             `json:"version"`
	Name         string            `json:"name"`
	Workspace    string            `json:"workspace"`
	State        ConversationState `json:"state"`
	ParentID     string            `json:"parent_id,omitempty"`
	ModelName    string            `json:"model_name,omitempty"`
	MessageCount int64             `json:"message_count"`
	TotalUsage   TokenUsage        `json:"total_usage"`
	TotalCost    float64           `json:"total_cost"`
	CreatedAt    time.Time         `json:"created_at"`
	UpdatedAt    time.Time         `json:"updated_at"`
}

// Summary returns the conversation's metadata.
func (c *Conversation) Summary() ConversationSummary {
	return ConversationSummary{
		ID: c.ID, Version: c.Version, Name: c.Config.Name, Workspace: c.Config.Workspace,
		State: c.State, ParentID: c.ParentID, ModelName: c.ModelName, MessageCount: c.MessageCount,
		TotalUsage: c.TotalUsage, TotalCost: c.TotalCost, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// NewConversation returns a conversation with id and the documented
// defaults filled in (state active).
func NewConversation(id string) Conversation {
	return Conversation{
		ID:    id,
		State: StateActive,
		Config: ConversationConfig{
			AutoCompactThreshold: DefaultAutoCompactThreshold,
			StorageType:          StorageFile,
			PlanningMode:         PlanningAuto,
		},
		ContextUsage: ContextUsage{MaxTokens: DefaultMaxContextTokens},
	}
}

// ConversationFilter selects conversations to list. The zero value lists
// every conversation.
type ConversationFilter struct {
	// ParentID, when set, lists only the children of that conversation.
	ParentID string
	// UpdatedBefore, when set, lists only conversations last updated
	// strictly before it.
	UpdatedBefore time.Time
	// After is the id of the last conversation of the previous page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates f and applies the default limit.
func (f ConversationFilter) Normalize() (ConversationFilter, error) {
	if f.ParentID != "" {
		if err := ValidateID("parent_id", f.ParentID); err != nil {
			return f, err
		}
	}
	if f.After != "" {
		if err := ValidateID("after", f.After); err != nil {
			return f, err
		}
	}
	if f.Limit < 0 {
		return f, Invalid("limit", "must not be negative")
	}
	if f.Limit == 0 {
		f.Limit = DefaultPageSize
	}
	f.Limit = min(f.Limit, MaxPageSize)
	return f, nil
}

// AppendRequest adds messages to a conversation, and optionally usage and
// cost, in one transaction. Only the new rows are written: the cost does not
// depend on the length of the history.
type AppendRequest struct {
	// ID is the conversation. Required.
	ID string
	// Messages are appended in order, numbered after the last stored one.
	Messages []Message
	// Usage, when set, is added to the conversation's total usage.
	Usage *TokenUsage
	// Cost is added to the conversation's total cost (US dollars, >= 0).
	Cost float64
	// CostRecords are appended to the conversation's cost records.
	CostRecords []CostRecord
	// ContextUsage, when set, replaces the conversation's context usage.
	ContextUsage *ContextUsage
	// ExpectVersion, when non-zero, makes the append conditional on the
	// stored version (ErrConflict otherwise). Appends never need it: two
	// writers appending to one conversation both succeed.
	ExpectVersion int64
}

// AppendResult tells where appended messages landed.
type AppendResult struct {
	// FirstSeq is the position of the first appended message (or the next
	// position when none were appended).
	FirstSeq int64 `json:"first_seq"`
	// MessageCount is the number of stored messages after the append.
	MessageCount int64 `json:"message_count"`
	// Version is the conversation's version after the append.
	Version int64 `json:"version"`
}

// TrimResult reports a retention pass over messages.
type TrimResult struct {
	// Conversations is the number of conversations that lost messages.
	Conversations int64 `json:"conversations"`
	// Removed is the number of messages removed.
	Removed int64 `json:"removed"`
}

// ConversationForkPoint names the conversation a fork reads its messages
// up to At (a position, included) from.
type ConversationForkPoint struct {
	ID string `json:"id"`
	At int64  `json:"at"`
}

// Conversations is the conversation-persistence facet of a Store: session
// data, an append-only message history, and per-conversation artifacts,
// trace events, run records and verification reports. Deleting a
// conversation deletes all of them in the same transaction. Every method is
// safe for concurrent use, also by several processes sharing one database.
// A missing conversation is ErrNotFound.
//
// Write methods are named by one rule (see the package documentation):
// Append adds rows after the stored ones, Put inserts or replaces rows by
// their key, Save replaces the whole set.
type Conversations interface {
	ConversationBranches
	// Save inserts or replaces the whole conversation, messages and cost
	// records included, in one transaction, and returns the new version.
	// Messages are renumbered from 0. Artifacts, traces, runs and reports
	// are kept. A non-zero c.Version makes the save conditional.
	Save(ctx context.Context, c Conversation) (version int64, err error)
	// Load returns the whole conversation, messages included, as one
	// consistent snapshot.
	Load(ctx context.Context, id string) (Conversation, error)
	// Info returns the conversation's metadata without loading messages.
	Info(ctx context.Context, id string) (ConversationSummary, error)
	// Delete removes the conversation with its messages, cost records,
	// artifacts, trace events, run records and reports, in one transaction.
	Delete(ctx context.Context, id string) error
	// Exists reports whether the conversation exists.
	Exists(ctx context.Context, id string) (bool, error)
	// List returns a page of conversation summaries ordered by id. It never
	// reads messages.
	List(ctx context.Context, f ConversationFilter) (Page[ConversationSummary], error)

	// AppendMessages appends messages (see Append).
	AppendMessages(ctx context.Context, id string, msgs ...Message) (AppendResult, error)
	// Append appends messages, usage and cost records in one transaction.
	Append(ctx context.Context, req AppendRequest) (AppendResult, error)
	// Messages returns up to limit messages with Seq >= from, oldest first
	// (limit 0 means DefaultPageSize; at most MaxMessagePage).
	Messages(ctx context.Context, id string, from int64, limit int) ([]Message, error)
	// MessagesBefore returns the last limit messages with Seq < before,
	// oldest first: the cursor for paging backwards (pass the Seq of the
	// first message of a page to get the page before it).
	MessagesBefore(ctx context.Context, id string, before int64, limit int) ([]Message, error)
	// LastMessages returns the last n messages, oldest first.
	LastMessages(ctx context.Context, id string, n int) ([]Message, error)
	// MessageCount returns the number of stored messages.
	MessageCount(ctx context.Context, id string) (int64, error)
	// PopMessage removes and returns the last message (undo); the next
	// append reuses its position. An empty history is ErrNotFound.
	PopMessage(ctx context.Context, id string) (Message, error)
	// TrimMessages keeps only the last keepLast messages of the
	// conversation and returns how many it removed. Positions of the kept
	// messages do not change (with keepLast 0 the history is emptied and
	// numbering starts again at 0). It does not change UpdatedAt.
	TrimMessages(ctx context.Context, id string, keepLast int) (removed int64, err error)
	// TrimAllMessages applies TrimMessages to every conversation with more
	// than keepLast messages, one conversation per transaction.
	TrimAllMessages(ctx context.Context, keepLast int) (TrimResult, error)
	// DeleteUpdatedBefore deletes conversations (with everything they own)
	// last updated strictly before t, oldest first, at most limit of them
	// (0 = all), and returns how many it deleted.
	DeleteUpdatedBefore(ctx context.Context, t time.Time, limit int) (int64, error)

	// PutArtifacts stores artifacts, replacing those with the same URI.
	PutArtifacts(ctx context.Context, id string, artifacts ...Artifact) error
	// Artifact returns the artifact with uri.
	Artifact(ctx context.Context, id, uri string) (Artifact, error)
	// Artifacts returns all artifacts of the conversation ordered by URI.
	Artifacts(ctx context.Context, id string) ([]Artifact, error)

	// AppendTraces appends trace events and returns the Seq of the first.
	AppendTraces(ctx context.Context, id string, events ...TraceEvent) (firstSeq int64, err error)
	// SaveTraces replaces all trace events of the conversation.
	SaveTraces(ctx context.Context, id string, events []TraceEvent) error
	// Traces returns up to limit trace events with Seq >= from, oldest
	// first; limit 0 returns all.
	Traces(ctx context.Context, id string, from int64, limit int) ([]TraceEvent, error)

	// PutRuns inserts or replaces run records by run id, in one
	// transaction: a record whose id is stored replaces that run's
	// snapshot and all of its events; runs not named are kept.
	PutRuns(ctx context.Context, id string, runs ...RunRecord) error
	// AppendRunEvents appends events to a run, numbering them after its
	// last event, and advances the snapshot's event count and update time.
	AppendRunEvents(ctx context.Context, id, runID string, events ...RunEvent) (firstSeq int64, err error)
	// Run returns one run record with its events.
	Run(ctx context.Context, id, runID string) (RunRecord, error)
	// Runs returns every run record of the conversation with its events,
	// ordered by creation time and id.
	Runs(ctx context.Context, id string) ([]RunRecord, error)

	// AppendReports appends verification reports after the stored ones,
	// in one transaction; stored reports are never changed.
	AppendReports(ctx context.Context, id string, reports ...VerificationReport) error
	// SaveReports replaces all verification reports of the conversation.
	SaveReports(ctx context.Context, id string, reports []VerificationReport) error
	// Reports returns the conversation's verification reports, oldest first.
	Reports(ctx context.Context, id string) ([]VerificationReport, error)
}

// NormalizeConversation validates c for Save, applies the defaults and
// truncates times to millisecond precision. It returns the normalized
// conversation and the stored form of each message's content. The error is
// an *InvalidInputError naming the field.
func NormalizeConversation(c Conversation) (Conversation, [][]byte, error) {
	if err := ValidateID("id", c.ID); err != nil {
		return c, nil, err
	}
	if c.Version < 0 {
		return c, nil, Invalid("version", "must not be negative")
	}
	if c.State == "" {
		c.State = StateUnknown
	}
	if !c.State.Valid() {
		return c, nil, Invalid("state", "unknown state")
	}
	cfg, err := normalizeConfig(c.Config)
	if err != nil {
		return c, nil, err
	}
	c.Config = cfg
	if c.ParentID != "" {
		if err := ValidateID("parent_id", c.ParentID); err != nil {
			return c, nil, err
		}
	}
	if err := checkText("model_name", c.ModelName); err != nil {
		return c, nil, err
	}
	if c.ContextUsage.MaxTokens == 0 {
		c.ContextUsage.MaxTokens = DefaultMaxContextTokens
	}
	if err := validateContextUsage("context_usage", c.ContextUsage); err != nil {
		return c, nil, err
	}
	if err := validateUsage("total_usage", c.TotalUsage); err != nil {
		return c, nil, err
	}
	if err := checkAmount("total_cost", c.TotalCost); err != nil {
		return c, nil, err
	}
	if c.ThinkingBudget != nil && *c.ThinkingBudget < 0 {
		return c, nil, Invalid("thinking_budget", "must not be negative")
	}
	if len(c.ToolNames) > MaxListItems {
		return c, nil, Invalid("tool_names", "too many entries")
	}
	for _, t := range c.ToolNames {
		if err := checkShort("tool_names", t); err != nil {
			return c, nil, err
		}
	}
	if c.ToolNames == nil {
		c.ToolNames = []string{}
	}
	if c.LLMConfig != nil {
		for f, v := range map[string]string{"llm_config.provider": c.LLMConfig.Provider, "llm_config.model": c.LLMConfig.Model, "llm_config.base_url": c.LLMConfig.BaseURL} {
			if err := checkText(f, v); err != nil {
				return c, nil, err
			}
		}
		// Never carry the key further than validation.
		l := *c.LLMConfig
		l.APIKey = ""
		c.LLMConfig = &l
	}
	if err := validateTasks(c.Tasks); err != nil {
		return c, nil, err
	}
	if c.Tasks == nil {
		c.Tasks = []Task{}
	}
	if err := ValidateCostRecords("cost_records", c.CostRecords); err != nil {
		return c, nil, err
	}
	c.CostRecords = normalizeCostRecords(c.CostRecords)
	if len(c.Messages) > MaxSaveMessages {
		return c, nil, Invalid("messages", "too many entries")
	}
	contents := make([][]byte, len(c.Messages))
	msgs := make([]Message, len(c.Messages))
	for i := range c.Messages {
		m := c.Messages[i]
		b, err := ValidateMessage(fmt.Sprintf("messages[%d]", i), &m)
		if err != nil {
			return c, nil, err
		}
		if r := m.Compaction; r != nil {
			// Save and import replace the whole history: the records they
			// are given (a Load's) stay records when their range precedes
			// them (the store checks the positions).
			if r.From < 0 || r.To < r.From {
				return c, nil, Invalid(fmt.Sprintf("messages[%d].compaction", i), "must cover positions 0 <= from <= to")
			}
			cr := *r
			m.Compaction = &cr
		}
		m.Seq = int64(i)
		m.CreatedAt = truncMS(m.CreatedAt)
		contents[i] = b
		msgs[i] = m
	}
	c.Messages = msgs
	c.MessageCount = int64(len(msgs))
	c.CreatedAt = truncMS(c.CreatedAt)
	c.UpdatedAt = truncMS(c.UpdatedAt)
	return c, contents, nil
}

func normalizeConfig(cfg ConversationConfig) (ConversationConfig, error) {
	for f, v := range map[string]string{"config.name": cfg.Name, "config.workspace": cfg.Workspace, "config.system_prompt": cfg.SystemPrompt} {
		if err := checkText(f, v); err != nil {
			return cfg, err
		}
	}
	if cfg.ParentID != "" {
		if err := ValidateID("config.parent_id", cfg.ParentID); err != nil {
			return cfg, err
		}
	}
	if cfg.MaxContextLength < 0 || cfg.MaxContextLength > math.MaxUint32 {
		return cfg, Invalid("config.max_context_length", "out of range")
	}
	if cfg.AutoCompactThreshold == 0 {
		cfg.AutoCompactThreshold = DefaultAutoCompactThreshold
	}
	if math.IsNaN(cfg.AutoCompactThreshold) || cfg.AutoCompactThreshold < 0 || cfg.AutoCompactThreshold > 1 {
		return cfg, Invalid("config.auto_compact_threshold", "must be between 0 and 1")
	}
	switch cfg.StorageType {
	case "":
		cfg.StorageType = StorageFile
	case StorageMemory, StorageFile, StorageCustom:
	default:
		return cfg, Invalid("config.storage_type", "unknown storage type")
	}
	switch cfg.PlanningMode {
	case "":
		cfg.PlanningMode = PlanningAuto
	case PlanningAuto, PlanningEnabled, PlanningDisabled:
	default:
		return cfg, Invalid("config.planning_mode", "unknown planning mode")
	}
	for _, d := range []struct {
		name string
		v    *json.RawMessage
	}{
		{"config.queue_config", &cfg.QueueConfig},
		{"config.confirmation_policy", &cfg.ConfirmationPolicy},
		{"config.permission_policy", &cfg.PermissionPolicy},
		{"config.security_config", &cfg.SecurityConfig},
	} {
		doc, err := NormalizeDocument(d.name, *d.v)
		if err != nil {
			return cfg, err
		}
		*d.v = doc
	}
	return cfg, nil
}

// NormalizeDocument validates an opaque JSON value and returns it
// compacted; nil and JSON null both become nil.
func NormalizeDocument(field string, doc json.RawMessage) (json.RawMessage, error) {
	if doc == nil {
		return nil, nil
	}
	if len(doc) > MaxDocumentBytes {
		return nil, Invalid(field, "too large")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, doc); err != nil {
		return nil, Invalid(field, "is not valid JSON")
	}
	if buf.String() == "null" {
		return nil, nil
	}
	return json.RawMessage(jsontext.PlainHTMLChars(buf.Bytes())), nil
}

func validateContextUsage(field string, u ContextUsage) error {
	if u.UsedTokens < 0 || u.MaxTokens < 0 || u.Turns < 0 {
		return Invalid(field, "counters must not be negative")
	}
	if math.IsNaN(u.Percent) || math.IsInf(u.Percent, 0) || u.Percent < 0 {
		return Invalid(field+".percent", "must be a finite number >= 0")
	}
	return nil
}

func validateUsage(field string, u TokenUsage) error {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < 0 ||
		(u.CacheReadTokens != nil && *u.CacheReadTokens < 0) || (u.CacheWriteTokens != nil && *u.CacheWriteTokens < 0) {
		return Invalid(field, "counters must not be negative")
	}
	return nil
}

// checkAmount accepts a finite, non-negative amount of money.
func checkAmount(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return Invalid(field, "must be a finite number >= 0")
	}
	return nil
}

// checkText accepts free text: valid UTF-8 without NUL, at most
// MaxTextBytes.
func checkText(field, s string) error {
	if len(s) > MaxTextBytes {
		return Invalid(field, "too long")
	}
	if !validText(s) {
		return Invalid(field, "must be valid UTF-8 without NUL")
	}
	return nil
}

// MaxNameLength bounds short names: tool names in a conversation, artifact
// URIs, run ids, trace kinds (bytes).
const MaxNameLength = 1024

// checkShort accepts a short non-empty name (a tool name, a URI, a kind): 1
// to MaxNameLength bytes of valid UTF-8 without control characters.
func checkShort(field, s string) error {
	switch {
	case s == "":
		return Invalid(field, "must not be empty")
	case len(s) > MaxNameLength:
		return Invalid(field, "too long")
	case !utf8.ValidString(s):
		return Invalid(field, "must be valid UTF-8")
	case strings.ContainsFunc(s, isControl):
		return Invalid(field, "must not contain control characters")
	}
	return nil
}

func validateTasks(tasks []Task) error {
	if len(tasks) > MaxListItems {
		return Invalid("tasks", "too many entries")
	}
	for i, t := range tasks {
		f := fmt.Sprintf("tasks[%d]", i)
		if err := checkText(f+".id", t.ID); err != nil {
			return err
		}
		for name, v := range map[string]string{".content": t.Content, ".status": t.Status, ".priority": t.Priority, ".tool": t.Tool, ".success_criteria": t.SuccessCriteria} {
			if err := checkText(f+name, v); err != nil {
				return err
			}
		}
		if len(t.Dependencies) > MaxListItems {
			return Invalid(f+".dependencies", "too many entries")
		}
		for _, d := range t.Dependencies {
			if err := checkText(f+".dependencies", d); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidateCostRecords checks cost records to be written.
func ValidateCostRecords(field string, recs []CostRecord) error {
	if len(recs) > MaxSaveMessages {
		return Invalid(field, "too many entries")
	}
	for i, r := range recs {
		f := fmt.Sprintf("%s[%d]", field, i)
		for name, v := range map[string]string{".model": r.Model, ".provider": r.Provider, ".session_id": r.SessionID} {
			if err := checkText(f+name, v); err != nil {
				return err
			}
		}
		if r.PromptTokens < 0 || r.CompletionTokens < 0 || r.TotalTokens < 0 {
			return Invalid(f, "counters must not be negative")
		}
		if r.CostUSD != nil {
			if err := checkAmount(f+".cost_usd", *r.CostUSD); err != nil {
				return err
			}
		}
	}
	return nil
}

func normalizeCostRecords(recs []CostRecord) []CostRecord {
	out := make([]CostRecord, len(recs))
	for i, r := range recs {
		r.Timestamp = truncMS(r.Timestamp)
		out[i] = r
	}
	return out
}

// Validate checks an append request and returns the stored form of
// each message's content.
func (r *AppendRequest) Validate() ([][]byte, error) {
	if err := ValidateID("id", r.ID); err != nil {
		return nil, err
	}
	if len(r.Messages) > MaxAppendMessages {
		return nil, Invalid("messages", "too many entries")
	}
	if r.ExpectVersion < 0 {
		return nil, Invalid("expect_version", "must not be negative")
	}
	if r.Usage != nil {
		if err := validateUsage("usage", *r.Usage); err != nil {
			return nil, err
		}
	}
	if r.ContextUsage != nil {
		if err := validateContextUsage("context_usage", *r.ContextUsage); err != nil {
			return nil, err
		}
	}
	if err := checkAmount("cost", r.Cost); err != nil {
		return nil, err
	}
	if len(r.CostRecords) > MaxAppendMessages {
		return nil, Invalid("cost_records", "too many entries")
	}
	if err := ValidateCostRecords("cost_records", r.CostRecords); err != nil {
		return nil, err
	}
	contents := make([][]byte, len(r.Messages))
	for i := range r.Messages {
		b, err := ValidateMessage(fmt.Sprintf("messages[%d]", i), &r.Messages[i])
		if err != nil {
			return nil, err
		}
		if r.Messages[i].Compaction != nil {
			return nil, Invalid(fmt.Sprintf("messages[%d].compaction", i), "only Compact writes compaction records")
		}
		contents[i] = b
	}
	return contents, nil
}

// truncMS truncates t to the stored precision (UTC milliseconds); the zero
// time stays zero.
func truncMS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return inMillis(t)
}
