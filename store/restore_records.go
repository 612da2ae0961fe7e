package store

import (
	"context"
	"encoding/json"
)

// RecordRestorer is implemented by the stores of this module (sqlstore,
// pgstore): it puts exported records back exactly as they were stored —
// versions, message and record positions and times included, which the
// facets' own write methods set themselves — and all of them in one
// transaction. It is the import side of an export (sessionctl import).
type RecordRestorer interface {
	// RestoreRecords runs fn in one write transaction and commits what it
	// wrote through w when fn returns nil; any error of fn (or of w) rolls
	// all of it back. The backend may run fn more than once (a retry of
	// the whole transaction), so fn must start its input over each time
	// and only assign its outputs. Other writers wait while it runs (on
	// SQLite, the write lock is held throughout).
	RestoreRecords(ctx context.Context, fn func(w RecordWriter) error) error
}

// RecordWriter writes records inside one RestoreRecords transaction. Each
// Put writes one record with everything it owns, exactly as given, and
// returns true; when the record's id (key) exists already it writes
// nothing and returns false. Invalid records fail with an
// *InvalidInputError. A time that is zero takes the store's clock.
type RecordWriter interface {
	// PutGovernedSession writes a governed session as Governance.Restore
	// does (each must pass Session.ValidateStored).
	PutGovernedSession(s Session) (bool, error)
	// PutRuntimeSession writes a runtime session with its overrides,
	// times and uploads. Its turn keeps its generation and start time but
	// is not running (a turn belongs to the process that ran it), and the
	// store's generation counter is moved past it, so generations are
	// never reused.
	PutRuntimeSession(r RuntimeRecord) (bool, error)
	// PutConversation writes a conversation with its version, message
	// count, messages at their positions with their times, cost records,
	// artifacts, trace events, run records and reports.
	PutConversation(c ConversationRecord) (bool, error)
	// PutAppState and PutUserState write the keys of app (or user) state
	// that are not stored yet. A key stored with the same value is left
	// alone; the keys stored with another value are left alone too, and
	// returned in differing.
	PutAppState(app string, state map[string]json.RawMessage) (differing []string, err error)
	PutUserState(app, user string, state map[string]json.RawMessage) (differing []string, err error)
	// PutAgentSession writes an agent session with its version, event
	// count, times, session state (s.State.Session; the app and user
	// scopes are written by PutAppState and PutUserState) and its whole
	// event log (s.Events, positions 1 to EventCount). With
	// s.ForkedFrom, when that session exists and its history up to the
	// fork point is s's (same ids, data and timestamps), s is written as
	// a fork of it (only its own events are stored); else as a session of
	// its own.
	PutAgentSession(s AgentSession) (bool, error)
	// PutAuditChain writes the audit chain of one agent, its events and
	// its head, exactly as given (as Audit.Restore does for one chain):
	// the chain must verify (it may start at a checkpoint) and end at its
	// head. It returns false, writing nothing, when the agent has a chain.
	PutAuditChain(head AuditHead, events []AuditEvent) (bool, error)
	// PutSpendLimit and PutReservation write one spend limit (with its
	// window's counters) or one reservation (with its holds and refusal)
	// exactly as exported by Spend.Export; a session's records need the
	// governed session. They return false, writing nothing, when the
	// limit (by id, or its owner's metric and window) or the reservation
	// (by session and request id) exists.
	PutSpendLimit(l SpendLimitRecord) (bool, error)
	PutReservation(r ReservationRecord) (bool, error)
}

// RuntimeRecord is a runtime session and its uploads with their content.
type RuntimeRecord struct {
	Session RuntimeSession
	Uploads []UploadRecord
}

// UploadRecord is an upload entry with its content; the content is
// checked against Upload.SHA256 when that is set.
type UploadRecord struct {
	Upload  Upload
	Content []byte
}

// ConversationRecord is a conversation with the records it owns.
type ConversationRecord struct {
	// Conversation is stored with its Version (0: 1), its messages at
	// their Seq (positions run on without gaps from the first one; all
	// zero: from 0) and its MessageCount (0: the number of messages).
	Conversation Conversation
	Artifacts    []Artifact
	// Traces and Reports keep their Seq (all zero: numbered from 0) and
	// CreatedAt.
	Traces  []TraceEvent
	Runs    []RunRecord
	Reports []VerificationReport
}
