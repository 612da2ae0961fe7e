package sqlcore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// How turns and cancellation work
//
// The durable state of a turn is in its runtime_sessions row (turn_gen,
// turn_running, turn_owner, turn_lease_ms, turn_cancel) and, once cancelled
// or superseded, in a runtime_cancel_causes row keyed by (session,
// generation). The contexts of the turns a Store began are in its
// turnRegistry (turns_local.go).
//
// A cancel is one write transaction that records the cause; only after it
// committed does the canceller fire the context, directly when the turn
// belongs to the same Store. A turn of another Store (another process) is
// fired by that Store's poller, which reads the committed state of its
// running turns every poll interval. Either way the cause is durable before
// the context fires.
//
// Leases. BeginTurn gives the turn a lease (turn_lease_ms = now + the
// Store's TurnLease); the Store's heartbeat (turns_local.go) renews the
// leases of all its running turns, and of the cause rows of its turns
// (runtime_cancel_causes.owner, lease_ms), every third of the lease while
// the Store is open, and reaps the cause rows whose lease has lapsed. A
// running turn whose lease has lapsed is stale: its Store is gone. A cause
// row is only written for a live turn (a stale one has nobody to take it);
// the session row still carries the cancel, so that a Store that only
// stalled sees it when it wakes. A cause row lives until it is taken and
// its turn ended (in either order), or until it is reaped.

const (
	// rtTurnSQL reads the turn state of a session.
	rtTurnSQL = `SELECT turn_gen, turn_running, turn_cancel, turn_owner, turn_lease_ms
		FROM runtime_sessions WHERE id = ? AND tenant = ?`

	rtNextGenSQL = `UPDATE runtime_counters SET last_turn_gen = last_turn_gen + 1 WHERE id = 1
		RETURNING last_turn_gen`

	rtBeginTurnSQL = `UPDATE runtime_sessions
		SET turn_gen = ?, turn_running = true, turn_owner = ?, turn_started_ms = ?, turn_lease_ms = ?,
		turn_cancel = ''
		WHERE id = ?`

	rtEndTurnSQL = `UPDATE runtime_sessions SET turn_running = false, turn_cancel = ''
		WHERE id = ? AND turn_gen = ? AND turn_running = true AND tenant = ?`

	rtSetCancelSQL = `UPDATE runtime_sessions SET turn_cancel = ? WHERE id = ?`

	rtRecordCauseSQL = `INSERT INTO runtime_cancel_causes
		(session_id, generation, cause, recorded_at_ms, owner, lease_ms, tenant)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, generation) DO NOTHING`

	// rtTakeCauseSQL takes a cause not taken yet; the caller deletes the
	// row when its turn has ended already.
	rtTakeCauseSQL = `UPDATE runtime_cancel_causes SET taken = true
		WHERE session_id = ? AND generation = ? AND taken = false AND tenant = ? RETURNING cause, ended`

	rtDropCauseSQL = `DELETE FROM runtime_cancel_causes WHERE session_id = ? AND generation = ? AND tenant = ?`

	// EndTurn's part on the turn's cause: a taken cause is done with
	// (rtDropTakenCauseSQL), one not taken yet stays takeable once, marked
	// ended (rtEndCauseSQL).
	rtDropTakenCauseSQL = `DELETE FROM runtime_cancel_causes
		WHERE session_id = ? AND generation = ? AND taken = true AND tenant = ?`
	rtEndCauseSQL = `UPDATE runtime_cancel_causes SET ended = true WHERE session_id = ? AND generation = ? AND tenant = ?`
	// rtCauseOfSQL reads the cause recorded for a turn, taken or not.
	rtCauseOfSQL = `SELECT cause FROM runtime_cancel_causes WHERE session_id = ? AND generation = ? AND tenant = ?`

	// The heartbeat: renew the leases of one Store's turns and causes,
	// reap the causes whose lease has lapsed.
	rtRenewTurnsSQL  = `UPDATE runtime_sessions SET turn_lease_ms = ? WHERE turn_owner = ? AND turn_running = true`
	rtRenewCausesSQL = `UPDATE runtime_cancel_causes SET lease_ms = ? WHERE owner = ?`
	rtReapCausesSQL  = `DELETE FROM runtime_cancel_causes WHERE lease_ms <= ?`
	// rtReapTenantCausesSQL is ReapCancelCauses through a tenant's Store.
	rtReapTenantCausesSQL = `DELETE FROM runtime_cancel_causes WHERE lease_ms <= ? AND tenant = ?`
	// rtReapSessionCausesSQL reaps the dead causes of one session.
	rtReapSessionCausesSQL = `DELETE FROM runtime_cancel_causes WHERE session_id = ? AND lease_ms <= ?`
)

