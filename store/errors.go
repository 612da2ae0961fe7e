package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error a Store returns matches exactly one of the
// refusal or input sentinels, or ErrStoreClosed, ErrBusy, or ErrStorage
// (with at most one of its kinds: ErrStorageFull, ErrReadOnly, ErrCorrupt,
// ErrIO), with errors.Is.
var (
	// ErrNotFound: the session (or the named object in it) does not exist.
	ErrNotFound = errors.New("session not found")
	// ErrExpired: the governed session is past its time limit.
	ErrExpired = errors.New("session expired")
	// ErrBudgetExceeded: the call would exceed the session's call budget.
	ErrBudgetExceeded = errors.New("session budget exceeded")
	// ErrToolNotAuthorized: a requested tool is not in the allow-list.
	ErrToolNotAuthorized = errors.New("tool not authorized in session")
	// ErrClosed: the session has been closed.
	ErrClosed = errors.New("session already closed")
	// ErrRateLimited: the call would exceed the rate limit of the window.
	ErrRateLimited = errors.New("session rate limit exceeded")
	// ErrAgentMismatch: the presenting agent is not the session's agent.
	ErrAgentMismatch = errors.New("agent mismatch")
	// ErrTooManySessions: a session cap (per agent or global) is reached.
	ErrTooManySessions = errors.New("too many concurrent sessions")
	// ErrInvalidInput: the request is malformed; nothing was written.
	ErrInvalidInput = errors.New("invalid input")
	// ErrConflict: the object already exists, a request id was reused with
	// different content, or an optimistic version check failed.
	ErrConflict = errors.New("conflict")
	// ErrSchemaTooNew: the database was migrated by a newer binary.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrNotSessionStore: the database is not a session store: a SQLite
	// file of another application or no database at all, or a PostgreSQL
	// schema that holds another application's tables.
	ErrNotSessionStore = errors.New("not a session store database")
	// ErrStoreClosed: the Store was closed before the call.
	ErrStoreClosed = errors.New("store is closed")
	// ErrSearchDisabled: the database's search index is turned off
	// (sqlstore.WithSearchIndex(false), pgstore.WithSearchIndex(false)):
	// Search and History answer nothing until it is turned on again.
	ErrSearchDisabled = errors.New("search index is turned off")

	// ErrBusy: the database stayed contended for longer than the store was
	// willing to wait or retry (SQLite: another writer held the lock;
	// PostgreSQL: serialization failures or deadlocks kept recurring, or the
	// server took no more connections). It is contention, not a storage
	// failure: it does not match ErrStorage, and the same call may succeed
	// later.
	ErrBusy = errors.New("database is busy")

	// ErrStorage matches every storage failure: the database could not
	// keep or read the data. ErrStorageFull, ErrReadOnly, ErrCorrupt and
	// ErrIO each match it with errors.Is (and only it besides themselves);
	// a failure of the database that none of them names matches
	// ErrStorage alone. It never matches a refusal, input, conflict or
	// closed kind, so errors.Is(err, ErrStorage) tells "the database
	// failed" from "the request was refused".
	ErrStorage = errors.New("database storage failure")
	// ErrStorageFull: the disk (or the configured size limit) is full.
	// It matches ErrStorage.
	ErrStorageFull error = &storageError{"database storage is full"}
	// ErrReadOnly: the database cannot be written (SQLite: the file or its
	// directory is read-only; PostgreSQL: a read-only server or
	// transaction, or a role without write privileges). It matches
	// ErrStorage.
	ErrReadOnly error = &storageError{"database is read-only"}
	// ErrCorrupt: the database is damaged: a damaged SQLite file or page, a
	// corruption the PostgreSQL server reports, or a stored value that does
	// not read back (a row, an upload whose content no longer matches its
	// digest, a gap in the applied migrations). It matches ErrStorage.
	ErrCorrupt error = &storageError{"database file is damaged"}
	// ErrIO: reading or writing the database failed below it (SQLite: a
	// disk I/O error of the file, its journal or its lock; PostgreSQL: the
	// server's I/O error, or the connection to the server broke). It
	// matches ErrStorage.
	ErrIO error = &storageError{"database input/output error"}
)

// storageError is the type of the storage sentinels that match ErrStorage.
type storageError struct{ msg string }

func (e *storageError) Error() string { return e.msg }

// Is makes every storage sentinel match ErrStorage.
func (e *storageError) Is(target error) bool { return target == ErrStorage }

// StorageSentinels returns the storage sentinels: ErrStorage and the kinds
// that match it.
func StorageSentinels() []error {
	return []error{ErrStorage, ErrStorageFull, ErrReadOnly, ErrCorrupt, ErrIO}
}

// UseRefusals returns the sentinels of a governed Use's refusals: the
// call was decided and refused (nothing was consumed), as opposed to
// invalid input or a failure of the store.
func UseRefusals() []error {
	return []error{ErrNotFound, ErrAgentMismatch, ErrClosed, ErrExpired, ErrBudgetExceeded,
		ErrToolNotAuthorized, ErrRateLimited, ErrConflict, ErrTooManySessions}
}

