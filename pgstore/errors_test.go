package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/store"
)

func TestMapErrSentinels(t *testing.T) {
	cases := []struct {
		code string
		want error
	}{
		{codeUniqueViolation, store.ErrConflict},
		{codeForeignKeyViolation, store.ErrConflict},
		{"23514", store.ErrConflict}, // check violation
		{codeSerializationFailure, store.ErrBusy},
		{codeDeadlockDetected, store.ErrBusy},
		{codeLockNotAvailable, store.ErrBusy},
		{codeTooManyConnections, store.ErrBusy},
		{codeDiskFull, store.ErrStorageFull},
		{codeReadOnlyTransaction, store.ErrReadOnly},
		{codeInsufficientPriv, store.ErrReadOnly},
		{codeDataCorrupted, store.ErrCorrupt},
		{codeIndexCorrupted, store.ErrCorrupt},
		{codeIOError, store.ErrIO},
		{"58P01", store.ErrIO},      // undefined file
		{"53400", store.ErrStorage}, // configuration limit exceeded
		{"XX000", store.ErrStorage}, // internal error
	}
	kinds := []error{store.ErrBusy, store.ErrConflict, store.ErrStorageFull, store.ErrReadOnly, store.ErrCorrupt, store.ErrIO}
	for _, c := range cases {
		pe := &pgconn.PgError{Code: c.code, Message: "server says no"}
		got := mapErr(fmt.Errorf("query: %w", pe))
		if !errors.Is(got, c.want) {
			t.Errorf("%s: mapped to %v, want %v", c.code, got, c.want)
		}
		for _, k := range kinds {
			if k != c.want && errors.Is(got, k) {
				t.Errorf("%s: mapped to %v, which also matches %v", c.code, got, k)
			}
		}
		// Every storage failure, and only a storage failure, matches
		// ErrStorage.
		storage := c.want != store.ErrBusy && c.want != store.ErrConflict
		if errors.Is(got, store.ErrStorage) != storage {
			t.Errorf("%s: mapped to %v: matches ErrStorage %v, want %v", c.code, got, !storage, storage)
		}
		var back *pgconn.PgError
		if !errors.As(got, &back) || back.Code != c.code {
			t.Errorf("%s: driver error lost from the chain: %v", c.code, got)
		}
	}
	// Unknown server errors and client errors keep their text, match no
	// store sentinel.
	for _, err := range []error{&pgconn.PgError{Code: "42P01"}, errors.New("connection refused")} {
		got := mapErr(err)
		if isStoreError(got) || !errors.Is(got, err) {
			t.Errorf("%v mapped to %v", err, got)
		}
	}
	// A connection that broke is an I/O failure.
	for _, err := range []error{io.ErrUnexpectedEOF, &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}} {
		got := mapErr(fmt.Errorf("receive message: %w", err))
		if !errors.Is(got, store.ErrIO) || !errors.Is(got, store.ErrStorage) || !errors.Is(got, err) {
			t.Errorf("%v mapped to %v, want ErrIO with the cause kept", err, got)
		}
	}
	// Store errors and context errors pass through untouched.
	nf := &store.NotFoundError{Resource: "session", ID: "x"}
	if got := mapErr(nf); got != error(nf) {
		t.Errorf("store error rewrapped: %v", got)
	}
	if got := mapErr(context.Canceled); got != context.Canceled {
		t.Errorf("context error rewrapped: %v", got)
	}
	if mapErr(nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

func TestRetryRunsWholeFunctionAgainBounded(t *testing.T) {
	s := &Store{cfg: defaultConfig()}
	s.cfg.maxAttempts = 4
	ctx := context.Background()

	// Two serialization failures, then success: three runs, no error.
	runs := 0
	err := s.retry(ctx, func(context.Context) error {
		runs++
		if runs < 3 {
			return &pgconn.PgError{Code: codeSerializationFailure}
		}
		return nil
	})
	if err != nil || runs != 3 {
		t.Fatalf("retry: %d runs, %v; want 3 runs, nil", runs, err)
	}

	// Deadlocks forever: maxAttempts runs, then ErrBusy.
	runs = 0
	err = s.retry(ctx, func(context.Context) error {
		runs++
		return &pgconn.PgError{Code: codeDeadlockDetected}
	})
	if runs != 4 || !errors.Is(err, store.ErrBusy) {
		t.Fatalf("retry: %d runs, %v; want 4 runs, ErrBusy", runs, err)
	}

	// Other errors are not retried.
	runs = 0
	err = s.retry(ctx, func(context.Context) error {
		runs++
		return &pgconn.PgError{Code: codeUniqueViolation}
	})
	if runs != 1 || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("retry: %d runs, %v; want 1 run, ErrConflict", runs, err)
	}

	// A canceled context stops the backoff.
	cctx, cancel := context.WithCancel(ctx)
	runs = 0
	err = s.retry(cctx, func(context.Context) error {
		runs++
		cancel()
		return &pgconn.PgError{Code: codeSerializationFailure}
	})
	if runs != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("retry after cancel: %d runs, %v", runs, err)
	}

	// A closed store runs nothing.
	s.closed.Store(true)
	if err := s.retry(ctx, func(context.Context) error { t.Fatal("ran on a closed store"); return nil }); !errors.Is(err, store.ErrStoreClosed) {
		t.Fatalf("closed store: %v", err)
	}
}
