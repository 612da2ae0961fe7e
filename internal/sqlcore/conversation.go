package sqlcore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/keys"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Conversations = (*Conversations)(nil)

// Conversations is the conversation-persistence facet of a Store (see
// store.Conversations). Obtain it with Store.Conversations.
type Conversations struct{ s *Store }

// Conversations returns the conversation-persistence facet.
func (s *Store) Conversations() store.Conversations { return &Conversations{s: s} }

const convColumns = `id, version, name, workspace, system_prompt, max_context_length, auto_compact,
	auto_compact_threshold, storage_type, queue_config, confirmation_policy, permission_policy,
	config_parent_id, security_config, planning_mode, goal_tracking, state,
	context_used_tokens, context_max_tokens, context_percent, context_turns,
	prompt_tokens, completion_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
	total_cost, model_name, tool_names, thinking_enabled, thinking_budget, llm_config, tasks,
	parent_id, message_count, created_at_ms, updated_at_ms`

// convGetColumns are convColumns and the row's lineage.
const convGetColumns = convColumns + `, ` + lineColumns + `, content_sealed`

// convRow is a conversations row as stored.
type convRow struct {
	ID                   string         `db:"id"`
	Version              int64          `db:"version"`
	Name                 string         `db:"name"`
	Workspace            string         `db:"workspace"`
	MaxContextLength     int64          `db:"max_context_length"`
	AutoCompact          bool           `db:"auto_compact"`
	AutoCompactThreshold float64        `db:"auto_compact_threshold"`
	StorageType          string         `db:"storage_type"`
	ConfigParentID       string         `db:"config_parent_id"`
	PlanningMode         string         `db:"planning_mode"`
	GoalTracking         bool           `db:"goal_tracking"`
	State                string         `db:"state"`
	ContextUsedTokens    int64          `db:"context_used_tokens"`
	ContextMaxTokens     int64          `db:"context_max_tokens"`
	ContextPercent       float64        `db:"context_percent"`
	ContextTurns         int64          `db:"context_turns"`
	PromptTokens         int64          `db:"prompt_tokens"`
	CompletionTokens     int64          `db:"completion_tokens"`
	TotalTokens          int64          `db:"total_tokens"`
	CacheReadTokens      sql.NullInt64  `db:"cache_read_tokens"`
	CacheWriteTokens     sql.NullInt64  `db:"cache_write_tokens"`
	TotalCost            float64        `db:"total_cost"`
	ModelName            string         `db:"model_name"`
	ToolNames            string         `db:"tool_names"`
	ThinkingEnabled      bool           `db:"thinking_enabled"`
	ThinkingBudget       sql.NullInt64  `db:"thinking_budget"`
	LLMConfig            sql.NullString `db:"llm_config"`
	ParentID             string         `db:"parent_id"`
	MessageCount         int64          `db:"message_count"`
	CreatedAtMS          int64          `db:"created_at_ms"`
	UpdatedAtMS          int64          `db:"updated_at_ms"`
	lineRow
	// The sealed columns of an encrypted conversation (conv_row_crypt.go).
	convContentCols
}

// corrupt reports a stored value of conversation id that does not decode.
func corrupt(id, what string, err error) error {
	return fmt.Errorf("%w: conversation %q: %s: %w", store.ErrCorrupt, id, what, err)
}

