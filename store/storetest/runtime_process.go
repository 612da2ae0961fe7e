package storetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// CrossProcessCancelTrials is how many cancels the two-process test sends
// from the parent to a turn running in the helper process.
const CrossProcessCancelTrials = 25

func init() {
	registerRole("runtime-turn-waiter", turnWaiterRole)
	registerRole("runtime-turn-crash", turnCrashRole)
}

// turnEvent is one line of the turn helpers' reports.
type turnEvent struct {
	Event    string `json:"event"` // begun, fired, done
	Gen      uint64 `json:"gen,omitempty"`
	Cause    string `json:"cause,omitempty"`
	FiredAt  int64  `json:"fired_at,omitempty"` // wall clock, unix ns
	Durable  string `json:"durable,omitempty"`  // cancel cause in the session row when fired
	Present  bool   `json:"present,omitempty"`  // the session still existed when fired
	Taken    string `json:"taken,omitempty"`    // TakeCancelCause result
	TakenTwo bool   `json:"taken_two,omitempty"`
}

// turnWaiterRole begins turns on a session one after the other; for each it
// reports "begun", waits for the turn's context, reports "fired" with the
// cause and what the database said at that moment, drains the cause and
// ends the turn. It stops when the session is gone. Args: session id.
func turnWaiterRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	id := args[0]
	rt := st.Runtime()
	flush := func() {
		if f, ok := out.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
	for {
		gen, tctx, err := rt.BeginTurn(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return report(out, turnEvent{Event: "done"})
		}
		if err != nil {
			return err
		}
		if err := report(out, turnEvent{Event: "begun", Gen: gen}); err != nil {
			return err
		}
		flush()
		select {
		case <-tctx.Done():
		case <-time.After(crossStoreTimeout):
			return fmt.Errorf("turn %d not cancelled within %v", gen, crossStoreTimeout)
		}
		firedAt := time.Now().UnixNano()
		ev := turnEvent{Event: "fired", Gen: gen, FiredAt: firedAt}
		if c, ok := store.CancelCauseOf(tctx); ok {
			ev.Cause = string(c)
		} else {
			ev.Cause = "not a turn cancel: " + context.Cause(tctx).Error()
		}
		if s, err := rt.Get(ctx, id); err == nil {
			ev.Present = true
			ev.Durable = string(s.Turn.CancelCause)
			if s.Turn.Generation != gen {
				ev.Durable = "newer generation"
			}
		}
		c, ok, err := rt.TakeCancelCause(ctx, id, gen)
		if err != nil {
			return err
		}
		if ok {
			ev.Taken = string(c)
		}
		_, again, err := rt.TakeCancelCause(ctx, id, gen)
		if err != nil {
			return err
		}
		ev.TakenTwo = again
		if _, err := rt.EndTurn(ctx, id, gen); err != nil {
			return err
		}
		if err := report(out, ev); err != nil {
			return err
		}
		flush()
	}
}

// turnCrashRole begins a turn, reports it and waits to be killed. Args:
// session id.
func turnCrashRole(ctx context.Context, st store.Store, args []string, out io.Writer) error {
	gen, _, err := st.Runtime().BeginTurn(ctx, args[0])
	if err != nil {
		return err
	}
	if err := report(out, turnEvent{Event: "begun", Gen: gen}); err != nil {
		return err
	}
	if f, ok := out.(interface{ Flush() error }); ok {
		f.Flush()
	}
	time.Sleep(time.Hour)
	return errors.New("not killed")
}

// eventReader reads a helper's JSON lines with a deadline per line.
type eventReader struct {
	t  *testing.T
	ch chan turnEvent
}

func newEventReader(t *testing.T, r io.Reader) *eventReader {
	er := &eventReader{t: t, ch: make(chan turnEvent, 16)}
	go func() {
		defer close(er.ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var ev turnEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				continue
			}
			er.ch <- ev
		}
	}()
	return er
}

func (er *eventReader) next(want string) turnEvent {
	er.t.Helper()
	select {
	case ev, ok := <-er.ch:
		if !ok {
			er.t.Fatalf("helper process ended while waiting for %q", want)
		}
		if ev.Event != want {
			er.t.Fatalf("helper reported %+v, want %q", ev, want)
		}
		return ev
	case <-time.After(2 * crossStoreTimeout):
		er.t.Fatalf("no %q from the helper process within %v", want, 2*crossStoreTimeout)
	}
	return turnEvent{}
}

