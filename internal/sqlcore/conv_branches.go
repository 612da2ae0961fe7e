package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// Fork, rewind and compaction records of conversations (see
// store.ConversationBranches); the lineage itself is in conv_lineage.go.

const (
	// convForkSQL inserts a fork: the forked conversation's session data,
	// new accounting, and its lineage. No message is copied.
	convForkSQL = `INSERT INTO conversations (id, version, name, workspace, system_prompt, max_context_length, auto_compact,
		auto_compact_threshold, storage_type, queue_config, confirmation_policy, permission_policy,
		config_parent_id, security_config, planning_mode, goal_tracking, state,
		context_used_tokens, context_max_tokens, context_percent, context_turns,
		prompt_tokens, completion_tokens, total_tokens, cache_read_tokens, cache_write_tokens,
		total_cost, model_name, tool_names, thinking_enabled, thinking_budget, llm_config, tasks,
		parent_id, message_count, created_at_ms, updated_at_ms, lineage_parent, fork_next, first_seq, tenant)
		SELECT ?, 1, name, workspace, system_prompt, max_context_length, auto_compact,
		auto_compact_threshold, storage_type, queue_config, confirmation_policy, permission_policy,
		config_parent_id, security_config, planning_mode, goal_tracking, state,
		context_used_tokens, context_max_tokens, context_percent, context_turns,
		0, 0, 0, NULL, NULL,
		0, model_name, tool_names, thinking_enabled, thinking_budget, llm_config, tasks,
		parent_id, ?, ?, ?, ?, ?, ?, tenant FROM conversations WHERE id = ?`

	// convBranchSQL reads what a rewind or a compaction checks.
	convBranchSQL = `SELECT version, message_count, ` + lineColumns + ` FROM conversations WHERE id = ? AND tenant = ?`

	msgMarkCompactionSQL = `UPDATE conversation_messages SET compact_from = ?, compact_to = ? WHERE session_id = ? AND seq = ?`

	retiredRunsSQL = `SELECT id, COALESCE(lineage_parent, '') AS lineage_parent, fork_next, superseded_from, created_at_ms, data_key
		FROM conversation_retired WHERE superseded_of = ? ORDER BY rewound_version`
	retiredRewoundSQL = `UPDATE conversation_retired SET rewound_version = ? WHERE id = ?`
	// convRewoundEpochSQL gives the messages stream a new epoch: the
	// positions after the rewind point will name other messages. The
	// message trigger (migration 7) does it only when the rewind deletes
	// the conversation's last row; a fork rewound below its fork point
	// deletes none of its own.
	convRewoundEpochSQL = `UPDATE conversations SET messages_epoch = ? WHERE id = ?`

	// The tree: a node's children in either table.
	convChildrenSQL = `SELECT id, fork_next, message_count, created_at_ms FROM conversations WHERE lineage_parent = ? ORDER BY id`
	retiredKidsSQL  = `SELECT id, kind, fork_next, COALESCE(superseded_of, '') AS superseded_of, created_at_ms
		FROM conversation_retired WHERE lineage_parent = ? ORDER BY created_at_ms, id`
	convNodeSQL    = `SELECT id, fork_next, message_count, created_at_ms FROM conversations WHERE id = ?`
	retiredNodeSQL = `SELECT id, kind, fork_next, COALESCE(superseded_of, '') AS superseded_of, created_at_ms
		FROM conversation_retired WHERE id = ?`
)

type branchRow struct {
	Version      int64 `db:"version"`
	MessageCount int64 `db:"message_count"`
	lineRow
}

// branchOf locks conversation id and reads its lineage, the position of
// its next message and the position of its first message (next when it
// has none).
func (c *Conversations) branchOf(tx Tx, id string) (b branchRow, first, next int64, err error) {
	if err = c.lockConv(tx, id); err != nil {
		return
	}
	if err = tx.Get(&b, convBranchSQL, id, c.s.tenant); err != nil {
		return
	}
	if next, err = nextPos(tx, id, b.ForkNext, b.FirstSeq); err != nil {
		return
	}
	rows, err := c.readView(tx, b.view(id), 0, next, 1)
	if err != nil {
		return
	}
	first = next
	if len(rows) > 0 {
		first = rows[0].Seq
	}
	return
}

