package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// refusalSentinels are the kinds a request can be refused with (or that
// report a bad request, a conflict or a closed store): never a storage
// failure.
var refusalSentinels = []error{
	store.ErrNotFound, store.ErrExpired, store.ErrBudgetExceeded, store.ErrToolNotAuthorized,
	store.ErrClosed, store.ErrRateLimited, store.ErrAgentMismatch, store.ErrTooManySessions,
	store.ErrInvalidInput, store.ErrConflict, store.ErrSchemaTooNew, store.ErrNotSessionStore,
	store.ErrStoreClosed, store.ErrBusy,
}

// TestStorageSentinels: every storage kind (full, read-only, corrupt, I/O)
// matches ErrStorage, wrapped or not, and nothing else; no refusal kind
// matches ErrStorage; ErrStorage matches none of its kinds.
func TestStorageSentinels(t *testing.T) {
	kinds := []error{store.ErrStorageFull, store.ErrReadOnly, store.ErrCorrupt, store.ErrIO}
	if got := store.StorageSentinels(); len(got) != len(kinds)+1 || got[0] != store.ErrStorage {
		t.Fatalf("StorageSentinels() = %v", got)
	}
	for _, k := range kinds {
		for _, err := range []error{k, fmt.Errorf("%w: disk I/O error (1034)", k)} {
			if !errors.Is(err, store.ErrStorage) || !errors.Is(err, k) {
				t.Errorf("%q: matches ErrStorage %v, itself %v", err, errors.Is(err, store.ErrStorage), errors.Is(err, k))
			}
			for _, other := range kinds {
				if other != k && errors.Is(err, other) {
					t.Errorf("%q also matches %q", err, other)
				}
			}
			for _, r := range refusalSentinels {
				if errors.Is(err, r) {
					t.Errorf("storage failure %q matches %q", err, r)
				}
			}
		}
		if errors.Is(store.ErrStorage, k) {
			t.Errorf("ErrStorage matches its kind %q", k)
		}
	}
	for _, r := range refusalSentinels {
		if errors.Is(r, store.ErrStorage) {
			t.Errorf("%q matches ErrStorage", r)
		}
	}
	// The typed refusals never match it either.
	for _, err := range []error{
		&store.ClosedError{}, &store.ExpiredError{}, &store.BudgetError{}, &store.ToolError{},
		&store.RateLimitError{}, &store.AgentMismatchError{}, &store.TooManySessionsError{},
		&store.NotFoundError{}, &store.ConflictError{}, store.Invalid("f", "r"), &store.SchemaTooNewError{},
	} {
		if errors.Is(err, store.ErrStorage) {
			t.Errorf("%T matches ErrStorage", err)
		}
	}
}

// TestIsUseRefusal: a Use's refusals, bare, typed or wrapped, are
// refusals; invalid input, storage failures, contention, a closed store and
// nil are not.
func TestIsUseRefusal(t *testing.T) {
	refusals := []error{
		store.ErrBudgetExceeded, &store.BudgetError{}, &store.ToolError{}, &store.RateLimitError{},
		fmt.Errorf("use: %w", &store.ExpiredError{}), &store.ClosedError{}, &store.AgentMismatchError{},
		&store.TooManySessionsError{}, &store.NotFoundError{Resource: "session"}, &store.ConflictError{},
	}
	for _, err := range refusals {
		if !store.IsUseRefusal(err) {
			t.Errorf("IsUseRefusal(%#v) = false, want true", err)
		}
	}
	others := []error{
		nil, errors.New("other"), store.ErrInvalidInput, &store.InvalidInputError{Field: "session_id"},
		store.ErrStorage, store.ErrIO, store.ErrBusy, store.ErrStoreClosed, store.ErrSchemaTooNew,
		store.ErrNotSessionStore, store.ErrSpendLimitExceeded,
		// invalid input wins over a refusal kind it also matches
		errors.Join(store.ErrInvalidInput, store.ErrConflict),
	}
	for _, err := range others {
		if store.IsUseRefusal(err) {
			t.Errorf("IsUseRefusal(%#v) = true, want false", err)
		}
	}
	for _, k := range store.UseRefusals() {
		if !store.IsUseRefusal(k) {
			t.Errorf("IsUseRefusal(%v) = false for a sentinel of UseRefusals", k)
		}
	}
}
