package store

import (
	"context"
	"time"
)

// Lineage of conversations. A fork is a new conversation that reads its
// messages up to the fork point from the conversation it was forked from
// (its lineage parent) and appends its own after it: forking copies no
// messages. Lineage is not Conversation.ParentID (nor Config.ParentID),
// which is data the caller keeps and List filters on.

// ConversationForkRequest forks a conversation.
type ConversationForkRequest struct {
	// ID names the conversation forked.
	ID string
	// At is the position of the last message the fork holds: it holds the
	// messages of ID up to and including At, and its next append gets
	// At+1. It must be a message of ID's history.
	At int64
	// NewID is the fork's id; it must not exist. Empty generates a random
	// id.
	NewID string
}

// Validate checks the shape of r.
func (r ConversationForkRequest) Validate() error {
	if err := ValidateID("id", r.ID); err != nil {
		return err
	}
	if r.At < 0 {
		return Invalid("at", "must not be negative")
	}
	if r.NewID != "" {
		return ValidateID("new_id", r.NewID)
	}
	return nil
}

// ConversationRewindRequest rewinds a conversation to an earlier message.
type ConversationRewindRequest struct {
	ID string
	// To is the position of the last message that stays: the messages
	// after it are superseded (kept, readable with Superseded) and the
	// next append gets To+1. -1 supersedes every message. To at or past
	// the last message changes nothing.
	To int64
	// ExpectVersion, when positive, makes the rewind conditional like
	// AppendRequest.ExpectVersion.
	ExpectVersion int64
}

// Validate checks the shape of r.
func (r ConversationRewindRequest) Validate() error {
	if err := ValidateID("id", r.ID); err != nil {
		return err
	}
	if r.To < -1 {
		return Invalid("to", "must be -1 or a position")
	}
	if r.ExpectVersion < 0 {
		return Invalid("expect_version", "must not be negative")
	}
	return nil
}

// ConversationCompactRequest appends a compaction record: a summary
// message covering the positions Range.From..Range.To of the
// conversation's history. The originals stay; messages appended after
// Range.To, also while the summary was being written, stay after the
// range.
type ConversationCompactRequest struct {
	ID string
	// Range is the positions summarised; both must be messages of the
	// conversation's history when the record is appended.
	Range CompactionRange
	// Summary is the record (role and content as for Append; its
	// Compaction field must be nil: the store sets it from Range).
	Summary Message
	// ExpectVersion, when positive, makes the append conditional.
	ExpectVersion int64
}

// Validate checks the shape of r and returns the summary's stored
// content.
func (r *ConversationCompactRequest) Validate() ([]byte, error) {
	if err := ValidateID("id", r.ID); err != nil {
		return nil, err
	}
	if r.Range.From < 0 || r.Range.To < r.Range.From {
		return nil, Invalid("range", "must be positions 0 <= from <= to")
	}
	if r.Summary.Compaction != nil {
		return nil, Invalid("summary.compaction", "is set by the store")
	}
	if r.ExpectVersion < 0 {
		return nil, Invalid("expect_version", "must not be negative")
	}
	return ValidateMessage("summary", &r.Summary)
}

// SummaryTail is the read "latest summary and what follows it".
type SummaryTail struct {
	// Summary is the latest compaction record of the history; nil when it
	// has none.
	Summary *Message `json:"summary,omitempty"`
	// Messages are the messages after the summary's range (the summary
	// itself left out), oldest first; with no summary, the history from
	// its start. At most the limit asked for.
	Messages []Message `json:"messages"`
}

// SupersededMessages is a run of messages a rewind superseded.
type SupersededMessages struct {
	// RewoundAt is when the rewind happened.
	RewoundAt time.Time `json:"rewound_at"`
	// Messages are the superseded messages, at the positions they had.
	Messages []Message `json:"messages"`
}

// ConversationNode is one node of a conversation's lineage tree
// (ConversationBranches.History).
type ConversationNode struct {
	// ID is the conversation id of a live node; retired nodes (NodeDeleted,
	// NodeSuperseded) have an opaque id no conversation call accepts.
	ID string `json:"id"`
	// Parent is the node this one reads its messages below ForkNext from;
	// empty for a root.
	Parent   string `json:"parent,omitempty"`
	ForkNext int64  `json:"fork_next"`
	Status   string `json:"status"`
	// SupersededOf is the conversation a superseded node was taken from.
	SupersededOf string `json:"superseded_of,omitempty"`
	// Messages is the length of a live node's history (inherited
	// messages included); for retired nodes, the number of messages the
	// node holds itself.
	Messages  int64     `json:"messages"`
	CreatedAt time.Time `json:"created_at"`
	// Compactions are the ranges the node's own compaction records
	// summarise, keyed by the record's position.
	Compactions map[int64]CompactionRange `json:"compactions,omitempty"`
	// Current is true for the conversation History was asked for.
	Current bool `json:"current,omitempty"`
}

// ConversationBranches is the part of Conversations that treats a
// conversation's history as a tree. Every read of messages (Messages,
// MessagesBefore, LastMessages, MessageCount, Load, the change feed)
// sees a fork's inherited messages; every rewrite (Save, TrimMessages,
// PopMessage, Delete, retention) keeps what forks read.
type ConversationBranches interface {
	// Fork creates a conversation holding id's messages up to req.At, in
	// time independent of the history's length. It copies the session
	// data (config, state, model, tools, tasks, LLM config, context usage,
	// parent id), which the store does not keep per message, as it is
	// now; usage, cost and cost records start empty, and artifacts,
	// traces, runs and reports stay with the original. Appends to the
	// fork never reach the conversation forked, and the reverse.
	Fork(ctx context.Context, req ConversationForkRequest) (ConversationSummary, error)
	// Rewind supersedes the messages after req.To. Session data is not
	// kept per message and is left as it is. Forks taken earlier keep
	// reading what they read.
	Rewind(ctx context.Context, req ConversationRewindRequest) (ConversationSummary, error)
	// Compact appends a compaction record atomically. Only this call
	// writes one: an Append whose content looks like a summary is an
	// ordinary message.
	Compact(ctx context.Context, req ConversationCompactRequest) (AppendResult, error)
	// SummaryTail reads the latest compaction record and up to limit
	// messages after its range (limit as for Messages).
	SummaryTail(ctx context.Context, id string, limit int) (SummaryTail, error)
	// Superseded returns the runs of messages rewinds of id superseded,
	// oldest rewind first.
	Superseded(ctx context.Context, id string) ([]SupersededMessages, error)
	// History returns the tree id belongs to, depth first: each node is
	// followed by its subtree (its live forks by id, then its retired
	// children by creation), so that the list drawn by depth puts every
	// node under its parent.
	History(ctx context.Context, id string) ([]ConversationNode, error)
}
