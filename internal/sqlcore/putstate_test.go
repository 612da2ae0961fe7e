package sqlcore

import (
	"database/sql"
	"encoding/json"
	"slices"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// countTx is a Tx that records the statements it is given and runs none.
type countTx struct {
	Tx
	execs []string
	keys  []any
}

func (t *countTx) Exec(query string, args ...any) (sql.Result, error) {
	t.execs = append(t.execs, query)
	if len(args) > 1 {
		t.keys = append(t.keys, args[1])
	}
	return nil, nil
}

// TestPutStateOrderAndAllocations checks that putState writes each
// scope's keys in sorted order (app, user, then session scope), and that
// ordering them costs no allocation for an empty scope and one per scope
// that has keys: an append of a runner's event (a session-scope delta,
// empty app and user scopes) paid about a dozen for the iterator form.
func TestPutStateOrderAndAllocations(t *testing.T) {
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	delta := store.ScopedState{
		App:     map[string]json.RawMessage{"z": json.RawMessage(`1`), "b": json.RawMessage(`2`)},
		User:    map[string]json.RawMessage{"y": json.RawMessage(`3`)},
		Session: map[string]json.RawMessage{"progress": json.RawMessage(`{}`), "turn": json.RawMessage(`4`), "last": json.RawMessage(`5`)},
	}
	tx := &countTx{}
	if err := putState(tx, "", key, 7, delta); err != nil {
		t.Fatal(err)
	}
	want := []string{stAppPutSQL, stAppPutSQL, stUserPutSQL, stSessionPutSQL, stSessionPutSQL, stSessionPutSQL}
	if !slices.Equal(tx.execs, want) {
		t.Fatalf("statements %q, want %q", tx.execs, want)
	}
	if got, want := tx.keys, []any{"b", "z", "u", "last", "progress", "turn"}; !slices.Equal(got, want) {
		t.Fatalf("keys in the order %v, want %v", got, want)
	}

	// Allocations, through a Tx that keeps nothing: none to order an
	// empty delta; for a two-key session scope, one for its sorted keys
	// and four per key for the statement's arguments (the variadic slice,
	// the key and the value boxed, the value's conversion to a string).
	// The iterator form, slices.Sorted(maps.Keys(m)), cost 19 here.
	var quiet Tx = nopTx{}
	if n := testing.AllocsPerRun(100, func() { putState(quiet, "", key, 7, store.ScopedState{}) }); n != 0 {
		t.Errorf("putState of an empty delta allocates %.0f times, want 0", n)
	}
	session := store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(`4`), "progress": json.RawMessage(`{"step":4}`)}}
	if n := testing.AllocsPerRun(100, func() { putState(quiet, "", key, 7, session) }); n > 1+2*4 {
		t.Errorf("putState of a two-key session delta allocates %.0f times, want at most %d", n, 1+2*4)
	}
}

// nopTx is a Tx whose Exec keeps nothing of its arguments.
type nopTx struct{ Tx }

func (nopTx) Exec(string, ...any) (sql.Result, error) { return nil, nil }