// Fork creates a conversation that reads req.ID's messages up to req.At
// (see store.ConversationBranches.Fork).
func (c *Conversations) Fork(ctx context.Context, req store.ConversationForkRequest) (store.ConversationSummary, error) {
	if err := req.Validate(); err != nil {
		return store.ConversationSummary{}, err
	}
	if req.NewID == "" {
		req.NewID = uuid.NewString()
	}
	// A fork has a data key of its own (conv_crypt.go); it reads its
	// parent's rows with the parent's.
	dk, err := c.newConvKey(ctx)
	if err != nil {
		return store.ConversationSummary{}, err
	}
	var out summaryRow
	err = c.s.write(ctx, func(tx Tx) error {
		_, first, next, err := c.branchOf(tx, req.ID)
		if err != nil {
			return err
		}
		if req.At < first || req.At >= next {
			return store.Invalid("at", "is not a message of the conversation")
		}
		if err := c.s.lockKey(tx, lockClassConversation, req.NewID); err != nil {
			return err
		}
		var n int64
		if err := tx.Get(&n, convExistsSQL, req.NewID, c.s.tenant); err != nil {
			return err
		}
		if n > 0 {
			return &store.ConflictError{Resource: "conversation", ID: req.NewID, Reason: "already exists"}
		}
		now := c.nowMS()
		if _, err := tx.Exec(convForkSQL, req.NewID, req.At+1-first, now, now, req.ID, req.At+1, first, req.ID); err != nil {
			return c.takenOr(req.NewID, err)
		}
		if err := setConvKey(tx, req.NewID, dk); err != nil {
			return err
		}
		if err := c.resealFork(ctx, tx, req.ID, req.NewID, dk); err != nil { // conv_row_crypt.go
			return err
		}
		return tx.Get(&out, convInfoSQL, req.NewID, c.s.tenant)
	})
	if err != nil {
		c.s.discardKey(ctx, dk)
		return store.ConversationSummary{}, err
	}
	return out.summary(), nil
}

