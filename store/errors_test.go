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
