package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Bounds of agent sessions and their events.
const (
	// MaxEventSize bounds the JSON of one event (bytes).
	MaxEventSize = 8 << 20
)

// SessionKey identifies an agent session: the application, the user and
// the session id. Session ids are unique per (App, User); the same id under
// another user is another session.
type SessionKey struct {
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
}

// Validate checks all three parts (see ValidateID).
func (k SessionKey) Validate() error {
	if err := ValidateID("app", k.App); err != nil {
		return err
	}
	if err := ValidateID("user", k.User); err != nil {
		return err
	}
	return ValidateID("session", k.Session)
}

// AgentSession is a session of an agent runtime such as Google's ADK: its
// state in three scopes, its version and, when asked for, a window of its
// event log.
type AgentSession struct {
	Key SessionKey `json:"key"`
	// State holds the app, user and session scopes as stored. Use
	// StatePrefixes.Merge for the flat view a runtime works with.
	State ScopedState `json:"state"`
	// Version is 1 at creation and grows by one with every append and
	// every session-scope state update. A writer that names a version
	// (AppendEventRequest.ExpectedVersion) is refused with a
	// *StaleSessionError when the session has moved on.
	Version int64 `json:"version"`
	// EventCount is the number of events in the log; it is also the Seq of
	// the last event.
	EventCount int64     `json:"event_count"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Events is the window asked for by GetAgentSessionRequest, oldest
	// first; nil when no events were asked for.
	Events []AgentEvent `json:"events,omitempty"`
	// ForkedFrom names the live session this one was forked from and the
	// fork point (GetSession fills it; nil for a session that is not a
	// fork, or whose parent was deleted or rewound past the fork point).
	// PutAgentSession restores a session that names one as a fork of it
	// when the parent's history up to At is the session's own.
	ForkedFrom *ForkPoint `json:"forked_from,omitempty"`
	// DataKeyID is the id of the session's data key in the store's
	// keyring when the session is encrypted at rest (GetSession fills
	// it; "" for a plaintext session). It is a random id, not a secret.
	DataKeyID string `json:"-"`
	// Log is the stamp of the session's event log (see LogStamp).
	// GetSession fills it, and so does Rewind, which returns the session
	// as GetSession reads it; the other calls leave it zero.
	Log LogStamp `json:"-"`
	// Continued is true when GetSession honoured
	// GetAgentSessionRequest.Continue: Events then holds only the events
	// after the prefix the caller named.
	Continued bool `json:"-"`
}

// LogStamp identifies a session's event log as a sequence of positions.
// While reads of a session return the same stamp, the events at the
// positions up to the EventCount of any earlier read with that stamp are
// still exactly the events that read returned: only appends (compaction
// records included) happened since. Anything else that changes what a
// position holds gives the log a new stamp: a rewind, a delete and a
// create (or a restore) under the same key. State changes do not: state
// is read afresh with every GetSession. The zero LogStamp names no log.
// Stamps are compared for equality only; their content is the backend's.
type LogStamp struct {
	row, epoch int64
}

// NewLogStamp returns the stamp of the log of the stored row row whose
// positions were last renamed at epoch (a backend's constructor: row and
// epoch are the backend's own numbers).
func NewLogStamp(row, epoch int64) LogStamp { return LogStamp{row: row, epoch: epoch} }

// IsZero reports whether s names no log.
func (s LogStamp) IsZero() bool { return s == LogStamp{} }

// EventPrefix names the first Count events of the log stamped Log: the
// events a caller read earlier and still holds (see
// GetAgentSessionRequest.Continue).
type EventPrefix struct {
	Log   LogStamp
	Count int64
}

// ForkPoint is where a session was forked: from Session (same app and
// user) after its event At.
type ForkPoint struct {
	Session string `json:"session"`
	At      int64  `json:"at"`
}

// AgentEvent is one entry of a session's event log. The store indexes the
// id, the position, the timestamp and the invocation id; Data is kept as
// the runtime encoded it and is returned byte for byte.
type AgentEvent struct {
	// ID is unique within the session; the store generates one when empty.
	ID string `json:"id"`
	// Seq is the position in the log, from 1, without gaps. Set by the store.
	Seq int64 `json:"seq"`
	// InvocationID groups the events of one agent invocation; may be empty.
	InvocationID string `json:"invocation_id,omitempty"`
	// Timestamp defaults to the store's clock, truncated to the
	// microsecond, when zero. A given timestamp is kept exactly, to the
	// nanosecond (ADK selects the events a compaction covers by it); it
	// reads back in UTC.
	Timestamp time.Time `json:"timestamp"`
	// Data is the event as a JSON document, at most MaxEventSize bytes.
	Data json.RawMessage `json:"data"`
	// Compaction is set on a compaction record (AgentBranches.Compact)
	// to the range it summarises; nil on every other event. Only the
	// store sets it: an append that sets it is refused.
	Compaction *CompactionRange `json:"compaction,omitempty"`
}

// CreateAgentSessionRequest creates an agent session.
type CreateAgentSessionRequest struct {
	// Key names the session. Key.Session may be empty: the store then
	// generates a random id.
	Key SessionKey
	// State is the initial state. Its App and User scopes are merged into
	// the shared app and user state, in the same transaction.
	State ScopedState
}

// Validate checks the shape of r.
func (r CreateAgentSessionRequest) Validate() error {
	k := r.Key
	if k.Session == "" {
		k.Session = "generated"
	}
	if err := k.Validate(); err != nil {
		return err
	}
	return r.State.Validate("state")
}

// GetAgentSessionRequest reads one session, its merged state and
// optionally a window of its events, all from one consistent snapshot.
type GetAgentSessionRequest struct {
	Key SessionKey
	// IncludeEvents returns events with the session, oldest first.
	IncludeEvents bool
	// Recent, when positive, keeps only the Recent most recent of the
	// selected events. It must not be negative.
	Recent int
	// After, when not zero, selects only events whose timestamp is at or
	// after it (exact to the nanosecond).
	After time.Time
	// FromLatestSummary returns the latest compaction record first,
	// followed by the events after the range it covers, instead of the
	// whole history (Recent and After then apply to the events that
	// follow). Without a compaction record it changes nothing.
	FromLatestSummary bool
	// EventDataOnly returns each event's Data alone: its Seq, ID,
	// InvocationID, Timestamp and Compaction are left zero. It is for a
	// caller whose event documents carry what it needs of those (the ADK
	// adapter's events hold their own id, invocation and time); the read
	// then takes one column per event instead of eight.
	EventDataOnly bool
	// Continue, when set, names the events the caller already holds: the
	// first Continue.Count events of the log stamped Continue.Log (the
	// AgentSession.Log and EventCount of an earlier read). If the
	// session's log still has that stamp and at least that many events,
	// Events holds only the events after them and AgentSession.Continued
	// is true; otherwise the events are read as without Continue and
	// Continued is false. The session's state, version and counts are
	// read whole either way, in the same snapshot. It needs
	// IncludeEvents and the whole log (no Recent, After or
	// FromLatestSummary).
	Continue *EventPrefix
}

// Validate checks the shape of r.
func (r GetAgentSessionRequest) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if r.Recent < 0 {
		return Invalid("recent", "must not be negative")
	}
	if c := r.Continue; c != nil {
		switch {
		case !r.IncludeEvents:
			return Invalid("continue", "needs include_events")
		case r.Recent != 0 || !r.After.IsZero() || r.FromLatestSummary:
			return Invalid("continue", "reads the whole log: no recent, after or from_latest_summary")
		case c.Count < 0:
			return Invalid("continue.count", "must not be negative")
		}
	}
	return nil
}

// ListAgentSessionsRequest lists the sessions of an application, or of one
// user of it, ordered by user and session id. Listed sessions carry their
// state but no events.
type ListAgentSessionsRequest struct {
	// App is required.
	App string
	// User, when not empty, restricts the list to one user.
	User string
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListAgentSessionsRequest) Normalize() (ListAgentSessionsRequest, error) {
	if err := ValidateID("app", r.App); err != nil {
		return r, err
	}
	if r.User != "" {
		if err := ValidateID("user", r.User); err != nil {
			return r, err
		}
	}
	if r.Cursor != "" {
		if _, err := DecodeSessionCursor(r.Cursor); err != nil {
			return r, err
		}
	}
	return r, normalizeLimit(&r.Limit)
}

// SessionCursor is the position a session listing resumes after.
type SessionCursor struct {
	User    string `json:"u"`
	Session string `json:"s"`
}

// Encode returns the cursor as an opaque string.
func (c SessionCursor) Encode() string {
	b, _ := json.Marshal(c) // two strings always marshal
	return string(b)
}

// DecodeSessionCursor parses a cursor made by SessionCursor.Encode.
func DecodeSessionCursor(s string) (SessionCursor, error) {
	var c SessionCursor
	if len(s) > 4*MaxIDLength || json.Unmarshal([]byte(s), &c) != nil || c.User == "" || c.Session == "" {
		return SessionCursor{}, Invalid("cursor", "not a cursor of this listing")
	}
	return c, nil
}

// AppendEventRequest appends one event to a session's log and applies a
// state delta, in one transaction: either both happen or neither does.
type AppendEventRequest struct {
	Key   SessionKey
	Event AgentEvent
	// Delta is applied after the event is inserted: App and User keys to
	// the shared scopes, Session keys to the session. A key set to the
	// JSON value null keeps the key with the value null.
	Delta ScopedState
	// ExpectedVersion, when positive, makes the append conditional: it is
	// refused with a *StaleSessionError (matching ErrStaleSession and
	// ErrConflict) unless the session's version is exactly this. Zero
	// appends whatever the version. Negative is invalid.
	ExpectedVersion int64
}

// Validate checks the shape of r.
func (r AppendEventRequest) Validate() error {
	if err := r.Key.Validate(); err != nil {
		return err
	}
	if r.ExpectedVersion < 0 {
		return Invalid("expected_version", "must not be negative")
	}
	if err := validateEvent(r.Event); err != nil {
		return err
	}
	return r.Delta.Validate("delta")
}

func validateEvent(ev AgentEvent) error {
	if ev.ID != "" {
		if err := ValidateID("event.id", ev.ID); err != nil {
			return err
		}
	}
	if ev.InvocationID != "" {
		if err := ValidateID("event.invocation_id", ev.InvocationID); err != nil {
			return err
		}
	}
	if ev.Seq != 0 {
		return Invalid("event.seq", "is set by the store")
	}
	if ev.Compaction != nil {
		return Invalid("event.compaction", "is set by the store's compaction call only")
	}
	if len(ev.Data) > MaxEventSize {
		return Invalid("event.data", "too large")
	}
	if !json.Valid(ev.Data) {
		return Invalid("event.data", "must be a JSON document")
	}
	if !utf8.Valid(ev.Data) {
		return Invalid("event.data", "must be valid UTF-8")
	}
	if y := ev.Timestamp.Year(); !ev.Timestamp.IsZero() && (y < 1 || y > 9999) {
		return Invalid("event.timestamp", "out of range")
	}
	return nil
}

// AppendEventResult is the outcome of an append.
type AppendEventResult struct {
	// Event is the event as stored (id, seq and timestamp filled in).
	Event AgentEvent
	// Version is the session's version after the append.
	Version int64
	// UpdatedAt is the session's update time after the append.
	UpdatedAt time.Time
	// Replayed is true when an event with the same id and the same content
	// was already in the log: nothing was written (the delta was not
	// applied again) and Event is the stored one. This makes an append
	// safe to retry when its outcome is unknown.
	Replayed bool
	// Log is the stamp of the log the event was appended to, at the
	// event's Seq (see LogStamp): a caller that holds that log's first
	// Seq-1 events now holds its first Seq. Zero for a replay.
	Log LogStamp
}

// ListEventsRequest pages through a session's log in order.
type ListEventsRequest struct {
	Key SessionKey
	// Cursor is the Next of the previous page; empty starts at the first
	// event.
	Cursor string
	// InvocationID, when not empty, lists only that invocation's events.
	InvocationID string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r ListEventsRequest) Normalize() (ListEventsRequest, error) {
	if err := r.Key.Validate(); err != nil {
		return r, err
	}
	if r.InvocationID != "" {
		if err := ValidateID("invocation_id", r.InvocationID); err != nil {
			return r, err
		}
	}
	if r.Cursor != "" {
		if _, err := DecodeEventCursor(r.Cursor); err != nil {
			return r, err
		}
	}
	return r, normalizeLimit(&r.Limit)
}

// EventCursor returns the cursor that resumes a listing after seq.
func EventCursor(seq int64) string {
	b, _ := json.Marshal(seq)
	return string(b)
}

// DecodeEventCursor returns the seq a cursor made by EventCursor resumes
// after.
func DecodeEventCursor(s string) (int64, error) {
	var seq int64
	if len(s) > 20 || json.Unmarshal([]byte(s), &seq) != nil || seq < 1 {
		return 0, Invalid("cursor", "not a cursor of this listing")
	}
	return seq, nil
}

// UpdateStateRequest changes state without appending an event.
type UpdateStateRequest struct {
	// Key names the scopes: App is always required, User when Delta.User
	// or Delta.Session is set, Session when Delta.Session is set.
	Key SessionKey
	// Delta is merged into the scopes, in one transaction.
	Delta ScopedState
	// ExpectedVersion, when positive and Delta.Session is set, makes the
	// update conditional like AppendEventRequest.ExpectedVersion.
	ExpectedVersion int64
}

// Validate checks the shape of r.
func (r UpdateStateRequest) Validate() error {
	if err := ValidateID("app", r.Key.App); err != nil {
		return err
	}
	if len(r.Delta.User) > 0 || len(r.Delta.Session) > 0 || r.Key.User != "" {
		if err := ValidateID("user", r.Key.User); err != nil {
			return err
		}
	}
	if len(r.Delta.Session) > 0 || r.Key.Session != "" {
		if err := ValidateID("session", r.Key.Session); err != nil {
			return err
		}
	}
	if r.ExpectedVersion < 0 {
		return Invalid("expected_version", "must not be negative")
	}
	return r.Delta.Validate("delta")
}

func normalizeLimit(limit *int) error {
	if *limit < 0 {
		return Invalid("limit", "must not be negative")
	}
	if *limit == 0 {
		*limit = DefaultPageSize
	}
	*limit = min(*limit, MaxPageSize)
	return nil
}

// ErrStaleSession: a conditional write named a session version that is no
// longer current. It matches ErrConflict too.
var ErrStaleSession = fmt.Errorf("stale session, reload it and retry: %w", ErrConflict)

// StaleSessionError reports a conditional append or state update through a
// session handle that is older than the stored session: another writer
// appended in between. Nothing was written. The way out is to reload the
// session (GetSession), decide again on the fresh history and state, and
// retry with the new version; appending anyway would interleave two
// writers' histories.
type StaleSessionError struct {
	Key      SessionKey
	Expected int64 // the version the writer named
	Current  int64 // the stored version
}

// Error returns the constant text of ErrStaleSession; the versions stay
// in the fields.
func (e *StaleSessionError) Error() string { return ErrStaleSession.Error() }

// Unwrap makes errors.Is(err, ErrStaleSession) and errors.Is(err,
// ErrConflict) true.
func (e *StaleSessionError) Unwrap() error { return ErrStaleSession }

// AgentSessions is the agent-session facet of a Store: sessions keyed by
// (app, user, session id), each with an append-only event log, and
// key–value state in app, user and session scopes. It is the storage model
// of Google's ADK and of trpc-agent-go. Every method is safe for concurrent
// use, also by several processes sharing one database.
type AgentSessions interface {
	// CreateSession creates a session; an existing key is ErrConflict.
	CreateSession(ctx context.Context, req CreateAgentSessionRequest) (AgentSession, error)
	// GetSession returns one session with its state and, if asked, a
	// window of its events, from one consistent snapshot.
	GetSession(ctx context.Context, req GetAgentSessionRequest) (AgentSession, error)
	// ListSessions returns a page of sessions with their state.
	ListSessions(ctx context.Context, req ListAgentSessionsRequest) (Page[AgentSession], error)
	// DeleteSession deletes a session with its events and session state.
	// App and user state stay. A missing session is ErrNotFound. The
	// history forks of it still read is kept (not listed, not readable
	// under the key) until the last of them is deleted.
	DeleteSession(ctx context.Context, key SessionKey) error
	// AppendEvent appends an event and applies its state delta in one
	// transaction.
	AppendEvent(ctx context.Context, req AppendEventRequest) (AppendEventResult, error)
	// ListEvents returns a page of a session's events, oldest first.
	ListEvents(ctx context.Context, req ListEventsRequest) (Page[AgentEvent], error)
	// GetState returns the app scope of key.App, the user scope when
	// key.User is set and the session scope when key.Session is set (a
	// missing session is ErrNotFound).
	GetState(ctx context.Context, key SessionKey) (ScopedState, error)
	// UpdateState merges a delta into the scopes without an event and
	// returns the session's version (0 when no session was named).
	UpdateState(ctx context.Context, req UpdateStateRequest) (int64, error)
	// ListApps returns a page of application names in byte order: every
	// application with a session, app state or user state. A page costs a
	// few index lookups per name, whatever the number of sessions.
	ListApps(ctx context.Context, req ListAppsRequest) (Page[string], error)
	// ListUsers returns a page of the user ids of one application in byte
	// order: every user with a session or user state in it.
	ListUsers(ctx context.Context, req ListUsersRequest) (Page[string], error)
	// AgentBranches forks, rewinds and compacts a session's history.
	AgentBranches
}