// conversation decodes the row (messages and cost records are read
// separately).
func (r *convRow) conversation() (store.Conversation, error) {
	c := store.Conversation{
		ID:      r.ID,
		Version: r.Version,
		Config: store.ConversationConfig{
			Name: r.Name, Workspace: r.Workspace, SystemPrompt: r.SystemPrompt,
			MaxContextLength: r.MaxContextLength, AutoCompact: r.AutoCompact,
			AutoCompactThreshold: r.AutoCompactThreshold, StorageType: r.StorageType,
			ParentID: r.ConfigParentID, PlanningMode: r.PlanningMode, GoalTracking: r.GoalTracking,
		},
		State:        store.ConversationState(r.State),
		MessageCount: r.MessageCount,
		ContextUsage: store.ContextUsage{
			UsedTokens: r.ContextUsedTokens, MaxTokens: r.ContextMaxTokens,
			Percent: r.ContextPercent, Turns: r.ContextTurns,
		},
		TotalUsage:      r.usage(),
		TotalCost:       r.TotalCost,
		ModelName:       r.ModelName,
		ThinkingEnabled: r.ThinkingEnabled,
		CreatedAt:       rowcodec.FromMillis(r.CreatedAtMS),
		UpdatedAt:       rowcodec.FromMillis(r.UpdatedAtMS),
		ParentID:        r.ParentID,
	}
	if r.ThinkingBudget.Valid {
		b := r.ThinkingBudget.Int64
		c.ThinkingBudget = &b
	}
	for _, d := range []struct {
		name string
		src  sql.NullString
		dst  *json.RawMessage
	}{
		{"queue_config", r.QueueConfig, &c.Config.QueueConfig},
		{"confirmation_policy", r.ConfirmationPolicy, &c.Config.ConfirmationPolicy},
		{"permission_policy", r.PermissionPolicy, &c.Config.PermissionPolicy},
		{"security_config", r.SecurityConfig, &c.Config.SecurityConfig},
	} {
		if !d.src.Valid {
			continue
		}
		if !json.Valid([]byte(d.src.String)) {
			return c, corrupt(r.ID, "column "+d.name, errors.New("invalid JSON"))
		}
		*d.dst = json.RawMessage(d.src.String)
	}
	if err := json.Unmarshal([]byte(r.ToolNames), &c.ToolNames); err != nil {
		return c, corrupt(r.ID, "column tool_names", err)
	}
	if c.ToolNames == nil {
		c.ToolNames = []string{}
	}
	if err := json.Unmarshal([]byte(r.Tasks), &c.Tasks); err != nil {
		return c, corrupt(r.ID, "column tasks", err)
	}
	if c.Tasks == nil {
		c.Tasks = []store.Task{}
	}
	if r.LLMConfig.Valid {
		var l store.LLMConfig
		if err := json.Unmarshal([]byte(r.LLMConfig.String), &l); err != nil {
			return c, corrupt(r.ID, "column llm_config", err)
		}
		c.LLMConfig = &l
	}
	return c, nil
}

func (r *convRow) usage() store.TokenUsage {
	u := store.TokenUsage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens}
	if r.CacheReadTokens.Valid {
		v := r.CacheReadTokens.Int64
		u.CacheReadTokens = &v
	}
	if r.CacheWriteTokens.Valid {
		v := r.CacheWriteTokens.Int64
		u.CacheWriteTokens = &v
	}
	return u
}

// summaryRow is the subset of a conversations row that List returns.
type summaryRow struct {
	ID               string        `db:"id"`
	Version          int64         `db:"version"`
	Name             string        `db:"name"`
	Workspace        string        `db:"workspace"`
	State            string        `db:"state"`
	ParentID         string        `db:"parent_id"`
	ModelName        string        `db:"model_name"`
	MessageCount     int64         `db:"message_count"`
	PromptTokens     int64         `db:"prompt_tokens"`
	CompletionTokens int64         `db:"completion_tokens"`
	TotalTokens      int64         `db:"total_tokens"`
	CacheReadTokens  sql.NullInt64 `db:"cache_read_tokens"`
	CacheWriteTokens sql.NullInt64 `db:"cache_write_tokens"`
	TotalCost        float64       `db:"total_cost"`
	CreatedAtMS      int64         `db:"created_at_ms"`
	UpdatedAtMS      int64         `db:"updated_at_ms"`
}

const summaryColumns = `id, version, name, workspace, state, parent_id, model_name, message_count,
	prompt_tokens, completion_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
	total_cost, created_at_ms, updated_at_ms`

func (r *summaryRow) summary() store.ConversationSummary {
	u := convRow{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.TotalTokens,
		CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens}
	return store.ConversationSummary{
		ID: r.ID, Version: r.Version, Name: r.Name, Workspace: r.Workspace,
		State: store.ConversationState(r.State), ParentID: r.ParentID, ModelName: r.ModelName,
		MessageCount: r.MessageCount, TotalUsage: u.usage(), TotalCost: r.TotalCost,
		CreatedAt: rowcodec.FromMillis(r.CreatedAtMS), UpdatedAt: rowcodec.FromMillis(r.UpdatedAtMS),
	}
}

