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

// Turn leases.
const (
	// DefaultTurnLease is how long a running turn stays live without its
	// store renewing it: the time after which the turn of a process that
	// died (kill -9, power loss) reads as stale. A live store renews the
	// leases of its turns every third of it.
	DefaultTurnLease = 30 * time.Second
	// MinTurnLease and MaxTurnLease bound the lease a backend accepts.
	MinTurnLease = 100 * time.Millisecond
	MaxTurnLease = 24 * time.Hour
)

// TurnState is the durable state of a session's current or last turn.
type TurnState struct {
	// Generation is the number of the last turn begun; 0 if none was.
	// Generations increase strictly, per session and store-wide, and are
	// never reused.
	Generation uint64 `json:"generation"`
	// Running is true from BeginTurn until the turn is ended or superseded.
	// A turn of a process that died stays running (and turns Stale once
	// its lease lapses) until EndTurn or a new BeginTurn clears it.
	Running bool `json:"running"`
	// Stale is true for a running turn whose lease has lapsed: the store
	// that began it stopped renewing it (its process died, or stalled for
	// longer than the lease), so nothing is working on it. A stale turn
	// does not keep its session from being evicted, a new BeginTurn
	// supersedes it without keeping a cause for it, and the causes
	// recorded for it are reaped (see Turns).
	Stale bool `json:"stale,omitempty"`
	// Owner identifies the store instance (process) that began the turn.
	Owner string `json:"owner,omitempty"`
	// StartedAt is when the turn began.
	StartedAt time.Time `json:"started_at,omitzero"`
	// LeaseExpiresAt is, for a running turn, when its lease lapses unless
	// its store renews it (in the past for a stale turn). Zero when no
	// turn is running.
	LeaseExpiresAt time.Time `json:"lease_expires_at,omitzero"`
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
//
// Leases. A running turn has a lease (TurnState.LeaseExpiresAt) that the
// store which began it renews while it is open (every third of the lease,
// DefaultTurnLease unless the backend's option sets another). When the
// process dies, the lease lapses and the turn reads as Stale: it no longer
// keeps its session from being evicted, BeginTurn supersedes it without
// recording a cause for it, and the causes recorded for it (by a cancel
// before the process died) are removed instead of waiting forever to be
// taken. A cancel of a stale turn is still marked in the session (the
// process may only have stalled, and then sees it) but keeps no takeable
// cause. Leases are decided with each store's clock: the processes sharing
// a database must agree on the time to well within a lease.
type Turns interface {
	// BeginTurn starts a turn on the session and returns its generation and
	// its context, a child of ctx. A running turn of the session is
	// superseded: its cause is recorded as CauseSuperseded (unless it was
	// already cancelled, or is stale) and its context is cancelled.
	// ErrNotFound if the session does not exist.
	BeginTurn(ctx context.Context, id string) (uint64, context.Context, error)
	// EndTurn ends turn gen of the session: it clears the running turn
	// only if gen is the current generation, and reports whether it did.
	// The turn's context is released with what happened first: cause
	// ErrTurnEnded when this call ended a turn nothing had stopped, else
	// the cancel, supersede or removal that came before it (a Kill that
	// wins a race with EndTurn is what the context reports, and EndTurn
	// returns false; an EndTurn that wins returns true). A cause of turn
	// gen that was not taken yet is kept: TakeCancelCause still returns it
	// once after EndTurn (so a deferred EndTurn never loses why the turn
	// was cancelled); a taken cause is removed. A missing session is not
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
	// A cause outlives the session (Kill, Remove) and the turn (EndTurn)
	// until it is taken, or until the turn's lease has lapsed (its store is
	// gone) and it is reaped.
	TakeCancelCause(ctx context.Context, id string, gen uint64) (CancelCause, bool, error)
	// ReapCancelCauses removes the recorded causes of dead turns: those of
	// turns whose lease has lapsed (the store that ran them is gone),
	// taken or not, and returns how many it removed. Every store that has
	// begun turns does this in its lease heartbeat; maintenance tools may
	// call it too.
	ReapCancelCauses(ctx context.Context) (int64, error)
}
