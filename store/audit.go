package store

import (
	"context"
	"encoding/json"
	"time"
)

// The audit trail: every governance decision (a create, each use or
// reservation allowed or refused, a settle, a release, a close, an expiry,
// a cleanup, a change of an agent's limits) is appended to the audit table
// in the same transaction as the decision itself, so that a decision and
// its record commit together or not at all.
//
// The trail is one hash chain per governed session, for the decisions on
// that session (its uses, reservations, settles, releases, close and
// expiry), plus one chain per agent for the agent's own decisions (its
// limits, its sessions' creation and removal, the lapses its sweeps
// release, checkpoints). Each event
// carries its chain's sequence number (1, 2, 3, ...) and the hash of the
// chain's previous event, and its own hash covers both and every field of
// the event. A decision on one session waits on no other session's chain,
// so an agent's sessions decide in parallel. The head of every chain (its
// last sequence number and hash) is kept beside it (a session chain's in
// the session's row), so that Verify also finds events removed from the
// end; when a session is removed, its agent's chain records the session
// chain's final head, so the evidence survives the session. Verify checks
// every chain and returns one digest over all chain heads: an operator who
// records it elsewhere can later tell whether a whole chain was removed or
// rewritten. Times are kept in microseconds.
//
// Retention cuts an agent's chain only at a checkpoint: Checkpoint appends
// a checkpoint event to an agent's chain, and Prune removes the events
// before a checkpoint, after checking that they verify. A chain that
// starts at a checkpoint verifies. A session chain goes whole, after its
// session is removed: its final head stays in its agent's chain.

// AuditKind is the kind of decision an audit event records. The strings
// are stored: they never change.
type AuditKind string

// The kinds of audit events.
const (
	AuditCreate  AuditKind = "create"
	AuditUse     AuditKind = "use"
	AuditReserve AuditKind = "reserve"
	AuditSettle  AuditKind = "settle"
	AuditRelease AuditKind = "release"
	AuditClose   AuditKind = "close"
	// AuditExpire records a session marked expired durably.
	AuditExpire AuditKind = "expire"
	// AuditLapse records a reservation released because it lapsed.
	AuditLapse AuditKind = "lapse"
	// AuditCleanup records a session removed by Cleanup.
	AuditCleanup AuditKind = "cleanup"
	// AuditLimits records a change of an agent's spend limits.
	AuditLimits AuditKind = "limits"
	// AuditCheckpoint marks where retention may cut the chain.
	AuditCheckpoint AuditKind = "checkpoint"
)

// Valid reports whether k is one of the defined kinds.
func (k AuditKind) Valid() bool {
	switch k {
	case AuditCreate, AuditUse, AuditReserve, AuditSettle, AuditRelease, AuditClose,
		AuditExpire, AuditLapse, AuditCleanup, AuditLimits, AuditCheckpoint:
		return true
	}
	return false
}

// Audit outcomes: OutcomeAllowed for a decision that went through, else
// the refusal's name. The strings are stored: they never change.
const (
	OutcomeAllowed         = "ok"
	OutcomeAgentMismatch   = "agent_mismatch"
	OutcomeClosed          = "closed"
	OutcomeExpired         = "expired"
	OutcomeBudgetExceeded  = "budget_exceeded"
	OutcomeToolDenied      = "tool_not_authorized"
	OutcomeRateLimited     = "rate_limited"
	OutcomeTooManySessions = "too_many_sessions"
	OutcomeSpendExceeded   = "spend_limit_exceeded"
)

// AuditOutcome names the outcome of a decision: OutcomeAllowed for nil,
// the refusal's name for a governance refusal, "" for any other error
// (which is not a decision and is not recorded).
func AuditOutcome(refusal error) string {
	switch refusal.(type) {
	case nil:
		return OutcomeAllowed
	case *AgentMismatchError:
		return OutcomeAgentMismatch
	case *ClosedError:
		return OutcomeClosed
	case *ExpiredError:
		return OutcomeExpired
	case *BudgetError:
		return OutcomeBudgetExceeded
	case *ToolError:
		return OutcomeToolDenied
	case *RateLimitError:
		return OutcomeRateLimited
	case *TooManySessionsError:
		return OutcomeTooManySessions
	case *SpendLimitError:
		return OutcomeSpendExceeded
	}
	return ""
}

