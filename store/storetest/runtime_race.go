package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// endRemoveRounds is how many times testTurnEndRacesRemove races EndTurn
// against Kill or Remove: the wrong outcome it guards against showed
// about once in a few hundred tries.
const endRemoveRounds = 400

// testTurnEndRacesRemove races a turn's EndTurn against Kill (or Remove)
// of its session, many times. Whichever committed first decides what the
// turn's context reports: EndTurn's result says whether it ended the turn,
// and then the cause is store.ErrTurnEnded; otherwise the removal won and
// the cause is its cancel. Both calls have returned, so the context is
// done either way.
func testTurnEndRacesRemove(t *testing.T, e *env) {
	for i := range endRemoveRounds {
		id := fmt.Sprintf("race-%d", i)
		e.rtInsert(rtNew(id))
		gen, turnCtx := e.beginTurn(id)
		kill := i%2 == 0
		want := store.CauseSessionRemoved
		if kill {
			want = store.CauseAdminKill
		}
		var (
			wg             sync.WaitGroup
			ended, removed bool
			endErr, rmErr  error
			start          = make(chan struct{})
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			ended, endErr = e.rt().EndTurn(e.ctx, id, gen)
		}()
		go func() {
			defer wg.Done()
			<-start
			if kill {
				removed, rmErr = e.rt().Kill(e.ctx, id)
			} else {
				removed, rmErr = e.rt().Remove(e.ctx, id)
			}
		}()
		close(start)
		wg.Wait()
		if endErr != nil || rmErr != nil || !removed {
			t.Fatalf("round %d: EndTurn: %v; remove: %v, %v", i, endErr, removed, rmErr)
		}
		if !isDone(turnCtx) {
			t.Fatalf("round %d: the turn context is not done after EndTurn (%v) and removal", i, ended)
		}
		cause := context.Cause(turnCtx)
		if ended {
			if !errors.Is(cause, store.ErrTurnEnded) {
				t.Fatalf("round %d: EndTurn ended the turn first, but its context reports %v", i, cause)
			}
			continue
		}
		if got, ok := store.CancelCauseOf(turnCtx); !ok || got != want {
			t.Fatalf("round %d: the removal won (EndTurn = false), but the context reports %v, want %s", i, cause, want)
		}
	}
}
