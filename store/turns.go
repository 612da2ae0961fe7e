package store

import (
	"context"
	"errors"
	"time"
)

// CancelCause says why a turn was cancelled. Every cancel is attributed:
// there is no "unknown" cause.
type CancelCause string

// Cancel causes.
const (
	// CauseClientRequest: the client asked to cancel the turn.
	CauseClientRequest CancelCause = "client_rpc"
	// CauseAdminKill: an administrator killed the session.
	CauseAdminKill CancelCause = "admin_kill"
	// CauseSessionRemoved: the session was removed while the turn ran.
	CauseSessionRemoved CancelCause = "session_removed"
	// CauseSuperseded: a new turn of the session began. Only BeginTurn
	// records it.
	CauseSuperseded CancelCause = "superseded"
)

// Valid reports whether c is one of the defined causes.
func (c CancelCause) Valid() bool {
	switch c {
	case CauseClientRequest, CauseAdminKill, CauseSessionRemoved, CauseSuperseded:
		return true
	}
	return false
}

// Turn errors. They are the context causes of a turn context that ended for
// a reason other than its parent context (see context.Cause).
var (
	// ErrTurnCancelled: the turn was cancelled; the context cause is a
	// *TurnCancelledError naming why.
	ErrTurnCancelled = errors.New("turn cancelled")
	// ErrTurnEnded: the turn was ended with EndTurn (by its owner or by
	// another process), so its context was released.
	ErrTurnEnded = errors.New("turn ended")
)

// TurnCancelledError is the context cause of a cancelled turn. The cause
// has been durably recorded before the context fired.
type TurnCancelledError struct {
	SessionID  string
	Generation uint64
	Cause      CancelCause
}

// Error names the cause ("turn cancelled: client_rpc").
func (e *TurnCancelledError) Error() string {
	return ErrTurnCancelled.Error() + ": " + string(e.Cause)
}

// Unwrap makes errors.Is(err, ErrTurnCancelled) true.
func (e *TurnCancelledError) Unwrap() error { return ErrTurnCancelled }

// CancelCauseOf returns the cancel cause of a turn context returned by
// BeginTurn, and false if the context was not cancelled as a turn (still
// running, ended, or cancelled through its parent).
func CancelCauseOf(turnCtx context.Context) (CancelCause, bool) {
	var tc *TurnCancelledError
	if errors.As(context.Cause(turnCtx), &tc) {
		return tc.Cause, true
	}
	return "", false
}

// TurnState is the durable state of a session's current or last turn.
type TurnState struct {
	// Generation is the number of the last turn begun; 0 if none was.
	// Generations increase strictly, per session and store-wide, and are
	// never reused.
	Generation uint64 `json:"generation"`
	// Running is true from BeginTurn until the turn is ended or superseded.
	// A turn of a process that crashed stays running until EndTurn or a
	// new BeginTurn clears it.
	Running bool `json:"running"`
	// Owner identifies the store instance (process) that began the turn.
	Owner string `json:"owner,omitempty"`
	// StartedAt is when the turn began.
	StartedAt time.Time `json:"started_at,omitzero"`
	// CancelCause is set once a cancel of the running turn is recorded.
	CancelCause CancelCause `json:"cancel_cause,omitempty"`
}

// Turns is the turn and cancellation part of the Runtime facet.
//
// A turn is one unit of agent work on a session. BeginTurn hands out a
// generation number and a context; the turn's context is cancelled when the
// turn is cancelled (Cancel, Kill, Remove) or superseded (a new BeginTurn),
// also when that happens in another process sharing the database. The cause
// is always recorded durably before the context fires, and TakeCancelCause
// returns it exactly once.
type Turns interface {
	// BeginTurn starts a turn on the session and returns its generation and
	// its context, a child of ctx. A running turn of the session is
	// superseded: its cause is recorded as CauseSuperseded (unless it was
	// already cancelled) and its context is cancelled. ErrNotFound if the
	// session does not exist.
	BeginTurn(ctx context.Context, id string) (uint64, context.Context, error)
	// EndTurn ends turn gen of the session: it clears the running turn
	// only if gen is the current generation, and reports whether it did.
	// Any cause of turn gen not taken yet is discarded, and the turn's
	// context is released (cause ErrTurnEnded). A missing session is not
	// an error (false).
	EndTurn(ctx context.Context, id string, gen uint64) (bool, error)
	// Cancel cancels the session's running turn with cause (client
	// request, admin kill or session removed): it records the cause, then
	// fires the turn's context. It returns false, recording nothing, when
	// no turn is running (or the session does not exist). A turn already
	// cancelled keeps its first cause and Cancel returns true.
	Cancel(ctx context.Context, id string, cause CancelCause) (bool, error)
	// TakeCancelCause returns the recorded cause of turn gen of the session
	// and marks it taken: it is returned once, later calls report false.
	// Causes outlive the session (Kill, Remove) until taken or until the
	// turn is ended.
	TakeCancelCause(ctx context.Context, id string, gen uint64) (CancelCause, bool, error)
}
