package store

import (
	"context"
	"encoding/json"
	"time"
)

// Lineage of agent sessions. A fork is a new session that reads its
// history up to the fork point from the session it was forked from (its
// lineage parent) and appends its own events after it: forking copies no
// events. Lineage is not the a3s conversation's Parent field, which is
// data the caller keeps on a conversation.

// CompactionRange is the range of positions a compaction record
// summarises, From to To inclusive.
type CompactionRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// ForkRequest forks an agent session.
type ForkRequest struct {
	// Key names the session forked.
	Key SessionKey
	// At is the fork point: the fork holds the events 1..At of Key's
	// history and its next append gets position At+1. 0 forks the
	// creation state with no events. It must not exceed the session's
	// event count.
	At int64
	// Session is the fork's session id, in the same application and user
	// as Key (the app and user state are shared as always). Empty
	// generates a random id.
	Session string
}

// Validate checks the shape of r.
func (r ForkRequest) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if r.At < 0 {
		return Invalid("at", "must not be negative")
	}
	if r.Session != "" {
		return ValidateID("session", r.Session)
	}
	return nil
}

// RewindRequest rewinds an agent session to an earlier position.
type RewindRequest struct {
	Key SessionKey
	// To is the position that stays: the events after it are superseded
	// (kept, readable with Superseded) and the session state returns to
	// what it was at To (0: the state the session was created with). To
	// equal to the event count changes nothing.
	To int64
	// ExpectedVersion, when positive, makes the rewind conditional like
	// AppendEventRequest.ExpectedVersion.
	ExpectedVersion int64
}

// Validate checks the shape of r.
func (r RewindRequest) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if r.To < 0 {
		return Invalid("to", "must not be negative")
	}
	if r.ExpectedVersion < 0 {
		return Invalid("expected_version", "must not be negative")
	}
	return nil
}

// CompactRequest appends a compaction record: a summary event that covers
// the positions From..To of the session's history. The originals stay;
// events appended after To, also while the summary was being written,
// stay after the range.
type CompactRequest struct {
	Key SessionKey
	// Range is the positions summarised: 1 <= From <= To <= the session's
	// event count when the record is appended.
	Range CompactionRange
	// Summary is the record's event (id, invocation id, timestamp and
	// data as for AppendEvent; its Compaction field must be nil: the
	// store sets it from Range).
	Summary AgentEvent
	// Delta is applied like AppendEventRequest.Delta.
	Delta ScopedState
}

// Validate checks the shape of r.
func (r CompactRequest) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if r.Range.From < 1 || r.Range.To < r.Range.From {
		return Invalid("range", "must be positions 1 <= from <= to")
	}
	if err := validateEvent(r.Summary); err != nil {
		return err
	}
	return r.Delta.Validate("delta")
}

// SupersededRun is a run of events a rewind superseded, in log order.
type SupersededRun struct {
	// RewoundAt is when the rewind happened.
	RewoundAt time.Time `json:"rewound_at"`
	// Events are the events the rewind took out of the history; their
	// positions are the ones they had.
	Events []AgentEvent `json:"events"`
}

// Lineage node statuses (LineageNode.Status).
const (
	// NodeLive is a session.
	NodeLive = "live"
	// NodeDeleted is a deleted session whose history is kept because
	// forks, or events a rewind superseded, still read from it.
	NodeDeleted = "deleted"
	// NodeSuperseded holds the events a rewind of a session superseded.
	NodeSuperseded = "superseded"
)

// LineageNode is one node of a session's tree (AgentBranches.History).
type LineageNode struct {
	// ID identifies the node within the database; it is opaque.
	ID int64 `json:"id"`
	// Parent is the ID of the node this one reads its history up to
	// ForkSeq from; 0 for a root.
	Parent  int64 `json:"parent,omitempty"`
	ForkSeq int64 `json:"fork_seq"`
	// Key is the session's key (for a superseded node, the key of the
	// session it was taken from).
	Key    SessionKey `json:"key"`
	Status string     `json:"status"`
	// SupersededOf is the ID of the session a superseded node was taken
	// from; 0 otherwise.
	SupersededOf int64 `json:"superseded_of,omitempty"`
	// EventCount is the length of the node's history (inherited events
	// included).
	EventCount int64     `json:"event_count"`
	CreatedAt  time.Time `json:"created_at"`
	// Compactions are the ranges the node's own compaction records
	// summarise, keyed by the record's position.
	Compactions map[int64]CompactionRange `json:"compactions,omitempty"`
	// Current is true for the node of the session History was asked for.
	Current bool `json:"current,omitempty"`
}

// AgentBranches is the part of AgentSessions that treats a session's
// history as a tree: fork, rewind, compaction records and the tree
// itself. Governed sessions are authority, not history: they have no
// branches, and a fork never copies or shares a budget.
type AgentBranches interface {
	// Fork creates a new session holding key's history up to req.At, in
	// time independent of the history's length, with the session state
	// as it was at that point (the creation state folded with the
	// session-scope deltas of the events up to it; forking at the end
	// copies the current session state). Appends to the fork never reach
	// the session forked, and the reverse.
	Fork(ctx context.Context, req ForkRequest) (AgentSession, error)
	// Rewind supersedes the events after req.To and restores the session
	// state at req.To. Forks taken earlier keep reading what they read.
	Rewind(ctx context.Context, req RewindRequest) (AgentSession, error)
	// Compact appends a compaction record atomically. Only this call
	// writes one: an AppendEvent whose data looks like a summary is an
	// ordinary event.
	Compact(ctx context.Context, req CompactRequest) (AppendEventResult, error)
	// Superseded returns the runs of events rewinds of key superseded,
	// oldest rewind first.
	Superseded(ctx context.Context, key SessionKey) ([]SupersededRun, error)
	// History returns the tree key belongs to, depth first: each node is
	// followed by its subtree (children oldest first), so that the list
	// drawn by depth puts every node under its parent.
	History(ctx context.Context, key SessionKey) ([]LineageNode, error)
}

// FoldState applies session-scope deltas, oldest first, to a copy of
// initial and returns it.
func FoldState(initial map[string]json.RawMessage, deltas ...map[string]json.RawMessage) map[string]json.RawMessage {
	out := cloneValues(initial)
	for _, d := range deltas {
		for k, v := range d {
			if out == nil {
				out = make(map[string]json.RawMessage, len(d))
			}
			out[k] = append(json.RawMessage(nil), v...)
		}
	}
	return out
}
