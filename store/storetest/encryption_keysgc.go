package storetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Collection of orphan data keys (store.KeyCollector).

// collector returns st as a KeyCollector, failing t when the backend
// does not collect orphan keys.
func collector(t *testing.T, st store.Store) store.KeyCollector {
	t.Helper()
	c, ok := st.(store.KeyCollector)
	if !ok {
		t.Fatalf("%T does not implement store.KeyCollector", st)
	}
	return c
}

// ageKey sets the modification time of key id's file in the keyring dir.
func ageKey(t *testing.T, dir, id string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(filepath.Join(dir, id), at, at); err != nil {
		t.Fatal(err)
	}
}

// testEncKeysGC: an orphan key is kept within the grace period (by the
// store's clock), shredded after it, and a key any session row names
// (agent session, runtime session) never is, however old.
func testEncKeysGC(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st := e.open(e.ring)
	e.fill(st, encKey("agent"), 1)
	e.fillRuntime(st, "rt")
	orphan, _, err := e.ring.NewKey(e.ctx) // as a crash before the commit leaves it
	if err != nil {
		t.Fatal(err)
	}
	ids, err := e.ring.IDs()
	if err != nil || len(ids) != 3 {
		t.Fatalf("keys %v, %v", ids, err)
	}
	// Every key was written at the store's "now"; the named ones are
	// made far older than any grace period.
	for _, id := range ids {
		at := e.clock.Now()
		if id != orphan {
			at = at.Add(-100 * 24 * time.Hour)
		}
		ageKey(t, e.dir, id, at)
	}
	c := collector(t, st)
	const grace = 10 * time.Minute
	if _, err := c.CollectOrphanKeys(e.ctx, store.CollectKeysRequest{Grace: -time.Second}); !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("negative grace: %v", err)
	}
	e.clock.Advance(grace - time.Second)
	res, err := c.CollectOrphanKeys(e.ctx, store.CollectKeysRequest{Grace: grace})
	if err != nil || res.Keys != 3 || res.Named != 2 || res.Young != 1 || len(res.Orphans) != 0 || res.Shredded != 0 {
		t.Fatalf("within the grace period: %+v, %v", res, err)
	}
	e.clock.Advance(2 * time.Second)
	res, err = c.CollectOrphanKeys(e.ctx, store.CollectKeysRequest{Grace: grace, DryRun: true})
	if err != nil || len(res.Orphans) != 1 || res.Orphans[0] != orphan || res.Shredded != 0 || !res.DryRun {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	if _, err := e.ring.Key(e.ctx, orphan); err != nil {
		t.Fatalf("a dry run shredded the orphan: %v", err)
	}
	res, err = c.CollectOrphanKeys(e.ctx, store.CollectKeysRequest{Grace: grace})
	if err != nil || len(res.Orphans) != 1 || res.Orphans[0] != orphan || res.Shredded != 1 || res.Named != 2 {
		t.Fatalf("after the grace period: %+v, %v", res, err)
	}
	if _, err := e.ring.Key(e.ctx, orphan); !errors.Is(err, store.ErrKeyShredded) {
		t.Fatalf("orphan after gc: %v", err)
	}
	// The named keys' sessions still read.
	if _, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: encKey("agent"), IncludeEvents: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Runtime().ReadUpload(e.ctx, "rt", "r1"); err != nil {
		t.Fatal(err)
	}
	// Without a keyring there is nothing to list.
	if _, err := collector(t, e.open(nil)).CollectOrphanKeys(e.ctx, store.CollectKeysRequest{}); !errors.Is(err, store.ErrKeyUnavailable) {
		t.Fatalf("without a keyring: %v", err)
	}
}

// testEncKeysGCConcurrentCreates runs collections while goroutines create
// encrypted agent and runtime sessions, with the store's clock on real
// time (the key files' times): no created session loses its key, and an
// orphan aged past the grace period is collected meanwhile.
func testEncKeysGCConcurrentCreates(t *testing.T, h Harness) {
	e := newEncEnv(t, h)
	st, err := e.h.OpenWith(e.ctx, e.loc, time.Now, Options{Keys: e.ring})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	orphan, _, err := e.ring.NewKey(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ageKey(t, e.dir, orphan, time.Now().Add(-time.Hour))
	c := collector(t, st)
	workers, per := 4, 6
	if raceEnabled {
		per = 3
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*per*2+1)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := st.Runtime().Insert(e.ctx, store.NewRuntimeSession{ID: id, AgentAlias: "a", ChatMode: store.ChatModeChat, WorkspaceDir: "/w/" + id}); err != nil {
					errs <- err
				}
				if _, err := st.AgentSessions().CreateSession(e.ctx, store.CreateAgentSessionRequest{Key: encKey(id)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	done := make(chan struct{})
	collected := 0
	go func() {
		defer close(done)
		for range 2 * per {
			res, err := c.CollectOrphanKeys(e.ctx, store.CollectKeysRequest{Grace: time.Minute})
			if err != nil {
				errs <- err
				return
			}
			collected += res.Shredded
		}
	}()
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if collected != 1 {
		t.Fatalf("collected %d orphans, want the one aged past the grace period", collected)
	}
	for w := range workers {
		for i := range per {
			id := fmt.Sprintf("w%d-%d", w, i)
			if _, err := st.Runtime().Get(e.ctx, id); err != nil {
				t.Fatalf("runtime session %s after concurrent collections: %v", id, err)
			}
			if _, err := st.AgentSessions().GetSession(e.ctx, store.GetAgentSessionRequest{Key: encKey(id)}); err != nil {
				t.Fatalf("agent session %s after concurrent collections: %v", id, err)
			}
		}
	}
	if ids, _ := e.ring.IDs(); len(ids) != 2*workers*per {
		t.Fatalf("keyring holds %d keys, want %d", len(ids), 2*workers*per)
	}
}