// turnRow is the turn state of a session row.
type turnRow struct {
	Gen     int64  `db:"turn_gen"`
	Running bool   `db:"turn_running"`
	Cancel  string `db:"turn_cancel"`
	Owner   string `db:"turn_owner"`
	LeaseMS int64  `db:"turn_lease_ms"`
}

// live reports whether the turn runs with a lease that has not lapsed at
// nowMS.
func (t *turnRow) live(nowMS int64) bool { return t.Running && t.LeaseMS > nowMS }

func (r *Runtime) readTurn(tx Tx, id string) (turnRow, error) {
	var t turnRow
	err := tx.Get(&t, r.s.q.rtTurn, id, r.s.tenant)
	return t, err
}

// cancelled is the context cause of turn k cancelled with cause.
func cancelled(k turnKey, cause store.CancelCause) error {
	return &store.TurnCancelledError{SessionID: k.id, Generation: k.gen, Cause: cause}
}

// recordCancel records cause for the running turn t of session id, unless
// a cause is recorded already, and returns the cause the turn's context
// fires with (the first one recorded). The session row carries the cancel
// (except a supersede, which the new generation shows); a takeable cause
// row is written only for a live turn, with the lease of its Store.
func (r *Runtime) recordCancel(tx Tx, id string, t turnRow, cause store.CancelCause) (store.CancelCause, error) {
	now := rowcodec.ToMillis(r.s.now())
	live := t.live(now)
	if !live {
		// A stale turn's Store is gone: drop the causes it left for
		// itself, keep nothing new.
		if _, err := tx.Exec(rtReapSessionCausesSQL, id, now); err != nil {
			return "", err
		}
	}
	if t.Cancel != "" {
		return store.CancelCause(t.Cancel), nil
	}
	if cause != store.CauseSuperseded {
		if _, err := tx.Exec(rtSetCancelSQL, string(cause), id); err != nil {
			return "", err
		}
	}
	if live {
		if _, err := tx.Exec(rtRecordCauseSQL, id, t.Gen, string(cause), now, t.Owner, t.LeaseMS, r.s.tenant); err != nil {
			return "", err
		}
	}
	if err := r.s.notifyTurns(tx); err != nil {
		return "", err
	}
	return cause, nil
}

func validGen(gen uint64) error {
	if gen == 0 || gen > math.MaxInt64 {
		return store.Invalid("generation", "must be a generation returned by BeginTurn")
	}
	return nil
}