const (
	// convUpsertSQL writes a whole conversation row. ON CONFLICT updates
	// the row in place: a REPLACE would delete it first and cascade to its
	// artifacts, traces, runs and reports. The row of another tenant under
	// the same id is left alone (the WHERE of the update): ids are global,
	// and Save reports the id as taken.
	convUpsertSQL = `INSERT INTO conversations (` + convColumns + `, tenant, content_sealed)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
		version = excluded.version, name = excluded.name, workspace = excluded.workspace,
		system_prompt = excluded.system_prompt, max_context_length = excluded.max_context_length,
		auto_compact = excluded.auto_compact, auto_compact_threshold = excluded.auto_compact_threshold,
		storage_type = excluded.storage_type, queue_config = excluded.queue_config,
		confirmation_policy = excluded.confirmation_policy, permission_policy = excluded.permission_policy,
		config_parent_id = excluded.config_parent_id, security_config = excluded.security_config,
		planning_mode = excluded.planning_mode, goal_tracking = excluded.goal_tracking, state = excluded.state,
		context_used_tokens = excluded.context_used_tokens, context_max_tokens = excluded.context_max_tokens,
		context_percent = excluded.context_percent, context_turns = excluded.context_turns,
		prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens,
		total_tokens = excluded.total_tokens, cache_read_tokens = excluded.cache_read_tokens,
		cache_write_tokens = excluded.cache_write_tokens, total_cost = excluded.total_cost,
		model_name = excluded.model_name, tool_names = excluded.tool_names,
		thinking_enabled = excluded.thinking_enabled, thinking_budget = excluded.thinking_budget,
		llm_config = excluded.llm_config, tasks = excluded.tasks, parent_id = excluded.parent_id,
		message_count = excluded.message_count, created_at_ms = excluded.created_at_ms,
		updated_at_ms = excluded.updated_at_ms, content_sealed = excluded.content_sealed
		WHERE conversations.tenant = excluded.tenant`

	// convVersionSQL reads the version of a conversation that is about
	// to be replaced (locking its row where the dialect locks rows).
	convVersionSQL = `SELECT version, created_at_ms, data_key FROM conversations WHERE id = ? AND tenant = ?`
	// convLockSQL reads the conversation's id: every write to a
	// conversation's records reads it first (locking the row where the
	// dialect locks rows), so writes of one conversation run one after the
	// other on every backend.
	convLockSQL   = `SELECT id FROM conversations WHERE id = ? AND tenant = ?`
	convGetSQL    = `SELECT ` + convGetColumns + ` FROM conversations WHERE id = ? AND tenant = ?`
	convInfoSQL   = `SELECT ` + summaryColumns + ` FROM conversations WHERE id = ? AND tenant = ?`
	convExistsSQL = `SELECT count(*) FROM conversations WHERE id = ? AND tenant = ?`
	convDeleteSQL = `DELETE FROM conversations WHERE id = ? AND tenant = ?`
	// convTouchSQL records a change of a conversation's records (artifacts,
	// traces, runs, reports): it bumps the version, as every change does,
	// so that a conditional Save or Append of another writer notices it,
	// and tells whether the conversation exists.
	convTouchSQL = `UPDATE conversations SET version = version + 1, updated_at_ms = ? WHERE id = ? AND tenant = ?`

	msgDeleteAllSQL  = `DELETE FROM conversation_messages WHERE session_id = ?`
	msgInsertSQL     = `INSERT INTO conversation_messages (session_id, seq, role, content, created_at_ms, compact_from, compact_to, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	msgAllSQL        = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? ORDER BY seq`
	costDeleteAllSQL = `DELETE FROM conversation_cost_records WHERE session_id = ?`
	costInsertSQL    = `INSERT INTO conversation_cost_records (session_id, seq, model, provider, prompt_tokens,
		completion_tokens, total_tokens, cost_usd, at_ms, record_session_id, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	costAllSQL = `SELECT seq, model, provider, prompt_tokens, completion_tokens, total_tokens, cost_usd, at_ms,
		record_session_id FROM conversation_cost_records WHERE session_id = ? ORDER BY seq`
	costLastSQL = `SELECT seq FROM conversation_cost_records WHERE session_id = ? ORDER BY seq DESC LIMIT 1`
)

type versionRow struct {
	Version     int64  `db:"version"`
	CreatedAtMS int64  `db:"created_at_ms"`
	DataKey     string `db:"data_key"`
}

func nullDoc(d json.RawMessage) any {
	if d == nil {
		return nil
	}
	return string(d)
}

func nullStr(s sql.NullString) any {
	if !s.Valid {
		return nil
	}
	return s.String
}

func nullInt(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func notFound(id string) error { return &store.NotFoundError{Resource: "session", ID: id} }

// idTaken is the conflict of a create whose conversation id another
// tenant holds: ids are global, so the id is taken, and the error tells no
// more than that.
func idTaken(id string) error {
	return &store.ConflictError{Resource: "conversation", ID: id, Reason: "id is taken"}
}

// takenOr maps the unique violation of an insert of conversation id (the
// row of another tenant, invisible to a store connected as a tenant role)
// to idTaken; other errors are returned as they are.
func (c *Conversations) takenOr(id string, err error) error {
	if c.s.isUnique(err) {
		return idTaken(id)
	}
	return err
}

// Save inserts or replaces a whole conversation (see
// store.Conversations.Save).
func (c *Conversations) Save(ctx context.Context, conv store.Conversation) (int64, error) {
	conv, contents, err := store.NormalizeConversation(conv)
	if err != nil {
		return 0, err
	}
	toolNames, err := json.Marshal(conv.ToolNames)
	if err != nil {
		return 0, store.Invalid("tool_names", "cannot be encoded as JSON")
	}
	tasks, err := json.Marshal(conv.Tasks)
	if err != nil {
		return 0, store.Invalid("tasks", "cannot be encoded as JSON")
	}
	var llm any
	if conv.LLMConfig != nil {
		// APIKey has no JSON name: it cannot reach the database.
		b, err := json.Marshal(conv.LLMConfig)
		if err != nil {
			return 0, store.Invalid("llm_config", "cannot be encoded as JSON")
		}
		llm = string(b)
	}
	for i, m := range conv.Messages {
		if m.Compaction != nil && m.Compaction.To >= int64(i) {
			return 0, store.Invalid(fmt.Sprintf("messages[%d].compaction", i), "must cover earlier positions")
		}
	}
	// A new conversation of an encrypting store gets a data key, made
	// before the transaction (a key file is written and synced); one
	// that exists keeps its own (conv_crypt.go).
	var newKey *keys.DataKey
	if c.s.Encrypted() {
		if ok, err := c.exists(ctx, conv.ID); err != nil {
			return 0, err
		} else if !ok {
			if newKey, err = c.newConvKey(ctx); err != nil {
				return 0, err
			}
		}
	}
	keyUsed := false
	var version int64
	err = c.s.write(ctx, func(tx Tx) error {
		keyUsed = false
		now := rowcodec.ToMillis(c.s.now())
		// Saves of one id serialize, also while the row does not exist
		// yet (a row lock needs a row).
		if err := c.s.lockKey(tx, lockClassConversation, conv.ID); err != nil {
			return err
		}
		var cur versionRow
		err := tx.Get(&cur, c.s.q.convVersion, conv.ID, c.s.tenant)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if conv.Version != 0 {
			if !exists {
				return &store.ConflictError{Resource: "conversation", ID: conv.ID, Reason: "conversation no longer exists"}
			}
			if cur.Version != conv.Version {
				return &store.ConflictError{Resource: "conversation", ID: conv.ID, Reason: "version changed"}
			}
		}
		v, created, updated := int64(1), now, now
		if exists {
			v, created = cur.Version+1, cur.CreatedAtMS
		}
		if !conv.CreatedAt.IsZero() {
			created = rowcodec.ToMillis(conv.CreatedAt)
		}
		if !conv.UpdatedAt.IsZero() {
			updated = rowcodec.ToMillis(conv.UpdatedAt)
		}
		// The key is known before the row is written: its content
		// columns are written sealed (conv_row_crypt.go).
		var dk *keys.DataKey
		if exists {
			if dk, err = c.s.dataKey(ctx, cur.DataKey); err != nil {
				return err
			}
		} else {
			if newKey == nil && c.s.Encrypted() {
				// Deleted since the check above: a key of its own now.
				if newKey, err = c.newConvKey(ctx); err != nil {
					return err
				}
			}
			dk = newKey
		}
		cfg, u := conv.Config, conv.TotalUsage
		cc := newContentCols(cfg, tasks)
		cc.seal(dk)
		res, err := tx.Exec(convUpsertSQL,
			conv.ID, v, cfg.Name, cfg.Workspace, cc.SystemPrompt, cfg.MaxContextLength, cfg.AutoCompact,
			cfg.AutoCompactThreshold, cfg.StorageType, nullStr(cc.QueueConfig), nullStr(cc.ConfirmationPolicy),
			nullStr(cc.PermissionPolicy), cfg.ParentID, nullStr(cc.SecurityConfig), cfg.PlanningMode,
			cfg.GoalTracking, string(conv.State),
			conv.ContextUsage.UsedTokens, conv.ContextUsage.MaxTokens, conv.ContextUsage.Percent, conv.ContextUsage.Turns,
			u.PromptTokens, u.CompletionTokens, u.TotalTokens, nullInt(u.CacheReadTokens), nullInt(u.CacheWriteTokens),
			conv.TotalCost, conv.ModelName, string(toolNames), conv.ThinkingEnabled, nullInt(conv.ThinkingBudget),
			llm, cc.Tasks, conv.ParentID, int64(len(conv.Messages)), created, updated, c.s.tenant, cc.ContentSealed,
		)
		if err != nil {
			return c.takenOr(conv.ID, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return idTaken(conv.ID)
		}
		if !exists {
			if err := setConvKey(tx, conv.ID, newKey); err != nil {
				return err
			}
			keyUsed = true
		}
		if exists {
			// Forks and superseded runs keep reading the history replaced
			// (conv_lineage.go).
			if err := c.detachHistory(tx, conv.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(msgDeleteAllSQL, conv.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(costDeleteAllSQL, conv.ID); err != nil {
				return err
			}
		}
		for i, m := range conv.Messages {
			at := now
			if !m.CreatedAt.IsZero() {
				at = rowcodec.ToMillis(m.CreatedAt)
			}
			from, to := compactArgs(m.Compaction)
			if _, err := tx.Exec(msgInsertSQL, conv.ID, int64(i), m.Role, sealMsg(dk, contents[i], int64(i)), at, from, to, c.s.tenant); err != nil {
				return err
			}
			if err := c.s.indexSealedMessage(tx, dk, conv.ID, int64(i), m.Role, at, contents[i]); err != nil { // search_sealed.go
				return err
			}
		}
		if err := insertCostRecords(tx, conv.ID, 0, conv.CostRecords, now, c.s.tenant); err != nil {
			return err
		}
		version = v
		return nil
	})
	if !keyUsed || err != nil {
		c.s.discardKey(ctx, newKey)
	}
	if err != nil {
		return 0, err
	}
	if !keyUsed {
		c.shredDropped(ctx) // conv_crypt.go: a replaced history may leave a retired parent
	}
	return version, nil
}

func insertCostRecords(tx Tx, id string, first int64, recs []store.CostRecord, now int64, tenant string) error {
	for i, r := range recs {
		at := now
		if !r.Timestamp.IsZero() {
			at = rowcodec.ToMillis(r.Timestamp)
		}
		var cost any
		if r.CostUSD != nil {
			cost = *r.CostUSD
		}
		if _, err := tx.Exec(costInsertSQL, id, first+int64(i), r.Model, r.Provider, r.PromptTokens,
			r.CompletionTokens, r.TotalTokens, cost, at, r.SessionID, tenant); err != nil {
			return err
		}
	}
	return nil
}

// msgRow is a conversation_messages row.
type msgRow struct {
	Seq         int64         `db:"seq"`
	Role        string        `db:"role"`
	Content     string        `db:"content"`
	CreatedAtMS int64         `db:"created_at_ms"`
	CompactFrom sql.NullInt64 `db:"compact_from"`
	CompactTo   sql.NullInt64 `db:"compact_to"`
	// plain is the opened content of a sealed row (conv_crypt.go).
	plain []byte
}

// body is the row's content as the caller wrote it.
func (r *msgRow) body() []byte {
	if r.plain != nil {
		return r.plain
	}
	return []byte(r.Content)
}

// msgColumns are the columns of a msgRow.
const msgColumns = `seq, role, content, created_at_ms, compact_from, compact_to`

func (r *msgRow) message(id string) (store.Message, error) {
	blocks, err := rowcodec.DecodeContent(r.body())
	if err != nil {
		return store.Message{}, corrupt(id, fmt.Sprintf("message %d", r.Seq), err)
	}
	m := store.Message{Seq: r.Seq, Role: r.Role, Content: blocks, CreatedAt: rowcodec.FromMillis(r.CreatedAtMS)}
	if r.CompactTo.Valid {
		m.Compaction = &store.CompactionRange{From: r.CompactFrom.Int64, To: r.CompactTo.Int64}
	}
	return m, nil
}

func decodeMessages(id string, rows []msgRow) ([]store.Message, error) {
	out := make([]store.Message, len(rows))
	for i := range rows {
		m, err := rows[i].message(id)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// costRow is a conversation_cost_records row.
type costRow struct {
	Seq              int64           `db:"seq"`
	Model            string          `db:"model"`
	Provider         string          `db:"provider"`
	PromptTokens     int64           `db:"prompt_tokens"`
	CompletionTokens int64           `db:"completion_tokens"`
	TotalTokens      int64           `db:"total_tokens"`
	CostUSD          sql.NullFloat64 `db:"cost_usd"`
	AtMS             int64           `db:"at_ms"`
	RecordSessionID  string          `db:"record_session_id"`
}

// Load returns the whole conversation as one snapshot (see
// store.Conversations.Load).
func (c *Conversations) Load(ctx context.Context, id string) (store.Conversation, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Conversation{}, err
	}
	var out store.Conversation
	err := c.s.readTx(ctx, func(r Tx) error {
		var row convRow
		if err := r.Get(&row, convGetSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		dk, err := c.s.dataKey(ctx, row.DataKey)
		if err != nil {
			return err
		}
		if err := row.convContentCols.open(dk); err != nil { // conv_row_crypt.go
			return err
		}
		conv, err := row.conversation()
		if err != nil {
			return err
		}
		if p := row.LineageParent.String; p != "" && !isRetired(p) {
			conv.ForkedFrom = &store.ConversationForkPoint{ID: p, At: row.ForkNext - 1}
		}
		conv.DataKeyID = row.DataKey // conv_crypt.go
		msgs, err := c.readView(r, row.lineRow.view(id), 0, math.MaxInt64, math.MaxInt32)
		if err != nil {
			return err
		}
		if conv.Messages, err = decodeMessages(id, msgs); err != nil {
			return err
		}
		var costs []costRow
		if err := r.Select(&costs, costAllSQL, id); err != nil {
			return err
		}
		conv.CostRecords = make([]store.CostRecord, len(costs))
		for i, cr := range costs {
			rec := store.CostRecord{Model: cr.Model, Provider: cr.Provider, PromptTokens: cr.PromptTokens,
				CompletionTokens: cr.CompletionTokens, TotalTokens: cr.TotalTokens,
				Timestamp: rowcodec.FromMillis(cr.AtMS), SessionID: cr.RecordSessionID}
			if cr.CostUSD.Valid {
				v := cr.CostUSD.Float64
				rec.CostUSD = &v
			}
			conv.CostRecords[i] = rec
		}
		out = conv
		return nil
	})
	if err == nil {
		c.s.recordRead(ctx, store.SessionRef{Facet: store.HoldConversations, ID: id}) // retention_reads.go
	}
	return out, err
}

// Info returns the conversation's metadata (see store.Conversations.Info).
func (c *Conversations) Info(ctx context.Context, id string) (store.ConversationSummary, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.ConversationSummary{}, err
	}
	var row summaryRow
	if err := c.s.get(ctx, &row, convInfoSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return store.ConversationSummary{}, notFound(id)
	} else if err != nil {
		return store.ConversationSummary{}, err
	}
	return row.summary(), nil
}

// Delete removes the conversation and everything it owns in one
// transaction (see store.Conversations.Delete).
func (c *Conversations) Delete(ctx context.Context, id string) error {
	if err := store.ValidateID("id", id); err != nil {
		return err
	}
	err := c.s.write(ctx, func(tx Tx) error {
		gone, err := c.deleteTx(tx, id)
		if err != nil {
			return err
		}
		if !gone {
			return notFound(id)
		}
		return nil
	})
	if err == nil {
		c.s.shredAfter(ctx) // crypt.go: its data key, unless a fork reads its rows
	}
	return err
}

// Exists reports whether the conversation exists.
func (c *Conversations) Exists(ctx context.Context, id string) (bool, error) {
	if err := store.ValidateID("id", id); err != nil {
		return false, err
	}
	return c.exists(ctx, id)
}

func (c *Conversations) exists(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := c.s.get(ctx, &n, convExistsSQL, id, c.s.tenant); err != nil {
		return false, err
	}
	return n > 0, nil
}

// mustExist returns nil when the conversation exists, its NotFoundError
// when it does not.
func (c *Conversations) mustExist(ctx context.Context, id string) error {
	ok, err := c.exists(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return notFound(id)
	}
	return nil
}

// touch marks a change of the conversation's records inside a write (a
// new version, the update time) and reports a missing conversation.
func (c *Conversations) touch(tx Tx, id string) error {
	res, err := tx.Exec(convTouchSQL, rowcodec.ToMillis(c.s.now()), id, c.s.tenant)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(id)
	}
	return nil
}

// List query variants: constant strings, each prepared once.
const (
	listBaseSQL    = `SELECT ` + summaryColumns + ` FROM conversations WHERE tenant = ? AND id > ?`
	listParentSQL  = ` AND parent_id = ?`
	listUpdatedSQL = ` AND updated_at_ms < ?`
	listTailSQL    = ` ORDER BY id LIMIT ?`
)

// List returns a page of conversation summaries ordered by id (see
// store.Conversations.List).
func (c *Conversations) List(ctx context.Context, f store.ConversationFilter) (store.Page[store.ConversationSummary], error) {
	f, err := f.Normalize()
	if err != nil {
		return store.Page[store.ConversationSummary]{}, err
	}
	query, args := listBaseSQL, []any{c.s.tenant, f.After}
	if f.ParentID != "" {
		query += listParentSQL
		args = append(args, f.ParentID)
	}
	if !f.UpdatedBefore.IsZero() {
		query += listUpdatedSQL
		args = append(args, rowcodec.ToMillis(f.UpdatedBefore))
	}
	query += listTailSQL
	args = append(args, f.Limit+1)
	var rows []summaryRow
	if err := c.s.selectRows(ctx, &rows, query, args...); err != nil {
		return store.Page[store.ConversationSummary]{}, err
	}
	page := store.Page[store.ConversationSummary]{Items: make([]store.ConversationSummary, 0, min(len(rows), f.Limit))}
	for i := range rows {
		if i == f.Limit {
			page.Next = page.Items[len(page.Items)-1].ID
			break
		}
		page.Items = append(page.Items, rows[i].summary())
	}
	return page, nil
}

// lockConv reads the conversation row for the rest of the transaction
// (locking it where the dialect locks rows) and reports a missing
// conversation.
func (c *Conversations) lockConv(tx Tx, id string) error {
	var got string
	err := tx.Get(&got, c.s.q.convLock, id, c.s.tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(id)
	}
	return err
}
