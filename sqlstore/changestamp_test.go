package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// TestChangeStamp: the stamp stays while only reads happen, and changes
// after a commit of this store, of another Store on the same file (what
// another process is to SQLite: another connection), and of every one of
// many concurrent appends; after Close it is ErrClosed.
func TestChangeStamp(t *testing.T) {
	ctx := context.Background()
	st, path := openTestStore(t)
	other, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stamp := func() uint64 {
		t.Helper()
		v, err := st.ChangeStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	s0 := stamp()
	if _, err := st.AgentSessions().GetState(ctx, store.SessionKey{App: "a"}); err != nil {
		t.Fatal(err)
	}
	if s1 := stamp(); s1 != s0 {
		t.Fatalf("stamp moved without a commit: %d then %d", s0, s1)
	}
	if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
		t.Fatal(err)
	}
	s2 := stamp()
	if s2 == s0 {
		t.Fatal("stamp did not move after this store's commit")
	}
	if _, err := other.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key,
		Event: store.AgentEvent{ID: "e1", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	s3 := stamp()
	if s3 == s2 {
		t.Fatal("stamp did not move after another store's commit")
	}
	// Every commit moves it, however many race with the readers of it.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 8 {
				before, err := st.ChangeStamp(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				ev := store.AgentEvent{ID: "w" + string(rune('a'+w)) + string(rune('a'+i)), Data: []byte(`{}`)}
				if _, err := other.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev}); err != nil {
					t.Error(err)
					return
				}
				after, err := st.ChangeStamp(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if after == before {
					t.Errorf("stamp %d did not move across a commit", before)
				}
			}
		})
	}
	wg.Wait()
	if s4 := stamp(); s4 == s3 {
		t.Fatal("stamp did not move after 32 commits")
	}
	st.Close()
	if _, err := st.ChangeStamp(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// TestChangeStampUnderSnapshot: under a ReadSnapshot context there is no
// stamp (a cached result could be of another instant than the snapshot).
func TestChangeStampUnderSnapshot(t *testing.T) {
	ctx := context.Background()
	st, _ := openTestStore(t)
	if _, err := st.ChangeStamp(ctx); err != nil {
		t.Fatal(err)
	}
	err := st.ReadSnapshot(ctx, func(ctx context.Context) error {
		_, err := st.ChangeStamp(ctx)
		return err
	})
	if !errors.Is(err, store.ErrNoChangeStamp) {
		t.Fatalf("under a snapshot: %v, want ErrNoChangeStamp", err)
	}
}