// AuditEvent is one event of a chain.
type AuditEvent struct {
	AgentID string `json:"agent_id"`
	// Chain is the governed session whose chain holds the event, "" for
	// the agent's own chain.
	Chain string `json:"chain,omitempty"`
	// Seq is the event's position in its chain, from 1.
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	Kind    AuditKind `json:"kind"`
	Outcome string    `json:"outcome"`
	// SessionID is the governed session the decision was about ("" for an
	// agent's limits or a checkpoint).
	SessionID string `json:"session_id,omitempty"`
	// RequestID is the request id of a use, or the id of a reservation.
	RequestID string `json:"request_id,omitempty"`
	// Detail holds the decision's particulars as compact JSON: the tools
	// of a use, the amounts of a reservation, the details of a refusal.
	Detail json.RawMessage `json:"detail"`
	// PrevHash is the hash of the chain's previous event (all zeros
	// before the first); Hash covers PrevHash, Seq, AgentID and every
	// other field (the chain through SessionID, which a session chain's
	// events must carry). Both are lower-case hex SHA-256.
	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`
}

// AuditHead is the last event of a chain.
type AuditHead struct {
	AgentID string `json:"agent_id"`
	// Chain is the governed session of a session chain, "" for the
	// agent's own chain.
	Chain string `json:"chain,omitempty"`
	Seq   int64  `json:"seq"`
	Hash  string `json:"hash"`
}

// AuditFilter selects audit events. The zero value lists everything, in
// (agent, chain, sequence) order, an agent's own chain first.
type AuditFilter struct {
	// AgentID restricts the list to one agent's chains.
	AgentID string
	// SessionID restricts it to the events of one session.
	SessionID string
	// Kind and Outcome restrict it to one kind and one outcome.
	Kind    AuditKind
	Outcome string
	// Since and Until bound the events' times: Since <= At < Until. Zero
	// means unbounded.
	Since, Until time.Time
	// After is the Next of the previous page.
	After string
	// Limit bounds the page; 0 means DefaultPageSize, at most
	// MaxPageSize.
	Limit int
}

// Normalize validates f and applies the default limit.
func (f AuditFilter) Normalize() (AuditFilter, error) {
	for _, id := range []struct{ field, v string }{{"agent_id", f.AgentID}, {"session_id", f.SessionID}} {
		if id.v != "" {
			if err := ValidateID(id.field, id.v); err != nil {
				return f, err
			}
		}
	}
	if f.Kind != "" && !f.Kind.Valid() {
		return f, Invalid("kind", "unknown kind")
	}
	if len(f.Outcome) > 64 || !validText(f.Outcome) {
		return f, Invalid("outcome", "not an outcome")
	}
	if len(f.After) > 2*MaxIDLength+48 {
		return f, Invalid("after", "not a cursor of this listing")
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

// Audit problems: what Verify found wrong with a chain.
const (
	// AuditChanged: the event's hash does not match its fields, or it
	// does not link to the event before it.
	AuditChanged = "changed"
	// AuditRemoved: events are missing before this sequence number (or
	// at the end of the chain, before the head's).
	AuditRemoved = "removed"
	// AuditInserted: the event is not part of the chain the head
	// closes (past the head, or in a chain without a head).
	AuditInserted = "inserted"
	// AuditHeadChanged: the chain's head does not match its last event.
	AuditHeadChanged = "head"
)

// AuditProblem is the first thing wrong with one chain.
type AuditProblem struct {
	AgentID string `json:"agent_id"`
	// Chain is the governed session of a session chain, "" for the
	// agent's own chain.
	Chain string `json:"chain,omitempty"`
	// Seq is the sequence number of the first event changed, inserted,
	// or missing.
	Seq     int64  `json:"seq"`
	Problem string `json:"problem"`
	// Reason says what did not match, in words.
	Reason string `json:"reason"`
}

// AuditReport is what Verify found.
type AuditReport struct {
	// Chains and Events count what was checked.
	Chains int64 `json:"chains"`
	Events int64 `json:"events"`
	// Digest is the SHA-256 (hex) over every chain head, in (agent,
	// chain) order:
	// it changes whenever any chain grows, or is changed or removed.
	Digest string `json:"digest"`
	// Problems lists the first problem of every chain that does not
	// verify, in (agent, chain) order; empty when every chain verifies.
	Problems []AuditProblem `json:"problems"`
}

// OK reports whether every chain verified.
func (r AuditReport) OK() bool { return len(r.Problems) == 0 }

// AuditPruneRequest says where retention may cut the chains.
type AuditPruneRequest struct {
	// Before: each chain is cut at its newest checkpoint made before this
	// time (the checkpoint stays, as the chain's new first event). A chain
	// without such a checkpoint is left whole.
	Before time.Time
	// AgentID, when not empty, prunes that agent's chain only.
	AgentID string
}

// AuditRestoreRequest puts audit events and chain heads back exactly as
// they were exported. Restore checks that every chain it is given
// verifies (a chain may start at a checkpoint) and ends at its head.
type AuditRestoreRequest struct {
	Events []AuditEvent
	Heads  []AuditHead
	// SkipExisting leaves agents whose chain exists untouched; without it
	// such an agent fails the whole request with ErrConflict.
	SkipExisting bool
}

// Audit is the audit-trail facet of a Store. Its writes (checkpoints,
// pruning, restore) are maintenance; the decisions append to it
// themselves.
type Audit interface {
	// List returns a page of events.
	List(ctx context.Context, f AuditFilter) (Page[AuditEvent], error)
	// Heads returns the head of every chain, in (agent, chain) order:
	// the agents' chains, the live sessions' chains, and the final heads
	// of removed sessions that their agents' chains record.
	Heads(ctx context.Context) ([]AuditHead, error)
	// Verify checks every chain from one snapshot and returns what it
	// found; a chain that does not verify is a problem in the report,
	// not an error.
	Verify(ctx context.Context) (AuditReport, error)
	// Checkpoint appends a checkpoint event to the own chain of agentID,
	// or of every agent when it is empty, in one transaction, and returns
	// how many chains it appended to.
	Checkpoint(ctx context.Context, agentID string) (int64, error)
	// Prune cuts chains at their newest checkpoint before req.Before, in
	// one transaction, and returns how many events it removed. A chain
	// is cut only if the events it removes verify: one that does not
	// fails the whole call with ErrCorrupt, and nothing is removed.
	Prune(ctx context.Context, req AuditPruneRequest) (int64, error)
	// Restore inserts events and heads exactly as given, in one
	// transaction, and returns how many events it inserted.
	Restore(ctx context.Context, req AuditRestoreRequest) (int64, error)
}
