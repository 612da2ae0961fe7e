package sqlstore

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agentstore/sessionstore/store"
)

// invalidOption reports a bad Option value.
func invalidOption(name, reason string) error {
	return store.Invalid("option "+name, reason)
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// isUniqueViolation reports whether err is a PRIMARY KEY or UNIQUE failure.
func isUniqueViolation(err error) bool {
	if err == nil { // the common case, without the error value errors.As needs
		return false
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code()
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// storageSentinels are the store errors mapErr wraps SQLite errors in.
var storageSentinels = []error{
	store.ErrBusy, store.ErrStorage, store.ErrConflict, store.ErrNotSessionStore,
}

// mapErr is the one place where SQLite failures become store errors: the
// result keeps the driver error in its chain and matches the store sentinel
// with errors.Is: ErrBusy, ErrConflict (a constraint), or ErrStorage with
// its kind (full, read-only, corrupt, I/O; or none). Errors that are
// already store errors pass through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	code := sqliteCode(err)
	if code == 0 {
		return err
	}
	for _, s := range storageSentinels {
		if errors.Is(err, s) { // mapped already
			return err
		}
	}
	var sentinel error
	switch code {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_PROTOCOL:
		sentinel = store.ErrBusy
	case sqlite3.SQLITE_FULL:
		sentinel = store.ErrStorageFull
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		sentinel = store.ErrReadOnly
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT:
		sentinel = store.ErrCorrupt
	case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_NOLFS:
		sentinel = store.ErrIO
	case sqlite3.SQLITE_CONSTRAINT:
		sentinel = store.ErrConflict
	case sqlite3.SQLITE_ERROR, sqlite3.SQLITE_MISUSE, sqlite3.SQLITE_RANGE, sqlite3.SQLITE_INTERRUPT:
		// A statement the engine refused (SQL logic error, misuse, a bad
		// parameter index), or one interrupted because the caller's
		// context ended: not a failure of the storage.
		return fmt.Errorf("sqlstore: %w", err)
	default:
		// Any other failure of the engine (out of memory, a value too big,
		// a schema change mid-statement, ...) is a storage failure of no
		// more specific kind.
		sentinel = store.ErrStorage
	}
	return fmt.Errorf("%w: %w", sentinel, err)
}

// MapError returns err as the store returns SQLite failures: matching
// store.ErrBusy, store.ErrConflict, or store.ErrStorage with its kind
// (store.ErrStorageFull, store.ErrReadOnly, store.ErrCorrupt,
// store.ErrIO), the driver error kept in its chain. Errors that are not
// SQLite's pass unchanged. It is for tools that run their own queries on
// a connection from OpenInspect.
func MapError(err error) error { return mapErr(err) }
