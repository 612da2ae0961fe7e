package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// TestCancelCauseRowsDoNotAccumulate: a cause row lives until it is both
// taken and its turn ended (in either order), or until its turn's lease
// has lapsed and it is reaped; none is left behind otherwise. (The
// conformance suite checks what the API returns; this counts the rows.)
func TestCancelCauseRowsDoNotAccumulate(t *testing.T) {
	ctx := context.Background()
	clock := storetest.NewClock()
	path := FreshDBPath(t, "sessions.db")
	s, err := Open(ctx, path, WithClock(clock.Now), WithTurnLease(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rt := s.Runtime()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	insert := func(id string) {
		_, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "x", WorkspaceDir: ".", ChatMode: "chat"})
		must(err)
	}
	begin := func(id string) uint64 {
		gen, _, err := rt.BeginTurn(ctx, id)
		must(err)
		return gen
	}
	take := func(id string, gen uint64) {
		t.Helper()
		if _, ok, err := rt.TakeCancelCause(ctx, id, gen); err != nil || !ok {
			t.Fatalf("TakeCancelCause(%s, %d) = %v, %v", id, gen, ok, err)
		}
	}
	end := func(id string, gen uint64) {
		_, err := rt.EndTurn(ctx, id, gen)
		must(err)
	}
	rows := func(want int) {
		t.Helper()
		if n := count(t, s, "runtime_cancel_causes"); n != want {
			t.Fatalf("%d cause rows, want %d", n, want)
		}
	}
	insert("s")
	// Cancel, take, end.
	g := begin("s")
	_, err = rt.Cancel(ctx, "s", store.CauseClientRequest)
	must(err)
	take("s", g)
	rows(1)
	end("s", g)
	rows(0)
	// Cancel, end, take.
	g = begin("s")
	_, err = rt.Cancel(ctx, "s", store.CauseClientRequest)
	must(err)
	end("s", g)
	rows(1)
	take("s", g)
	rows(0)
	// Superseded: end of the old turn, then take.
	g1 := begin("s")
	g2 := begin("s")
	end("s", g1)
	take("s", g1)
	rows(0)
	// Killed: end (session gone), then take.
	_, err = rt.Kill(ctx, "s")
	must(err)
	end("s", g2)
	take("s", g2)
	rows(0)
	// Never taken: kept while its store lives, reaped once it is gone.
	insert("t")
	g = begin("t")
	_, err = rt.Cancel(ctx, "t", store.CauseClientRequest)
	must(err)
	end("t", g)
	rows(1)
	if n, err := rt.ReapCancelCauses(ctx); err != nil || n != 0 {
		t.Fatalf("ReapCancelCauses while its store lives = %d, %v", n, err)
	}
	s.Close()
	clock.Advance(time.Second)
	s2, err := Open(ctx, path, WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if n, err := s2.Runtime().ReapCancelCauses(ctx); err != nil || n != 1 {
		t.Fatalf("ReapCancelCauses once its store is gone = %d, %v; want 1", n, err)
	}
	if n := count(t, s2, "runtime_cancel_causes"); n != 0 {
		t.Fatalf("%d cause rows after reaping", n)
	}
}

// TestTurnLeaseOptionValidated: the lease must be from 100ms to 24h.
func TestTurnLeaseOptionValidated(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, 0, 99 * time.Millisecond, 25 * time.Hour} {
		_, err := Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), WithTurnLease(d))
		if !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("WithTurnLease(%v): %v, want ErrInvalidInput", d, err)
		}
	}
}
