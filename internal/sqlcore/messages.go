package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

const (
	// convAppendGetSQL reads what an append updates, by primary key.
	convAppendGetSQL = `SELECT version, message_count, prompt_tokens, completion_tokens, total_tokens,
		cache_read_tokens, cache_write_tokens, total_cost, context_used_tokens, context_max_tokens,
		context_percent, context_turns, fork_next, first_seq, data_key FROM conversations WHERE id = ? AND tenant = ?`
	convAppendSetSQL = `UPDATE conversations SET version = ?, message_count = ?, updated_at_ms = ?,
		prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?,
		total_cost = ?, context_used_tokens = ?, context_max_tokens = ?, context_percent = ?, context_turns = ?
		WHERE id = ?`
	// convCountSQL adjusts the message count and version after a removal.
	convCountSQL = `UPDATE conversations SET version = version + 1, message_count = message_count - ?,
		updated_at_ms = CASE WHEN CAST(? AS INTEGER) = 1 THEN CAST(? AS BIGINT) ELSE updated_at_ms END WHERE id = ?`

	// msgLastSQL finds the last position through the (session_id, seq)
	// index: one index probe, whatever the length of the history.
	msgLastSQL       = `SELECT seq FROM conversation_messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1`
	msgLastRowSQL    = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? ORDER BY seq DESC LIMIT 1`
	msgRangeSQL      = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? AND seq >= ? ORDER BY seq LIMIT ?`
	msgBeforeSQL     = `SELECT ` + msgColumns + ` FROM conversation_messages WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	msgDeleteOneSQL  = `DELETE FROM conversation_messages WHERE session_id = ? AND seq = ?`
	msgDeleteHeadSQL = `DELETE FROM conversation_messages WHERE session_id = ? AND seq < ?`
	msgCountSQL      = `SELECT message_count FROM conversations WHERE id = ? AND tenant = ?`

	trimCandidatesSQL = `SELECT id FROM conversations WHERE tenant = ? AND message_count > ? AND id > ? ORDER BY id LIMIT ?`
	// staleSQL picks the conversations to delete, oldest first, from the
	// (updated_at_ms, id) index; each is then deleted by primary key, so
	// the plan never depends on the table's statistics. The tenant is a
	// filter on that walk (tenant || '' keeps the planner off the
	// (tenant, id) index, whose rows it would have to sort).
	staleSQL = `SELECT id FROM conversations WHERE tenant || '' = ? AND updated_at_ms < ? ORDER BY updated_at_ms, id LIMIT ?`
)

// appendRow is what an append reads of the conversation.
type appendRow struct {
	Version           int64         `db:"version"`
	MessageCount      int64         `db:"message_count"`
	PromptTokens      int64         `db:"prompt_tokens"`
	CompletionTokens  int64         `db:"completion_tokens"`
	TotalTokens       int64         `db:"total_tokens"`
	CacheReadTokens   sql.NullInt64 `db:"cache_read_tokens"`
	CacheWriteTokens  sql.NullInt64 `db:"cache_write_tokens"`
	TotalCost         float64       `db:"total_cost"`
	ContextUsedTokens int64         `db:"context_used_tokens"`
	ContextMaxTokens  int64         `db:"context_max_tokens"`
	ContextPercent    float64       `db:"context_percent"`
	ContextTurns      int64         `db:"context_turns"`
	ForkNext          int64         `db:"fork_next"`
	FirstSeq          int64         `db:"first_seq"`
	DataKey           string        `db:"data_key"`
}

// AppendMessages appends messages (see store.Conversations.Append).
func (c *Conversations) AppendMessages(ctx context.Context, id string, msgs ...store.Message) (store.AppendResult, error) {
	return c.Append(ctx, store.AppendRequest{ID: id, Messages: msgs})
}

// Append inserts the new message and cost-record rows and updates the
// conversation's counters in one transaction. It never reads or rewrites
// the history: the next position comes from one probe of the
// (session_id, seq) index.
func (c *Conversations) Append(ctx context.Context, req store.AppendRequest) (store.AppendResult, error) {
	contents, err := req.Validate()
	if err != nil {
		return store.AppendResult{}, err
	}
	var out store.AppendResult
	err = c.s.write(ctx, func(tx Tx) error {
		var err error
		out, err = c.appendTx(tx, req, contents)
		return err
	})
	if err != nil {
		return store.AppendResult{}, err
	}
	return out, nil
}

// appendTx is Append inside the caller's write transaction, for a request
// that passed Validate (contents are its messages' stored contents).
func (c *Conversations) appendTx(tx Tx, req store.AppendRequest, contents [][]byte) (store.AppendResult, error) {
	var none store.AppendResult
	now := rowcodec.ToMillis(c.s.now())
	var row appendRow
	if err := tx.Get(&row, c.s.q.convAppendGet, req.ID, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return none, notFound(req.ID)
	} else if err != nil {
		return none, err
	}
	if req.ExpectVersion != 0 && row.Version != req.ExpectVersion {
		return none, &store.ConflictError{Resource: "conversation", ID: req.ID, Reason: "version changed"}
	}
	dk, err := c.s.dataKey(context.Background(), row.DataKey) // conv_crypt.go
	if err != nil {
		return none, err
	}
	next, err := nextPos(tx, req.ID, row.ForkNext, row.FirstSeq)
	if err != nil {
		return none, err
	}
	for i, m := range req.Messages {
		at := now
		if !m.CreatedAt.IsZero() {
			at = rowcodec.ToMillis(m.CreatedAt)
		}
		seq := next + int64(i)
		if _, err := tx.Exec(msgInsertSQL, req.ID, seq, m.Role, sealMsg(dk, contents[i], seq), at, nil, nil, c.s.tenant); err != nil {
			return none, err
		}
		if err := c.s.indexSealedMessage(tx, dk, req.ID, seq, m.Role, at, contents[i]); err != nil { // search_sealed.go
			return none, err
		}
	}
	if len(req.CostRecords) > 0 {
		first, err := nextSeq(tx, costLastSQL, req.ID)
		if err != nil {
			return none, err
		}
		if err := insertCostRecords(tx, req.ID, first, req.CostRecords, now, c.s.tenant); err != nil {
			return none, err
		}
	}
	u := (&convRow{PromptTokens: row.PromptTokens, CompletionTokens: row.CompletionTokens, TotalTokens: row.TotalTokens,
		CacheReadTokens: row.CacheReadTokens, CacheWriteTokens: row.CacheWriteTokens}).usage()
	if req.Usage != nil {
		u = u.Add(*req.Usage)
	}
	cu := store.ContextUsage{UsedTokens: row.ContextUsedTokens, MaxTokens: row.ContextMaxTokens,
		Percent: row.ContextPercent, Turns: row.ContextTurns}
	if req.ContextUsage != nil {
		cu = *req.ContextUsage
		if cu.MaxTokens == 0 {
			cu.MaxTokens = store.DefaultMaxContextTokens
		}
	}
	cost := row.TotalCost + req.Cost
	if math.IsInf(cost, 0) {
		return none, store.Invalid("cost", "total cost overflows")
	}
	count := row.MessageCount + int64(len(req.Messages))
	version := row.Version + 1
	if _, err := tx.Exec(convAppendSetSQL, version, count, now,
		u.PromptTokens, u.CompletionTokens, u.TotalTokens, nullInt(u.CacheReadTokens), nullInt(u.CacheWriteTokens),
		cost, cu.UsedTokens, cu.MaxTokens, cu.Percent, cu.Turns, req.ID); err != nil {
		return none, err
	}
	return store.AppendResult{FirstSeq: next, MessageCount: count, Version: version}, nil
}

// nextSeq returns one past the last sequence number query finds for id
// (0 when there is none).
func nextSeq(tx Tx, query, id string, args ...any) (int64, error) {
	var last int64
	err := tx.Get(&last, query, append([]any{id}, args...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return last + 1, nil
}

// pageLimit validates a ranged read's limit: 0 means the default page,
// larger values are capped at store.MaxMessagePage.
func pageLimit(limit int) (int, error) {
	if limit < 0 {
		return 0, store.Invalid("limit", "must not be negative")
	}
	if limit == 0 {
		return store.DefaultPageSize, nil
	}
	return min(limit, store.MaxMessagePage), nil
}

// Messages returns up to limit messages from position from on (see
// store.Conversations.Messages).
func (c *Conversations) Messages(ctx context.Context, id string, from int64, limit int) ([]store.Message, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	if from < 0 {
		return nil, store.Invalid("from", "must not be negative")
	}
	n, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	return c.viewRead(ctx, id, func(r Tx, v convView) ([]msgRow, error) {
		return c.readView(r, v, from, math.MaxInt64, n)
	})
}

// MessagesBefore returns the last limit messages before position before
// (see store.Conversations.MessagesBefore).
func (c *Conversations) MessagesBefore(ctx context.Context, id string, before int64, limit int) ([]store.Message, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	if before < 0 {
		return nil, store.Invalid("before", "must not be negative")
	}
	n, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	return c.viewRead(ctx, id, func(r Tx, v convView) ([]msgRow, error) {
		return c.readViewDesc(r, v, before, n)
	})
}

// LastMessages returns the last n messages (see
// store.Conversations.LastMessages).
func (c *Conversations) LastMessages(ctx context.Context, id string, n int) ([]store.Message, error) {
	if n < 0 {
		return nil, store.Invalid("n", "must not be negative")
	}
	if n == 0 {
		if err := store.ValidateID("id", id); err != nil {
			return nil, err
		}
		return []store.Message{}, c.mustExist(ctx, id)
	}
	return c.MessagesBefore(ctx, id, math.MaxInt64, n)
}

// viewRead runs read on the view of conversation id (its own messages
// and those it reads through its lineage) in one read transaction and
// decodes the page.
func (c *Conversations) viewRead(ctx context.Context, id string, read func(r Tx, v convView) ([]msgRow, error)) ([]store.Message, error) {
	var rows []msgRow
	err := c.s.readTx(ctx, func(r Tx) error {
		var l lineRow
		if err := r.Get(&l, convLineSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		var err error
		rows, err = read(r, l.view(id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return decodeMessages(id, rows)
}

// MessageCount returns the number of stored messages.
func (c *Conversations) MessageCount(ctx context.Context, id string) (int64, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, err
	}
	var n int64
	if err := c.s.get(ctx, &n, msgCountSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
		return 0, notFound(id)
	} else if err != nil {
		return 0, err
	}
	return n, nil
}

// PopMessage removes and returns the last message (see
// store.Conversations.PopMessage).
func (c *Conversations) PopMessage(ctx context.Context, id string) (store.Message, error) {
	if err := store.ValidateID("id", id); err != nil {
		return store.Message{}, err
	}
	var out store.Message
	err := c.s.write(ctx, func(tx Tx) error {
		b, first, next, err := c.branchOf(tx, id)
		if err != nil {
			return err
		}
		if next <= first {
			return &store.NotFoundError{Resource: "message", ID: id}
		}
		rows, err := c.readViewDesc(tx, b.view(id), next, 1)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return &store.NotFoundError{Resource: "message", ID: id}
		}
		m, err := rows[0].message(id)
		if err != nil {
			return err
		}
		// A message a fork reads goes to a retired history instead.
		if _, err := c.cutTail(tx, id, b.lineRow, rows[0].Seq, retiredDeleted, c.nowMS()); err != nil {
			return err
		}
		if _, err := tx.Exec(convCountSQL, 1, 1, rowcodec.ToMillis(c.s.now()), id); err != nil {
			return err
		}
		out = m
		return nil
	})
	if err == nil {
		c.shredDropped(ctx) // conv_crypt.go
	}
	return out, err
}

// TrimMessages keeps the last keepLast messages (see
// store.Conversations.TrimMessages).
func (c *Conversations) TrimMessages(ctx context.Context, id string, keepLast int) (int64, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, err
	}
	if keepLast < 0 {
		return 0, store.Invalid("keep_last", "must not be negative")
	}
	var removed int64
	err := c.s.write(ctx, func(tx Tx) error {
		if err := c.lockConv(tx, id); err != nil {
			return err
		}
		var err error
		removed, err = c.trimTx(tx, id, int64(keepLast))
		return err
	})
	if err != nil {
		return 0, err
	}
	if removed > 0 {
		c.shredDropped(ctx) // conv_crypt.go
	}
	return removed, nil
}

// trimTx keeps the last keepLast messages of conversation id, locked by
// the caller, and returns how many left its history. Messages a fork
// reads stay stored (the conversation's view starts after them); a
// conversation that no longer reads anything of its lineage parent
// leaves it.
func (c *Conversations) trimTx(tx Tx, id string, keepLast int64) (int64, error) {
	var l lineRow
	if err := tx.Get(&l, convLineSQL, id, c.s.tenant); err != nil {
		return 0, err
	}
	next, err := nextPos(tx, id, l.ForkNext, l.FirstSeq)
	if err != nil {
		return 0, err
	}
	cut := next - keepLast
	readers, err := hasReaders(tx, id, 0)
	if err != nil {
		return 0, err
	}
	if !l.LineageParent.Valid && !readers && l.FirstSeq == 0 {
		res, err := tx.Exec(msgDeleteHeadSQL, id, cut)
		if err != nil {
			return 0, err
		}
		removed, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		if removed > 0 {
			if _, err := tx.Exec(convCountSQL, removed, 0, 0, id); err != nil {
				return 0, err
			}
		}
		return removed, nil
	}
	var count int64
	if err := tx.Get(&count, msgCountSQL, id, c.s.tenant); err != nil {
		return 0, err
	}
	if count <= keepLast {
		return 0, nil
	}
	if _, err := tx.Exec(convFirstSeqSQL, cut, id); err != nil {
		return 0, err
	}
	if !readers {
		if _, err := tx.Exec(msgDeleteHeadSQL, id, cut); err != nil {
			return 0, err
		}
	}
	if l.LineageParent.Valid && cut >= l.ForkNext {
		if _, err := tx.Exec(convSetLineSQL, nil, l.ForkNext, id); err != nil {
			return 0, err
		}
		if err := c.prune(tx, l.LineageParent.String); err != nil {
			return 0, err
		}
	}
	removed := count - keepLast
	if _, err := tx.Exec(convCountSQL, removed, 0, 0, id); err != nil {
		return 0, err
	}
	return removed, nil
}

// TrimAllMessages trims every conversation with more than keepLast
// messages, one conversation per transaction (see
// store.Conversations.TrimAllMessages).
func (c *Conversations) TrimAllMessages(ctx context.Context, keepLast int) (store.TrimResult, error) {
	var res store.TrimResult
	if keepLast < 0 {
		return res, store.Invalid("keep_last", "must not be negative")
	}
	after := ""
	for {
		var ids []string
		if err := c.s.selectRows(ctx, &ids, trimCandidatesSQL, c.s.tenant, keepLast, after, store.DefaultPageSize); err != nil {
			return res, err
		}
		for _, id := range ids {
			n, err := c.TrimMessages(ctx, id, keepLast)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted meanwhile
			}
			if err != nil {
				return res, err
			}
			if n > 0 {
				res.Conversations++
				res.Removed += n
			}
		}
		if len(ids) < store.DefaultPageSize {
			return res, nil
		}
		after = ids[len(ids)-1]
	}
}

// DeleteUpdatedBefore deletes conversations not updated since t (see
// store.Conversations.DeleteUpdatedBefore).
func (c *Conversations) DeleteUpdatedBefore(ctx context.Context, t time.Time, limit int) (int64, error) {
	if t.IsZero() {
		return 0, store.Invalid("before", "must be set")
	}
	if limit < 0 {
		return 0, store.Invalid("limit", "must not be negative")
	}
	lim := c.s.limit(limit)
	var n int64
	err := c.s.write(ctx, func(tx Tx) error {
		var ids []string
		if err := tx.Select(&ids, staleSQL, c.s.tenant, rowcodec.ToMillis(t), lim); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := c.deleteTx(tx, id); err != nil {
				return err
			}
		}
		n = int64(len(ids))
		return nil
	})
	if err == nil && n > 0 {
		c.s.log.Info("deleted conversations not updated since", "before", t, "removed", n)
		c.s.shredAfter(ctx) // crypt.go: their data keys, unless forks read their rows
	}
	return n, err
}
