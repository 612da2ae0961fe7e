package adk_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/adk"
)

// appendShared appends n events through its own handle of a session that
// other writers append to as well, refreshing and retrying when the handle
// is stale. Each event records the handle version it was decided on, so
// the log shows whether any event was written on top of a history its
// writer had not seen. It returns the number of stale refusals.
func appendShared(ctx context.Context, svc *adk.Service, app, user, id, writer string, n int) (int, error) {
	got, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id})
	if err != nil {
		return 0, err
	}
	h := got.Session.(*adk.Session)
	stale := 0
	for i := range n {
		for {
			ev := &session.Event{
				ID:           fmt.Sprintf("%s-%d", writer, i),
				Author:       writer,
				InvocationID: writer,
				LLMResponse:  model.LLMResponse{CustomMetadata: map[string]any{"decided_at": float64(h.Version())}},
				Actions:      session.EventActions{StateDelta: map[string]any{"last": writer}},
			}
			err := svc.AppendEvent(ctx, h, ev)
			if errors.Is(err, adk.ErrStaleSession) {
				stale++
				if err := svc.Refresh(ctx, h); err != nil {
					return stale, err
				}
				continue
			}
			if err != nil {
				return stale, err
			}
			break
		}
	}
	return stale, nil
}

// appendOwn creates a session and appends workers×n events to it from
// workers goroutines sharing its one handle.
func appendOwn(ctx context.Context, svc *adk.Service, app, user, id string, workers, n int) error {
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: id})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range n {
				ev := &session.Event{
					ID:     fmt.Sprintf("w%d-%d", w, i),
					Author: "agent",
					Actions: session.EventActions{StateDelta: map[string]any{
						"w" + strconv.Itoa(w): float64(i), "user:seen-" + id: float64(i),
					}},
				}
				if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// verifyLog checks a session's log: want events, each id once, and for a
// shared session every event decided on the version right before it.
func verifyLog(t *testing.T, svc *adk.Service, app, user, id string, want int, shared bool) session.Session {
	t.Helper()
	s := mustGet(t, svc, app, user, id)
	if n := s.Events().Len(); n != want {
		t.Fatalf("session %s has %d events, want %d", id, n, want)
	}
	seen := map[string]bool{}
	i := 0
	for ev := range s.Events().All() {
		if seen[ev.ID] {
			t.Fatalf("event %s stored twice", ev.ID)
		}
		seen[ev.ID] = true
		if shared {
			// Version 1 is the new session; the event at index i was
			// appended at version i+1.
			if got := ev.CustomMetadata["decided_at"]; got != float64(i+1) {
				t.Fatalf("event %s at index %d was decided at version %v: histories interleaved", ev.ID, i, got)
			}
		}
		i++
	}
	if v := s.(*adk.Session).Version(); v != int64(want+1) {
		t.Fatalf("session %s at version %d, want %d", id, v, want+1)
	}
	return s
}

// TestConcurrentAppendsOneHandle: goroutines sharing one handle never
// refuse each other and lose nothing.
func TestConcurrentAppendsOneHandle(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	const workers, n = 16, 40
	if err := appendOwn(ctx, svc, "app", "u", "s", workers, n); err != nil {
		t.Fatalf("append: %v", err)
	}
	s := verifyLog(t, svc, "app", "u", "s", workers*n, false)
	for w := range workers {
		if v, _ := s.State().Get("w" + strconv.Itoa(w)); v != float64(n-1) {
			t.Fatalf("worker %d's last delta reads %v", w, v)
		}
	}
}

// TestConcurrentWritersOneSession: goroutines with handles of their own on
// one session: stale handles are refused, refreshed and retried; every
// event lands once, on the history its writer saw.
func TestConcurrentWritersOneSession(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const writers, n = 6, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	stale := 0
	for w := range writers {
		wg.Go(func() {
			s, err := appendShared(ctx, svc, "app", "u", "shared", "w"+strconv.Itoa(w), n)
			mu.Lock()
			stale += s
			mu.Unlock()
			if err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		})
	}
	wg.Wait()
	verifyLog(t, svc, "app", "u", "shared", writers*n, true)
	t.Logf("%d appends, %d stale refusals refreshed and retried", writers*n, stale)
}

func init() {
	helperRoles["appender"] = appenderRole
}

// appenderRole: args are writer name and n. It appends 4×n events through
// one handle to a session of its own, and n events to the session
// "shared" (which must exist) with refresh and retry, concurrently, and
// reports {"stale":M}. Any error fails the process.
func appenderRole(ctx context.Context, svc *adk.Service, args []string, out io.Writer) error {
	if len(args) != 2 {
		return fmt.Errorf("appender wants 2 args, got %d", len(args))
	}
	writer := args[0]
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	var ownErr, sharedErr error
	stale := 0
	wg.Go(func() { ownErr = appendOwn(ctx, svc, "app", writer, "own", 4, n) })
	wg.Go(func() { stale, sharedErr = appendShared(ctx, svc, "app", "u", "shared", writer, n) })
	wg.Wait()
	if err := errors.Join(ownErr, sharedErr); err != nil {
		return err
	}
	return writeJSON(out, map[string]int{"stale": stale})
}

// TestTwoProcessesOneFile: a second OS process and this one append to the
// same file at the same time (each to a session of its own from four
// goroutines, and both to one shared session): no error of any kind (no
// "database is locked"), no event lost or duplicated, no interleaving.
func TestTwoProcessesOneFile(t *testing.T) {
	svc, path := openService(t)
	ctx := context.Background()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const n = 60
	var report struct{ Stale int }
	wait := spawnHelper(t, path, "appender", &report, "child", strconv.Itoa(n))
	var wg sync.WaitGroup
	var ownErr, sharedErr error
	parentStale := 0
	wg.Go(func() { ownErr = appendOwn(ctx, svc, "app", "parent", "own", 4, n) })
	wg.Go(func() { parentStale, sharedErr = appendShared(ctx, svc, "app", "u", "shared", "parent", n) })
	wg.Wait()
	if err := errors.Join(ownErr, sharedErr); err != nil {
		t.Fatalf("parent: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"parent", "child"} {
		s := verifyLog(t, svc, "app", w, "own", 4*n, false)
		if v, _ := s.State().Get("user:seen-own"); v != float64(n-1) {
			t.Fatalf("%s's user state reads %v", w, v)
		}
	}
	verifyLog(t, svc, "app", "u", "shared", 2*n, true)
	t.Logf("shared session: %d stale refusals in the parent, %d in the child", parentStale, report.Stale)
}
