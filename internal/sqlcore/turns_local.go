package sqlcore

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentstore/sessionstore/store"
)

// turnKey names one turn: generations are never reused, so a key is never
// ambiguous.
type turnKey struct {
	id  string
	gen uint64
}

type turnEntry struct {
	cancel  context.CancelCauseFunc
	watched bool // committed: the poller checks it
	// ending counts the EndTurn calls of this Store in flight on the
	// turn: each fires the context itself once its write is done, with
	// the outcome its transaction saw, so the poller leaves the turn to
	// them (what it reads after their commit, e.g. a session removed after
	// the turn ended, is not what happened first).
	ending int
	// tenant is the tenant of the Store that began the turn: EndTurn
	// through another tenant's Store (which cannot see the session, and
	// reads it as removed) leaves the turn alone.
	tenant string
}

// turnRegistry holds the contexts of the turns this Store began and not yet
// released, and runs the poller that delivers cancels recorded by other
// processes. Its zero value is ready to use.
type turnRegistry struct {
	tokenOnce sync.Once
	token     string

	mu      sync.Mutex
	turns   map[turnKey]*turnEntry
	watched int
	polling bool
	closed  bool
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when the current poller exits

	// The lease heartbeat runs from the first turn the Store began until
	// close.
	beating  bool
	beatStop chan struct{} // closed by close
	beatDone chan struct{} // closed when the heartbeat exits
}

// ownerToken identifies this Store in turn_owner.
func (r *turnRegistry) ownerToken() string {
	r.tokenOnce.Do(func() { r.token = uuid.NewString() })
	return r.token
}

// addPending registers the context of a turn whose transaction has not
// committed yet. It can be fired, but the poller ignores it.
func (r *turnRegistry) addPending(k turnKey, tenant string, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turns == nil {
		r.turns = make(map[turnKey]*turnEntry)
	}
	r.turns[k] = &turnEntry{cancel: cancel, tenant: tenant}
}

// drop forgets k without firing it (a transaction that did not commit).
func (r *turnRegistry) drop(k turnKey) {
	if k.gen == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(k)
}

func (r *turnRegistry) removeLocked(k turnKey) *turnEntry {
	e := r.turns[k]
	if e == nil {
		return nil
	}
	delete(r.turns, k)
	if e.watched {
		r.watched--
	}
	return e
}

// fire cancels turn k's context with cause and forgets it. It does nothing
// if k is not a turn of this Store (or was released already).
func (r *turnRegistry) fire(k turnKey, cause error) {
	r.mu.Lock()
	e := r.removeLocked(k)
	r.mu.Unlock()
	if e != nil {
		e.cancel(cause)
	}
}

// startEnding marks an EndTurn of turn k in flight (see turnEntry.ending).
func (r *turnRegistry) startEnding(k turnKey, tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.turns[k]; e != nil && e.tenant == tenant {
		e.ending++
	}
}

// stopEnding undoes startEnding for an EndTurn that failed: the poller
// takes the turn back.
func (r *turnRegistry) stopEnding(k turnKey, tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.turns[k]; e != nil && e.ending > 0 && e.tenant == tenant {
		e.ending--
	}
}

// fireIn fires turn k like fire when a Store of tenant began it (EndTurn:
// the turn of another tenant's session under the same id and generation
// is not this caller's to end).
func (r *turnRegistry) fireIn(k turnKey, tenant string, cause error) {
	r.mu.Lock()
	e := r.turns[k]
	if e == nil || e.tenant != tenant {
		r.mu.Unlock()
		return
	}
	r.removeLocked(k)
	r.mu.Unlock()
	e.cancel(cause)
}

// firePolled is fire for the poller: it leaves a turn whose EndTurn is in
// flight to that EndTurn.
func (r *turnRegistry) firePolled(k turnKey, cause error) {
	r.mu.Lock()
	e := r.turns[k]
	if e == nil || e.ending > 0 {
		r.mu.Unlock()
		return
	}
	r.removeLocked(k)
	r.mu.Unlock()
	e.cancel(cause)
}

// watchTurn marks turn k committed and makes sure the poller and the lease
// heartbeat run.
func (s *Store) watchTurn(k turnKey) {
	r := s.turns
	r.mu.Lock()
	if !r.beating && !r.closed {
		// The turn is committed with a lease: keep it renewed from now
		// until the Store closes, whatever happens to its context.
		r.beating = true
		r.beatStop, r.beatDone = make(chan struct{}), make(chan struct{})
		go s.heartbeat(r.beatStop, r.beatDone, s.now())
	}
	e := r.turns[k]
	switch {
	case e == nil: // fired already
	case r.closed:
		r.removeLocked(k)
		r.mu.Unlock()
		e.cancel(store.ErrStoreClosed)
		return
	case !e.watched:
		e.watched = true
		r.watched++
		if !r.polling {
			r.polling = true
			if r.stop == nil {
				r.stop = make(chan struct{})
			}
			r.done = make(chan struct{})
			go s.pollTurns(r.stop, r.done)
		}
	}
	r.mu.Unlock()
}