// IsUseRefusal reports whether err, returned by Governance.Use, is a
// refusal of the call (it matches one of UseRefusals and not
// ErrInvalidInput).
func IsUseRefusal(err error) bool {
	if err == nil || errors.Is(err, ErrInvalidInput) {
		return false
	}
	for _, k := range UseRefusals() {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// NotFoundError reports a missing object. Resource is a fixed word such as
// "session" or "upload".
type NotFoundError struct {
	Resource string
	ID       string
}

// Error returns the text of ErrNotFound, or "<resource> not found" for
// an object inside a session; never the id.
func (e *NotFoundError) Error() string {
	if e.Resource == "" || e.Resource == "session" {
		return ErrNotFound.Error()
	}
	return e.Resource + " not found"
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ExpiredError reports a governed session past its time limit.
type ExpiredError struct {
	SessionID string
	ExpiresAt time.Time
}

// Error returns the constant text of ErrExpired; the details stay in the
// fields.
func (e *ExpiredError) Error() string { return ErrExpired.Error() }

// Unwrap makes errors.Is(err, ErrExpired) true.
func (e *ExpiredError) Unwrap() error { return ErrExpired }

// ClosedError reports a session that was already closed.
type ClosedError struct {
	SessionID string
}

// Error returns the constant text of ErrClosed; the details stay in the
// fields.
func (e *ClosedError) Error() string { return ErrClosed.Error() }

// Unwrap makes errors.Is(err, ErrClosed) true.
func (e *ClosedError) Unwrap() error { return ErrClosed }

// BudgetError reports a call batch that would exceed the call budget.
type BudgetError struct {
	SessionID string
	Limit     int64 // the session's call budget
	Used      int64 // calls made before this request
	Requested int64 // calls in the refused batch
}

// Error returns the constant text of ErrBudgetExceeded; the details stay in the
// fields.
func (e *BudgetError) Error() string { return ErrBudgetExceeded.Error() }

// Unwrap makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// ToolError reports the first requested tool that is not authorized.
type ToolError struct {
	SessionID string
	Tool      string
}

// Error returns the constant text of ErrToolNotAuthorized; the details stay in the
// fields.
func (e *ToolError) Error() string { return ErrToolNotAuthorized.Error() }

// Unwrap makes errors.Is(err, ErrToolNotAuthorized) true.
func (e *ToolError) Unwrap() error { return ErrToolNotAuthorized }

// RateLimitError reports a batch that would exceed the rate limit.
type RateLimitError struct {
	SessionID   string
	Limit       int64         // calls allowed per window
	Window      time.Duration // window length
	WindowCalls int64         // calls already made in the current window
	Requested   int64         // calls in the refused batch
}

// Error returns the constant text of ErrRateLimited; the details stay in the
// fields.
func (e *RateLimitError) Error() string { return ErrRateLimited.Error() }

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// AgentMismatchError reports a caller presenting another agent's session.
type AgentMismatchError struct {
	SessionID string
	Expected  string
	Actual    string
}

// Error returns the constant text of ErrAgentMismatch; the details stay in the
// fields.
func (e *AgentMismatchError) Error() string { return ErrAgentMismatch.Error() }

// Unwrap makes errors.Is(err, ErrAgentMismatch) true.
func (e *AgentMismatchError) Unwrap() error { return ErrAgentMismatch }

// TooManySessionsError reports a session cap that is reached. AgentID is
// empty for the global cap.
type TooManySessionsError struct {
	AgentID string
	Max     int64
	Current int64
}

// Error returns the constant text of ErrTooManySessions; the details stay in the
// fields.
func (e *TooManySessionsError) Error() string { return ErrTooManySessions.Error() }

// Unwrap makes errors.Is(err, ErrTooManySessions) true.
func (e *TooManySessionsError) Unwrap() error { return ErrTooManySessions }

// InvalidInputError names the field of a request that was rejected and why.
// Field and Reason describe the shape of the input only, never stored data.
type InvalidInputError struct {
	Field  string
	Reason string
	// Smallest is set for a duration the store cannot keep exactly (finer
	// than DurationPrecision): the smallest value it can keep, which is
	// also the step of the values it keeps. Zero otherwise.
	Smallest time.Duration
}

// Error names the field and the reason, which describe the shape of the
// input only.
func (e *InvalidInputError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrInvalidInput, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidInput) true.
func (e *InvalidInputError) Unwrap() error { return ErrInvalidInput }

// Invalid returns an *InvalidInputError for field.
func Invalid(field, reason string) error {
	return &InvalidInputError{Field: field, Reason: reason}
}

// ConflictError reports a write that contradicts what is stored.
type ConflictError struct {
	Resource string
	ID       string
	Reason   string
}

// Error returns the constant text of ErrConflict; the details stay in the
// fields.
func (e *ConflictError) Error() string { return ErrConflict.Error() }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// SchemaTooNewError reports a database migrated past what this binary knows.
type SchemaTooNewError struct {
	DatabaseVersion int64
	BinaryVersion   int64
}

// Error includes both versions: they describe the binary and the
// database, not a caller's data.
func (e *SchemaTooNewError) Error() string {
	return fmt.Sprintf("%s (database version %d, binary supports up to %d)",
		ErrSchemaTooNew, e.DatabaseVersion, e.BinaryVersion)
}

// Unwrap makes errors.Is(err, ErrSchemaTooNew) true.
func (e *SchemaTooNewError) Unwrap() error { return ErrSchemaTooNew }
