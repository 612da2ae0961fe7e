package pgstore

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

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
}

// ownerToken identifies this Store in turn_owner.
func (r *turnRegistry) ownerToken() string {
	r.tokenOnce.Do(func() { r.token = uuid.NewString() })
	return r.token
}

// addPending registers the context of a turn whose transaction has not
// committed yet. It can be fired, but the poller ignores it.
func (r *turnRegistry) addPending(k turnKey, cancel context.CancelCauseFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.turns == nil {
		r.turns = make(map[turnKey]*turnEntry)
	}
	r.turns[k] = &turnEntry{cancel: cancel}
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

// watchTurn marks turn k committed and makes sure the poller runs.
func (s *Store) watchTurn(k turnKey) {
	r := &s.turns
	r.mu.Lock()
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
	r.closed = true
	if r.stop != nil {
		close(r.stop)
	}
	done := r.done
	polling := r.polling
	turns := r.turns
	r.turns, r.watched = nil, 0
	r.mu.Unlock()
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

// pollKey is one watched turn, as the poll query takes it (JSON).
type pollKey struct {
	ID  string `json:"id"`
	Gen uint64 `json:"gen"`
}

// rtPollSQL returns the watched turns that are no longer running as
// begun: cancelled, superseded, ended or removed. Each lookup is by primary
// key. Parameter: JSON array of {"id", "gen"}.
const rtPollSQL = `SELECT
		j.id AS id,
		j.gen AS gen,
		s.id IS NOT NULL AS present,
		coalesce(s.turn_gen, 0) AS turn_gen,
		coalesce(s.turn_running, false) AS turn_running,
		coalesce(s.turn_cancel, '') AS turn_cancel,
		coalesce(c.cause, '') AS cause
	FROM jsonb_to_recordset(?::jsonb) AS j(id text, gen bigint)
	LEFT JOIN runtime_sessions AS s ON s.id = j.id COLLATE "C"
	LEFT JOIN runtime_cancel_causes AS c
		ON c.session_id = j.id COLLATE "C" AND c.generation = j.gen
	WHERE s.id IS NULL OR s.turn_gen <> j.gen OR NOT s.turn_running OR s.turn_cancel <> ''`

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

// pollTurns is the poller: while the Store has running turns it listens
// for the NOTIFY that every cancel, supersede and end of a turn sends on
// commit, and checks its turns at once when one arrives; it also checks
// them every poll interval, which covers a listener connection that is
// down or a notification lost with it.
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
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		s.listenTurns(ctx, wake)
	}()
	defer func() { <-listening }() // after cancel (deferred first, runs last)
	defer cancel()
	tick := time.NewTicker(s.cfg.runtime.cancelPoll)
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
			s.cfg.logger.Warn("pgstore: checking running turns for cancels failed; retrying", "err", err)
		}
	}
}

// listenTurns holds a connection of its own (not one of the pool's) that
// LISTENs on the store's channel, and signals wake for each notification
// and after every (re)connect, until ctx ends. A failed connection is
// retried; meanwhile the poll interval covers.
func (s *Store) listenTurns(ctx context.Context, wake chan<- struct{}) {
	signal := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := s.listenOnce(ctx, signal)
		if ctx.Err() != nil {
			return
		}
		s.cfg.logger.Warn("pgstore: turn notification listener failed; polling meanwhile", "err", err)
		if sleep(ctx, min(s.cfg.runtime.cancelPoll, time.Duration(attempt)*100*time.Millisecond)) != nil {
			return
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, signal func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	signal() // anything committed before LISTEN took effect
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		signal()
	}
}

func (s *Store) pollOnce(ctx context.Context, keys []pollKey) error {
	b, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	var rows []pollRow
	if err := s.selectRows(ctx, &rows, rtPollSQL, string(b)); err != nil {
		return err
	}
	for i := range rows {
		k := turnKey{id: rows[i].ID, gen: uint64(rows[i].Gen)}
		s.turns.fire(k, rows[i].reason(k))
	}
	return nil
}