// watchList returns the turns the poller checks, or nil after stopping the
// poller when there are none.
func (r *turnRegistry) watchList() []pollKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched == 0 || r.closed {
		r.polling = false
		return nil
	}
	keys := make([]pollKey, 0, r.watched)
	for k, e := range r.turns {
		if e.watched {
			keys = append(keys, pollKey{ID: k.id, Gen: k.gen})
		}
	}
	return keys
}

// close stops the poller and cancels every turn context of the Store with
// store.ErrStoreClosed: once the store is closed, no cancel could reach
// them any more. The durable turn state is left as it is.
func (r *turnRegistry) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	if r.stop != nil {
		close(r.stop)
	}
	if r.beating {
		close(r.beatStop)
	}
	done, beatDone := r.done, r.beatDone
	polling, beating := r.polling, r.beating
	turns := r.turns
	r.turns, r.watched = nil, 0
	r.mu.Unlock()
	if beating {
		<-beatDone
	}
	if polling {
		<-done
		r.mu.Lock()
		r.polling = false
		r.mu.Unlock()
	}
	for _, e := range turns {
		e.cancel(store.ErrStoreClosed)
	}
}

// heartbeat keeps the leases of the Store's turns (and of their causes)
// from lapsing while the Store is open, and reaps the causes of dead
// turns: every third of the lease, by the Store's clock, it renews them
// all in one write (renewLeases). It checks the clock every tenth of the
// lease (at most every second), so that a clock moved by a test is
// followed promptly. A failed beat is logged and tried again at the next
// check.
//
// begun is when the first turn's lease was set (by its BeginTurn, just
// before).
func (s *Store) heartbeat(stop, done chan struct{}, begun time.Time) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	lease := s.cfg.TurnLease
	tick := time.NewTicker(min(lease/10, time.Second))
	defer tick.Stop()
	owner := s.turns.ownerToken()
	last := begun
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := s.now()
		if now.Before(last.Add(lease / 3)) {
			continue
		}
		reaped, err := s.renewLeases(ctx, now, owner)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, store.ErrStoreClosed) {
				s.log.Warn("renewing the leases of running turns failed; retrying", "err", err)
			}
			continue
		}
		last = now
		if reaped > 0 {
			s.log.Debug("reaped the cancel causes of dead turns", "count", reaped)
		}
	}
}

// pollKey is one watched turn, as the poll query takes it (JSON).
type pollKey struct {
	ID  string `json:"id"`
	Gen uint64 `json:"gen"`
}

type pollRow struct {
	ID          string `db:"id"`
	Gen         int64  `db:"gen"`
	Present     bool   `db:"present"`
	TurnGen     int64  `db:"turn_gen"`
	TurnRunning bool   `db:"turn_running"`
	TurnCancel  string `db:"turn_cancel"`
	Cause       string `db:"cause"`
}

// reason is the context cause for a watched turn the poll returned.
func (p *pollRow) reason(k turnKey) error {
	switch {
	case p.Cause != "":
		return cancelled(k, store.CancelCause(p.Cause))
	case !p.Present:
		// Removed with the cause already taken and the turn ended.
		return cancelled(k, store.CauseSessionRemoved)
	case uint64(p.TurnGen) != k.gen:
		return cancelled(k, store.CauseSuperseded)
	case p.TurnCancel != "":
		return cancelled(k, store.CancelCause(p.TurnCancel))
	default: // ended by another process
		return store.ErrTurnEnded
	}
}

// pollTurns is the poller: while the Store has running turns it checks
// them every poll interval, and at once when the backend's TurnWake says
// another process may have changed one, and fires those cancelled
// elsewhere.
func (s *Store) pollTurns(stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wake := make(chan struct{}, 1)
	if s.cfg.TurnWake != nil {
		listening := make(chan struct{})
		go func() {
			defer close(listening)
			s.cfg.TurnWake(ctx, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
		}()
		defer func() { <-listening }() // after cancel (deferred first, runs last)
		defer cancel()
	}
	tick := time.NewTicker(s.cfg.CancelPoll)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		case <-wake:
		}
		keys := s.turns.watchList()
		if keys == nil {
			return
		}
		if err := s.pollOnce(ctx, keys); err != nil && ctx.Err() == nil {
			s.log.Warn("checking running turns for cancels failed; retrying", "err", err)
		}
	}
}

func (s *Store) pollOnce(ctx context.Context, keys []pollKey) error {
	b, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	var rows []pollRow
	if err := s.selectRows(ctx, &rows, s.d.PollTurnsSQL, string(b)); err != nil {
		return err
	}
	for i := range rows {
		k := turnKey{id: rows[i].ID, gen: uint64(rows[i].Gen)}
		s.turns.firePolled(k, rows[i].reason(k))
	}
	return nil
}

// TurnState reports how many turns of this Store are registered, how many
// of them the poller watches, and whether the poller runs (for tests and
// diagnostics).
func (s *Store) TurnState() (turns, watched int, polling bool) {
	r := s.turns
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.turns), r.watched, r.polling
}