func checkFired(t *testing.T, ev turnEvent, gen uint64, cause store.CancelCause, durable string, present bool) {
	t.Helper()
	if ev.Gen != gen || ev.Cause != string(cause) || ev.Durable != durable || ev.Present != present ||
		ev.Taken != string(cause) || ev.TakenTwo {
		t.Fatalf("helper turn %d: %+v; want cause %s (durable %q, present %v) drained exactly once",
			gen, ev, cause, durable, present)
	}
}

// testTurnCancelAcrossProcesses runs a turn in a second OS process and
// cancels it from this one, CrossProcessCancelTrials times, then
// supersedes one and kills the session under another. It logs the delay
// from the Cancel call to the context firing in the other process.
func testTurnCancelAcrossProcesses(t *testing.T, e *env) {
	e.rtInsert(rtNew("xproc"))
	cmd, stdout := e.spawn("runtime-turn-waiter", "xproc")
	events := newEventReader(t, stdout)
	delays := make([]time.Duration, 0, CrossProcessCancelTrials)
	for range CrossProcessCancelTrials {
		begun := events.next("begun")
		// Cancel at a random point of the helper's poll cycle, as a real
		// client would.
		time.Sleep(rand.N(100 * time.Millisecond))
		start := time.Now()
		if !e.cancel("xproc", store.CauseClientRequest) {
			t.Fatalf("Cancel of the helper's turn %d returned false", begun.Gen)
		}
		fired := events.next("fired")
		checkFired(t, fired, begun.Gen, store.CauseClientRequest, string(store.CauseClientRequest), true)
		delays = append(delays, time.Unix(0, fired.FiredAt).Sub(start))
	}
	slices.Sort(delays)
	t.Logf("cross-process cancel delay (Cancel call in this process -> turn context fired in the helper), %d trials: "+
		"min %v, median %v, p90 %v, worst %v", len(delays), delays[0], delays[len(delays)/2],
		delays[len(delays)*9/10], delays[len(delays)-1])

	// Supersede: this process begins a turn on the session.
	begun := events.next("begun")
	myGen, myCtx := e.beginTurn("xproc")
	checkFired(t, events.next("fired"), begun.Gen, store.CauseSuperseded, "newer generation", true)
	// The helper begins its next turn, superseding ours in turn: the
	// cancel crosses the other way.
	begun = events.next("begun")
	waitFired(t, myCtx, store.CauseSuperseded)
	if c, ok := e.takeCause("xproc", myGen); !ok || c != store.CauseSuperseded {
		t.Fatalf("our superseded cause = %q, %v", c, ok)
	}
	e.endTurn("xproc", myGen, false)
	// Kill: the helper sees admin_kill with the session gone, and stops.
	if !e.rtKill("xproc") {
		t.Fatal("Kill returned false")
	}
	checkFired(t, events.next("fired"), begun.Gen, store.CauseAdminKill, "", false)
	events.next("done")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v", err)
	}
}

// testTurnCrashedProcess: a process begins a turn and is killed (SIGKILL).
// The turn stays visible as running; it can be cancelled and cleared, and
// the session becomes evictable again.
func testTurnCrashedProcess(t *testing.T, e *env) {
	e.rtInsert(rtOwned("crashed", store.ChatModeChat, "tui"))
	cmd, stdout := e.spawn("runtime-turn-crash", "crashed")
	begun := newEventReader(t, stdout).next("begun")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	e.reopen()
	s := e.rtGet("crashed")
	if !s.Turn.Running || s.Turn.Generation != begun.Gen || s.Turn.Owner == "" {
		t.Fatalf("turn of the crashed process = %+v, want generation %d running", s.Turn, begun.Gen)
	}
	if ev := e.evict("tui", store.ChatModeChat, ""); len(ev) != 0 {
		t.Fatalf("evicted mid-turn session: %+v", ev)
	}
	// A cancel is recorded although nobody is left to fire.
	if !e.cancel("crashed", store.CauseAdminKill) {
		t.Fatal("Cancel of the orphaned turn returned false")
	}
	if c, ok := e.takeCause("crashed", begun.Gen); !ok || c != store.CauseAdminKill {
		t.Fatalf("cause = %q, %v", c, ok)
	}
	e.endTurn("crashed", begun.Gen, true)
	if s := e.rtGet("crashed"); s.Turn.Running {
		t.Fatalf("turn not cleared: %+v", s.Turn)
	}
	if ev := e.evict("tui", store.ChatModeChat, ""); len(ev) != 1 || ev[0].ID != "crashed" {
		t.Fatalf("evicted %+v after clearing", ev)
	}
}
