package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/store"
)

// SQLSTATE codes the store reacts to.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeLockNotAvailable     = "55P03"
	codeDivisionByZero       = "22012" // useWriteGroupSQL's signal of a row not found
	codeDiskFull             = "53100"
	codeOutOfMemory          = "53200"
	codeTooManyConnections   = "53300"
	codeReadOnlyTransaction  = "25006"
	codeInsufficientPriv     = "42501"
	codeDataCorrupted        = "XX001"
	codeIndexCorrupted       = "XX002"
	codeIOError              = "58030"
	codeAdminShutdown        = "57P01"
	codeCannotConnectNow     = "57P03"
)

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// isRetryable reports whether PostgreSQL aborted the transaction so that
// running it again from the start may succeed.
func isRetryable(err error) bool {
	c := pgCode(err)
	return c == codeSerializationFailure || c == codeDeadlockDetected
}

// isUniqueViolation reports whether err is a PRIMARY KEY or UNIQUE failure.
func isUniqueViolation(err error) bool { return pgCode(err) == codeUniqueViolation }

// isForeignKeyViolation reports whether err is a FOREIGN KEY failure.
func isForeignKeyViolation(err error) bool { return pgCode(err) == codeForeignKeyViolation }

// mapErr is the one place where PostgreSQL failures become store errors:
// the result keeps the driver error in its chain and matches the store
// sentinel with errors.Is. Store errors and context errors pass through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	if isStoreError(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code := pgCode(err)
	var sentinel error
	switch {
	case code == "" && brokenConnection(err):
		sentinel = store.ErrIO
	case code == "":
		return fmt.Errorf("pgstore: %w", err)
	case code == codeSerializationFailure, code == codeDeadlockDetected, code == codeLockNotAvailable,
		code == codeTooManyConnections, code == codeOutOfMemory, code == codeAdminShutdown, code == codeCannotConnectNow:
		sentinel = store.ErrBusy
	case code == codeDiskFull:
		sentinel = store.ErrStorageFull
	case code == codeReadOnlyTransaction, code == codeInsufficientPriv:
		sentinel = store.ErrReadOnly
	case code == codeDataCorrupted, code == codeIndexCorrupted:
		sentinel = store.ErrCorrupt
	case code == codeIOError, strings.HasPrefix(code, "58"): // system error (I/O, files)
		sentinel = store.ErrIO
	case code[:2] == "23": // integrity constraint violation
		sentinel = store.ErrConflict
	case strings.HasPrefix(code, "53"), strings.HasPrefix(code, "XX"):
		// Other insufficient resources and internal errors of the server:
		// storage failures of no more specific kind.
		sentinel = store.ErrStorage
	default:
		return fmt.Errorf("pgstore: %w", err)
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// brokenConnection reports whether err says that the connection to the
// server failed or broke (refused, reset, closed mid-statement, timed out
// on the network), rather than that the server refused the statement.
func brokenConnection(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// storeSentinels are the errors that already speak the store's language.
var storeSentinels = []error{
	store.ErrNotFound, store.ErrExpired, store.ErrBudgetExceeded, store.ErrToolNotAuthorized,
	store.ErrClosed, store.ErrRateLimited, store.ErrAgentMismatch, store.ErrTooManySessions,
	store.ErrInvalidInput, store.ErrConflict, store.ErrSchemaTooNew, store.ErrNotSessionStore,
	store.ErrStoreClosed, store.ErrBusy, store.ErrStorage,
	store.ErrKeyUnavailable, store.ErrKeyShredded, store.ErrKeyAbsent, store.ErrKeyMismatch,
}

func isStoreError(err error) bool {
	for _, s := range storeSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