// Rewind supersedes the messages after req.To (see
// store.ConversationBranches.Rewind).
func (c *Conversations) Rewind(ctx context.Context, req store.ConversationRewindRequest) (store.ConversationSummary, error) {
	if err := req.Validate(); err != nil {
		return store.ConversationSummary{}, err
	}
	var out summaryRow
	err := c.s.write(ctx, func(tx Tx) error {
		b, first, next, err := c.branchOf(tx, req.ID)
		if err != nil {
			return err
		}
		if req.ExpectVersion != 0 && b.Version != req.ExpectVersion {
			return &store.ConflictError{Resource: "conversation", ID: req.ID, Reason: "version changed"}
		}
		s := req.To + 1
		if s < first {
			return store.Invalid("to", "is before the first message of the conversation")
		}
		if s > next {
			return store.Invalid("to", "is past the conversation's last message")
		}
		if s < next {
			now := c.nowMS()
			h, err := c.cutTail(tx, req.ID, b.lineRow, s, retiredSuperseded, now)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(retiredRewoundSQL, b.Version+1, h); err != nil {
				return err
			}
			if _, err := tx.Exec(convRewoundEpochSQL, newEpoch(), req.ID); err != nil {
				return err
			}
			// The next message gets position s, also when no earlier one
			// is left (the superseded run reads the positions below s).
			if first > b.FirstSeq {
				if _, err := tx.Exec(convFirstSeqSQL, first, req.ID); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(convCountSQL, next-s, 1, now, req.ID); err != nil {
				return err
			}
		}
		return tx.Get(&out, convInfoSQL, req.ID, c.s.tenant)
	})
	if err != nil {
		return store.ConversationSummary{}, err
	}
	return out.summary(), nil
}

// Compact appends a compaction record in one transaction with the check
// of its range (see store.ConversationBranches.Compact).
func (c *Conversations) Compact(ctx context.Context, req store.ConversationCompactRequest) (store.AppendResult, error) {
	content, err := req.Validate()
	if err != nil {
		return store.AppendResult{}, err
	}
	var out store.AppendResult
	err = c.s.write(ctx, func(tx Tx) error {
		_, first, next, err := c.branchOf(tx, req.ID)
		if err != nil {
			return err
		}
		if req.Range.From < first || req.Range.To >= next {
			return store.Invalid("range", "must be messages of the conversation")
		}
		out, err = c.appendTx(tx, store.AppendRequest{ID: req.ID, Messages: []store.Message{req.Summary},
			ExpectVersion: req.ExpectVersion}, [][]byte{content})
		if err != nil {
			return err
		}
		_, err = tx.Exec(msgMarkCompactionSQL, req.Range.From, req.Range.To, req.ID, out.FirstSeq)
		return err
	})
	if err != nil {
		return store.AppendResult{}, err
	}
	return out, nil
}

// SummaryTail reads the latest compaction record and what follows its
// range (see store.ConversationBranches.SummaryTail).
func (c *Conversations) SummaryTail(ctx context.Context, id string, limit int) (store.SummaryTail, error) {
	var out store.SummaryTail
	if err := store.ValidateID("id", id); err != nil {
		return out, err
	}
	n, err := pageLimit(limit)
	if err != nil {
		return out, err
	}
	var rows []msgRow
	var sum msgRow
	var found bool
	err = c.s.readTx(ctx, func(r Tx) error {
		var l lineRow
		if err := r.Get(&l, convLineSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		v := l.view(id)
		var err error
		if sum, found, err = c.latestSummary(r, v); err != nil {
			return err
		}
		from := int64(0)
		if found {
			from = sum.CompactTo.Int64 + 1
		}
		// One more than asked: the record itself is left out.
		rows, err = c.readView(r, v, from, math.MaxInt64, n+1)
		return err
	})
	if err != nil {
		return out, err
	}
	if found {
		m, err := sum.message(id)
		if err != nil {
			return out, err
		}
		out.Summary = &m
		rows = slicesDeleteSeq(rows, sum.Seq)
	}
	if len(rows) > n {
		rows = rows[:n]
	}
	if out.Messages, err = decodeMessages(id, rows); err != nil {
		return out, err
	}
	return out, nil
}

func slicesDeleteSeq(rows []msgRow, seq int64) []msgRow {
	for i := range rows {
		if rows[i].Seq == seq {
			return append(rows[:i:i], rows[i+1:]...)
		}
	}
	return rows
}

type supersededRow struct {
	ID             string `db:"id"`
	LineageParent  string `db:"lineage_parent"`
	ForkNext       int64  `db:"fork_next"`
	SupersededFrom int64  `db:"superseded_from"`
	CreatedAtMS    int64  `db:"created_at_ms"`
	DataKey        string `db:"data_key"`
}

// Superseded returns the runs of messages rewinds of id superseded (see
// store.ConversationBranches.Superseded).
func (c *Conversations) Superseded(ctx context.Context, id string) ([]store.SupersededMessages, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	out := []store.SupersededMessages{}
	err := c.s.readTx(ctx, func(r Tx) error {
		var n int64
		if err := r.Get(&n, convExistsSQL, id, c.s.tenant); err != nil {
			return err
		}
		if n == 0 {
			return notFound(id)
		}
		var runs []supersededRow
		if err := r.Select(&runs, retiredRunsSQL, id); err != nil {
			return err
		}
		for _, h := range runs {
			v := convView{id: h.ID, parent: h.LineageParent, forkNext: h.ForkNext, first: h.SupersededFrom, key: h.DataKey}
			rows, err := c.readView(r, v, h.SupersededFrom, math.MaxInt64, math.MaxInt32)
			if err != nil {
				return err
			}
			msgs, err := decodeMessages(id, rows)
			if err != nil {
				return err
			}
			out = append(out, store.SupersededMessages{RewoundAt: rowcodec.FromMillis(h.CreatedAtMS), Messages: msgs})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

type nodeRow struct {
	ID           string `db:"id"`
	Kind         int64  `db:"kind"`
	ForkNext     int64  `db:"fork_next"`
	MessageCount int64  `db:"message_count"`
	SupersededOf string `db:"superseded_of"`
	CreatedAtMS  int64  `db:"created_at_ms"`
}

// History returns the lineage tree conversation id belongs to, depth
// first (see store.ConversationBranches.History).
func (c *Conversations) History(ctx context.Context, id string) ([]store.ConversationNode, error) {
	if err := store.ValidateID("id", id); err != nil {
		return nil, err
	}
	var out []store.ConversationNode
	err := c.s.readTx(ctx, func(r Tx) error {
		var l lineRow
		if err := r.Get(&l, convLineSQL, id, c.s.tenant); errors.Is(err, sql.ErrNoRows) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		// Up to the root.
		root, parent := id, l.LineageParent.String
		for depth := 0; parent != ""; depth++ {
			if depth > maxLineageDepth {
				return errors.New("sqlcore: conversation lineage too deep")
			}
			root = parent
			q := convParentSQL
			if isRetired(parent) {
				q = retiredParentSQL
			}
			var next, kid string
			var fork int64
			if err := scanHot(r, q, []any{parent}, &next, &fork, &kid); err != nil {
				return err
			}
			parent = next
		}
		// Down, depth first: each node's subtree follows it, so that a
		// tree drawn by depth in this order puts every node under its
		// parent (breadth first put a node under its parent's sibling).
		// A node's children: its live forks (by id), then its retired
		// ones (by creation).
		top, err := c.node(r, root, "")
		if err != nil {
			return err
		}
		queue := []store.ConversationNode{}
		stack := []store.ConversationNode{top}
		for len(stack) > 0 {
			if len(queue) > maxLineageDepth {
				return errors.New("sqlcore: conversation tree too large")
			}
			cur := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			cur.Current = cur.ID == id
			if err := c.compactions(r, &cur); err != nil {
				return err
			}
			queue = append(queue, cur)
			var children []store.ConversationNode
			var kids []nodeRow
			if err := r.Select(&kids, convChildrenSQL, cur.ID); err != nil {
				return err
			}
			for _, k := range kids {
				children = append(children, store.ConversationNode{ID: k.ID, Parent: cur.ID, ForkNext: k.ForkNext,
					Status: store.NodeLive, Messages: k.MessageCount, CreatedAt: rowcodec.FromMillis(k.CreatedAtMS)})
			}
			kids = nil
			if err := r.Select(&kids, retiredKidsSQL, cur.ID); err != nil {
				return err
			}
			for _, k := range kids {
				n, err := retiredNode(r, k, cur.ID)
				if err != nil {
					return err
				}
				children = append(children, n)
			}
			for i := len(children) - 1; i >= 0; i-- { // the first child next
				stack = append(stack, children[i])
			}
		}
		out = queue
		return nil
	})
	return out, err
}

// node reads one node of the tree.
func (c *Conversations) node(r Tx, id, parent string) (store.ConversationNode, error) {
	var k nodeRow
	if isRetired(id) {
		if err := r.Get(&k, retiredNodeSQL, id); err != nil {
			return store.ConversationNode{}, err
		}
		return retiredNode(r, k, parent)
	}
	if err := r.Get(&k, convNodeSQL, id); err != nil {
		return store.ConversationNode{}, err
	}
	return store.ConversationNode{ID: k.ID, Parent: parent, ForkNext: k.ForkNext, Status: store.NodeLive,
		Messages: k.MessageCount, CreatedAt: rowcodec.FromMillis(k.CreatedAtMS)}, nil
}

func retiredNode(r Tx, k nodeRow, parent string) (store.ConversationNode, error) {
	n := store.ConversationNode{ID: k.ID, Parent: parent, ForkNext: k.ForkNext, Status: store.NodeDeleted,
		SupersededOf: k.SupersededOf, CreatedAt: rowcodec.FromMillis(k.CreatedAtMS)}
	if k.Kind == retiredSuperseded {
		n.Status = store.NodeSuperseded
	}
	if err := r.Get(&n.Messages, retiredMsgCountSQL, k.ID); err != nil {
		return n, err
	}
	return n, nil
}

// compactions fills the ranges of a node's own compaction records.
func (c *Conversations) compactions(r Tx, n *store.ConversationNode) error {
	q := msgCompactionsSQL
	if isRetired(n.ID) {
		q = heldCompactionsSQL
	}
	var rows []struct {
		Seq  int64 `db:"seq"`
		From int64 `db:"compact_from"`
		To   int64 `db:"compact_to"`
	}
	if err := r.Select(&rows, q, n.ID); err != nil {
		return err
	}
	for _, x := range rows {
		if n.Compactions == nil {
			n.Compactions = map[int64]store.CompactionRange{}
		}
		n.Compactions[x.Seq] = store.CompactionRange{From: x.From, To: x.To}
	}
	return nil
}