// BeginTurn starts a turn, superseding a running one (see
// store.Turns.BeginTurn).
func (r *Runtime) BeginTurn(ctx context.Context, id string) (uint64, context.Context, error) {
	if err := store.ValidateID("id", id); err != nil {
		return 0, nil, err
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	reg := r.s.turns
	owner := reg.ownerToken()
	var (
		key, prev turnKey
		prevCause store.CancelCause
	)
	err := r.s.write(ctx, func(tx Tx) error {
		// A re-run after a busy retry replaces the previous attempt.
		reg.drop(key)
		key, prev, prevCause = turnKey{}, turnKey{}, ""
		t, err := r.readTurn(tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return rtNotFound(id)
		}
		if err != nil {
			return err
		}
		var gen int64
		if err := tx.Get(&gen, rtNextGenSQL); err != nil {
			return err
		}
		if t.Running {
			prev = turnKey{id: id, gen: uint64(t.Gen)}
			if prevCause, err = r.recordCancel(tx, id, t, store.CauseSuperseded); err != nil {
				return err
			}
		}
		now := r.s.now()
		lease := rowcodec.ToMillis(now.Add(r.s.cfg.TurnLease))
		if _, err := tx.Exec(rtBeginTurnSQL, gen, owner, rowcodec.ToMillis(now), lease, id); err != nil {
			return err
		}
		// Pending until committed: a cancel committed right after this
		// transaction can already fire it, the poller does not watch it yet.
		key = turnKey{id: id, gen: uint64(gen)}
		reg.addPending(key, r.s.tenant, cancel)
		return nil
	})
	if err != nil {
		reg.drop(key)
		cancel(err)
		return 0, nil, err
	}
	if prevCause != "" {
		reg.fire(prev, cancelled(prev, prevCause))
	}
	r.s.watchTurn(key)
	return key.gen, turnCtx, nil
}

// EndTurn ends turn gen (see store.Turns.EndTurn). The turn's context
// fires with the outcome that committed first: store.ErrTurnEnded when
// this call ended a turn nothing had stopped, else the cancel, supersede
// or removal that came before it (as its transaction finds them), never
// an end that did not happen first. The poller leaves the turn alone
// meanwhile (turnEntry.ending).
func (r *Runtime) EndTurn(ctx context.Context, id string, gen uint64) (bool, error) {
	if err := store.ValidateID("id", id); err != nil {
		return false, err
	}
	if err := validGen(gen); err != nil {
		return false, err
	}
	key := turnKey{id: id, gen: gen}
	r.s.turns.startEnding(key, r.s.tenant)
	var (
		ended bool
		prior error
	)
	err := r.s.write(ctx, func(tx Tx) error {
		ended = false
		var err error
		if prior, err = r.stoppedBy(tx, key); err != nil {
			return err
		}
		res, err := tx.Exec(rtEndTurnSQL, id, int64(gen), r.s.tenant)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		// The cause of the turn: done with once taken; one not taken yet
		// stays takeable, marked ended.
		if _, err := tx.Exec(rtDropTakenCauseSQL, id, int64(gen), r.s.tenant); err != nil {
			return err
		}
		if _, err := tx.Exec(rtEndCauseSQL, id, int64(gen), r.s.tenant); err != nil {
			return err
		}
		if n > 0 {
			if err := r.s.notifyTurns(tx); err != nil {
				return err
			}
		}
		ended = n > 0
		return nil
	})
	if err != nil {
		r.s.turns.stopEnding(key, r.s.tenant)
		return false, err
	}
	if prior == nil {
		prior = store.ErrTurnEnded
	}
	r.s.turns.fireIn(key, r.s.tenant, prior)
	return ended, nil
}

// stoppedBy is what stopped turn k before EndTurn's transaction, as the
// context cause the call that stopped it fires (or fired) with: a
// recorded cancel, a removal, a newer turn, or an end; nil for a turn
// that runs uncancelled.
func (r *Runtime) stoppedBy(tx Tx, k turnKey) (error, error) {
	// The session row first: it is read for update where the backend
	// locks rows, so a removal or cancel in flight commits before, and
	// the cause row read next is the one it recorded.
	t, terr := r.readTurn(tx, k.id)
	if terr != nil && !errors.Is(terr, sql.ErrNoRows) {
		return nil, terr
	}
	var cause string
	err := tx.Get(&cause, rtCauseOfSQL, k.id, int64(k.gen), r.s.tenant)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if cause != "" {
		return cancelled(k, store.CancelCause(cause)), nil
	}
	switch {
	case errors.Is(terr, sql.ErrNoRows):
		return cancelled(k, store.CauseSessionRemoved), nil
	case uint64(t.Gen) != k.gen:
		return cancelled(k, store.CauseSuperseded), nil
	case !t.Running:
		return store.ErrTurnEnded, nil
	case t.Cancel != "":
		return cancelled(k, store.CancelCause(t.Cancel)), nil
	}
	return nil, nil
}

// Cancel cancels the session's running turn with cause (see
// store.Turns.Cancel).
func (r *Runtime) Cancel(ctx context.Context, id string, cause store.CancelCause) (bool, error) {
	if err := store.ValidateID("id", id); err != nil {
		return false, err
	}
	switch cause {
	case store.CauseClientRequest, store.CauseAdminKill, store.CauseSessionRemoved:
	default:
		return false, store.Invalid("cause", "must be client_rpc, admin_kill or session_removed")
	}
	var (
		key   turnKey
		fired store.CancelCause
	)
	err := r.s.write(ctx, func(tx Tx) error {
		key, fired = turnKey{}, ""
		t, err := r.readTurn(tx, id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if !t.Running {
			return nil
		}
		key = turnKey{id: id, gen: uint64(t.Gen)}
		fired, err = r.recordCancel(tx, id, t, cause)
		return err
	})
	if err != nil {
		return false, err
	}
	if fired == "" {
		return false, nil
	}
	// The cause is committed: now the context may fire.
	r.s.turns.fire(key, cancelled(key, fired))
	return true, nil
}

// TakeCancelCause returns the recorded cause of turn gen once (see
// store.Turns.TakeCancelCause).
func (r *Runtime) TakeCancelCause(ctx context.Context, id string, gen uint64) (store.CancelCause, bool, error) {
	if err := store.ValidateID("id", id); err != nil {
		return "", false, err
	}
	if err := validGen(gen); err != nil {
		return "", false, err
	}
	var cause string
	err := r.s.write(ctx, func(tx Tx) error {
		cause = ""
		var row struct {
			Cause string `db:"cause"`
			Ended bool   `db:"ended"`
		}
		err := tx.Get(&row, rtTakeCauseSQL, id, int64(gen), r.s.tenant)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if row.Ended { // taken and ended: nothing needs it any more
			if _, err := tx.Exec(rtDropCauseSQL, id, int64(gen), r.s.tenant); err != nil {
				return err
			}
		}
		cause = row.Cause
		return nil
	})
	if err != nil || cause == "" {
		return "", false, err
	}
	return store.CancelCause(cause), true, nil
}

// ReapCancelCauses removes the causes of dead turns (see
// store.Turns.ReapCancelCauses).
func (r *Runtime) ReapCancelCauses(ctx context.Context) (int64, error) {
	var n int64
	err := r.s.write(ctx, func(tx Tx) error {
		q, args := rtReapCausesSQL, []any{rowcodec.ToMillis(r.s.now())}
		if r.s.tenant != "" {
			q, args = rtReapTenantCausesSQL, append(args, r.s.tenant)
		}
		res, err := tx.Exec(q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// renewLeases is one beat of the Store's heartbeat: in one write
// transaction it renews the leases of the Store's running turns and of
// their causes to expire at lease, and reaps the causes of dead turns
// (lease lapsed at now).
func (s *Store) renewLeases(ctx context.Context, now time.Time, owner string) (reaped int64, err error) {
	lease := rowcodec.ToMillis(now.Add(s.cfg.TurnLease))
	err = s.write(ctx, func(tx Tx) error {
		if _, err := tx.Exec(rtRenewTurnsSQL, lease, owner); err != nil {
			return err
		}
		if _, err := tx.Exec(rtRenewCausesSQL, lease, owner); err != nil {
			return err
		}
		res, err := tx.Exec(rtReapCausesSQL, rowcodec.ToMillis(now))
		if err != nil {
			return err
		}
		reaped, err = res.RowsAffected()
		return err
	})
	return reaped, err
}
