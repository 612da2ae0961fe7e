package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// writeFunc is one caller's share of a write transaction. It runs on the
// leader's goroutine (see writer): inside a savepoint of its own when the
// batch holds several requests, directly in the transaction when it is the
// only one. Returning an error undoes its writes (ROLLBACK TO the
// savepoint, or ROLLBACK of the whole transaction when alone) and reports
// the error to the caller; returning nil keeps its writes, which are
// acknowledged once the whole transaction has committed.
//
// A writeFunc may run more than once (when the whole transaction is retried
// after a busy error), so it must only communicate through values it
// overwrites on every run.
type writeFunc func(tx *wtx) error

// Request states: a request is queued until a leader takes it or its
// caller abandons it, whichever happens first.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type writeReq struct {
	ctx context.Context
	fn  writeFunc
	// lazy: the request writes only what the store can rebuild from the
	// rest of the database (the search index's folds), so its commit
	// need not reach the disk before it is acknowledged (see doLazy).
	lazy  bool
	state atomic.Int32
	err   error
	done  chan struct{}
}

// writer owns the store's single write connection and commits queued
// requests in batches (group commit), leader/follower style: a caller
// enqueues its request, then either takes the leader token and runs the
// batch of everything queued (its own request first in line if nobody took
// it), or waits until a leader has answered it. With one caller there is no
// hand-off between goroutines at all; under load one transaction (and one
// fsync) serves up to maxBatch callers.
type writer struct {
	conn     *sqlx.Conn
	lock     *fileLock // nil when disabled
	log      *slog.Logger
	maxBatch int
	retryFor time.Duration

	token chan struct{} // capacity 1: held by the leader
	mu    sync.Mutex    // guards queue and closed
	queue []*writeReq
	// closed is set by close; no request is accepted after it.
	closed bool

	// arrived is signalled (without blocking) whenever a request is
	// queued, so that a leader waiting for late joiners wakes at once.
	arrived chan struct{}

	// Owned by the leader (the token holder).
	stmts map[string]*sqlx.Stmt
	batch []*writeReq
	ctx   context.Context // statement context, independent of callers
	// lastAnswered is how many requests the previous transaction
	// committed, and lastCommit how long its COMMIT (the fsync) took:
	// the callers it answered are likely to come back at once, and
	// waiting a fraction of a commit for them saves whole commits (see
	// joinLate).
	lastAnswered int
	lastCommit   time.Duration
	// noJoin, set by a request while it runs (tests only), keeps the
	// transaction from taking late joiners.
	noJoin bool

	faults  func(query string) error // tests only: see config.faults
	guarded bool                     // tests only: see config.guarded

	// sync is the write connection's synchronous level; lazyNormal, that
	// a transaction of lazy requests commits at NORMAL instead (FULL).
	sync       Synchronous
	lazyNormal bool
	// lowered: the connection is at NORMAL for lazy transactions.
	lowered bool

	// cp, when set, is told of every commit (checkpoint.go); cpRounds is
	// how many of its rounds the writer has finished (see finishCheckpoint).
	cp       *checkpointer
	cpRounds int64
}

// finishCheckpoint copies what the background checkpointer's last round
// left in the WAL (the frames committed while it ran) back into the
// database, on the writer's own connection and between two transactions,
// so that the next transaction starts the log over from its beginning
// (see checkpoint.go). It runs once per background round; the leader
// calls it after answering its batch, still holding the write token.
func (w *writer) finishCheckpoint() {
	if w.cp == nil {
		return
	}
	r := w.cp.rounds.Load()
	if r == w.cpRounds {
		return
	}
	w.cpRounds = r
	var busy, log, copied int64
	if err := w.conn.QueryRowContext(w.ctx, checkpointSQL).Scan(&busy, &log, &copied); err != nil {
		w.log.Warn("sqlstore: checkpoint", "err", err)
	}
}

func newWriter(conn *sqlx.Conn, lock *fileLock, cfg *config) *writer {
	return &writer{
		conn:     conn,
		lock:     lock,
		log:      cfg.logger,
		maxBatch: cfg.maxBatch,
		retryFor: cfg.busyRetry,
		token:    make(chan struct{}, 1),
		arrived:  make(chan struct{}, 1),
		stmts:    make(map[string]*sqlx.Stmt),
		ctx:      context.Background(),
		faults:   cfg.faults,
		guarded:  cfg.guarded,
		sync:     cfg.sync,
		// At NORMAL and OFF, a commit does not wait for the disk anyway.
		lazyNormal: cfg.sync == SyncFull,
	}
}

// do enqueues fn and returns its durable outcome. A request still queued
// when ctx ends is withdrawn and returns ctx.Err(); once a leader has taken
// it, do waits for the transaction so that the reported outcome is the true
// one.
func (w *writer) do(ctx context.Context, fn writeFunc) error {
	return w.enqueue(ctx, fn, false)
}

// doLazy is do for a request that writes only derived data, which the
// store rebuilds from the rest of the database if it is lost (a fold of
// the search queue: the queue rows it deletes come back with the
// documents it wrote). It runs in a transaction of lazy requests only,
// and at synchronous=FULL that transaction commits at NORMAL: without
// the fsync, which holds the one writer for as long as the disk takes. A
// power failure can then undo it, whole (the log's checksums), never a
// durable transaction committed after it (whose fsync covers the log
// before it). A durable request never joins a lazy transaction; a lazy
// one may join a durable transaction. At NORMAL and OFF, where no commit
// waits for the disk, a lazy request is like any other.
func (w *writer) doLazy(ctx context.Context, fn writeFunc) error {
	return w.enqueue(ctx, fn, true)
}

func (w *writer) enqueue(ctx context.Context, fn writeFunc, lazy bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, lazy: lazy, done: make(chan struct{})}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return store.ErrStoreClosed
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	select {
	case w.arrived <- struct{}{}:
	default:
	}
	for {
		select {
		case <-r.done:
			return r.err
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return ctx.Err()
			}
			<-r.done
			return r.err
		case w.token <- struct{}{}:
			select {
			case <-r.done: // a previous leader already answered us
			default:
				w.lead()
			}
			<-w.token
			// Our request may not have fitted in the batch: go around.
		}
	}
}

// lead runs one batch: the oldest queued requests, up to maxBatch. The
// cross-process file lock is taken before the queue is drained, so that
// requests arriving while this process waits its turn join the batch.
func (w *writer) lead() {
	if w.lock != nil {
		if err := w.lock.lock(); err != nil {
			w.failQueued(fmt.Errorf("sqlstore: writer file lock: %w", err))
			return
		}
		defer w.lock.unlock()
	}
	w.batch = w.take(w.batch[:0])
	if len(w.batch) > 0 {
		w.batch = w.run(w.batch)
		w.finishCheckpoint()
	}
	clear(w.batch)
}

// take moves queued requests to batch, up to maxBatch in all, and returns
// it. At FULL, a batch that begins with a lazy request (see doLazy) takes
// lazy requests only: it stops before the first durable one. (At NORMAL
// and OFF every commit is lazy, and all requests share transactions.)
func (w *writer) take(batch []*writeReq) []*writeReq {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := 0
	for ; i < len(w.queue) && len(batch) < w.maxBatch; i++ {
		r := w.queue[i]
		if w.lazyNormal && len(batch) > 0 && batch[0].lazy && !r.lazy && r.state.Load() == reqQueued {
			break
		}
		w.queue[i] = nil
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			batch = append(batch, r)
		}
	}
	w.queue = w.queue[i:]
	if len(w.queue) == 0 {
		w.queue = nil // let the backing array go
	}
	return batch
}

// maxJoinWait bounds how long a transaction waits for late joiners.
const maxJoinWait = 2 * time.Millisecond

// joinLate adds requests queued while the batch ran to its transaction,
// before COMMIT. When the previous transaction answered more requests
// than this one holds, its callers are probably preparing their next
// request; the leader waits for them up to half the duration of the last
// COMMIT (at most maxJoinWait): with synchronous=FULL a commit is an
// fsync, and a few hundred microseconds of waiting put the next appends
// of every concurrent writer into one fsync instead of alternating
// between a small and a large batch. With synchronous=NORMAL a commit
// takes microseconds, and so does the wait. One caller alone never waits:
// the previous transaction answered only it.
func (w *writer) joinLate(batch []*writeReq) []*writeReq {
	if w.noJoin {
		w.noJoin = false
		return batch
	}
	batch = w.take(batch)
	if w.lazyNormal && batch[0].lazy {
		return batch // nobody waits for a lazy transaction's commit
	}
	want := min(w.lastAnswered, w.maxBatch)
	if len(batch) >= want || w.lastCommit <= 0 {
		return batch
	}
	timer := time.NewTimer(min(w.lastCommit/2, maxJoinWait))
	defer timer.Stop()
	for len(batch) < want {
		select {
		case <-w.arrived:
			batch = w.take(batch)
		case <-timer.C:
			return w.take(batch)
		}
	}
	return batch
}

// failQueued answers every queued request with err.
func (w *writer) failQueued(err error) {
	w.mu.Lock()
	queued := w.queue
	w.queue = nil
	w.mu.Unlock()
	for _, r := range queued {
		if r.state.CompareAndSwap(reqQueued, reqTaken) {
			r.err = err
			close(r.done)
		}
	}
}

// close waits for the batch in progress, refuses new requests and answers
// the queued ones with ErrStoreClosed. The token is never given back.
func (w *writer) close() {
	w.token <- struct{}{}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.failQueued(store.ErrStoreClosed)
	for _, st := range w.stmts {
		st.Close()
	}
}

// run executes a batch, retrying the whole transaction while the database
// is busy, and answers every request, late joiners included; it returns
// the batch with them.
func (w *writer) run(batch []*writeReq) []*writeReq {
	deadline := time.Now().Add(w.retryFor)
	backoff := 2 * time.Millisecond
	guarded := w.guarded
	for attempt := 1; ; attempt++ {
		var err error
		batch, err = w.runOnce(batch, guarded)
		if errors.Is(err, errGuardedRerun) {
			// A request failed in a batch run without savepoints: nothing
			// was committed; the batch runs again, each request in its
			// savepoint, so that the failure is its own.
			guarded = true
			attempt--
			continue
		}
		if err == nil {
			for _, r := range batch {
				close(r.done)
			}
			return batch
		}
		if !isBusy(err) || time.Now().After(deadline) {
			err = mapErr(err)
			for _, r := range batch {
				r.err = err
				close(r.done)
			}
			w.lastAnswered = 0
			return batch
		}
		// Nothing was committed: callers whose context has ended can be
		// answered now; the rest are retried together.
		live := batch[:0]
		for _, r := range batch {
			if cerr := r.ctx.Err(); cerr != nil {
				r.err = cerr
				close(r.done)
				continue
			}
			live = append(live, r)
		}
		batch = live
		if len(batch) == 0 {
			w.lastAnswered = 0
			return batch
		}
		sleep := backoff/2 + rand.N(backoff)
		w.log.Warn("sqlstore: database busy, retrying write transaction",
			"attempt", attempt, "requests", len(batch), "backoff", sleep)
		time.Sleep(sleep)
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// errGuardedRerun is runOnce's answer when a request of an unguarded batch
// failed: the transaction was rolled back, and the batch must run again
// guarded.
var errGuardedRerun = errors.New("sqlstore: rerun the batch with savepoints")

// runOnce runs batch, and the requests that join it late (see joinLate),
// in one transaction, and returns the batch with them. It returns a
// non-nil error only when the transaction as a whole failed (nothing
// committed); per-request errors are left in each request.
//
// Unguarded, the requests run one after the other with no savepoint
// between them (two statements less per request; an A/B of 4 writers'
// CPU per append showed no gain beyond its noise): requests rarely
// fail, and when one does, the whole
// transaction rolls back and runOnce returns errGuardedRerun, so that run
// reruns the batch guarded, each request in a savepoint of its own, and
// the failure undoes that request's writes only. A request's function may
// thus run twice, as it already does when a busy database is retried; only
// the committed run counts.
func (w *writer) runOnce(batch []*writeReq, guarded bool) (_ []*writeReq, err error) {
	tx := &wtx{w: w}
	// A transaction of lazy requests commits without the fsync; the
	// level goes back before the next durable one. (SQLite refuses to
	// change it inside a transaction.)
	if lazy := w.lazyNormal && batch[0].lazy; lazy != w.lowered {
		level := "NORMAL"
		if !lazy {
			level = string(w.sync)
		}
		if _, err := tx.exec("PRAGMA synchronous = " + level); err != nil {
			return batch, err
		}
		w.lowered = lazy
	}
	if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
		if !strings.Contains(err.Error(), "within a transaction") {
			return batch, err
		}
		// A previous rollback failed and left a transaction open: end it
		// and start afresh.
		w.conn.ExecContext(w.ctx, "ROLLBACK")
		if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
			return batch, err
		}
	}
	defer func() {
		if err != nil {
			if _, rerr := w.conn.ExecContext(w.ctx, "ROLLBACK"); rerr != nil && !noTransaction(rerr) {
				w.log.Error("sqlstore: rollback failed", "err", rerr)
			}
		}
	}()
	// A lone request, and every request of an unguarded batch, runs
	// without a savepoint.
	alone := len(batch) == 1
	for i := 0; ; i++ {
		if i == len(batch) {
			if batch = w.joinLate(batch); i == len(batch) {
				break
			}
		}
		r := batch[i]
		if !guarded || (alone && i == 0) {
			if r.err = w.call(tx, r); r.err == nil {
				continue
			}
			if alone && i == 0 {
				// Nothing else ran: the rollback undoes this request
				// alone, without an fsync.
				if _, err := w.conn.ExecContext(w.ctx, "ROLLBACK"); err != nil {
					w.log.Error("sqlstore: rollback failed", "err", err)
				}
				w.lastAnswered = 1
				return batch[:1], nil
			}
			return batch, errGuardedRerun // the deferred ROLLBACK undoes the batch
		}
		if _, err := tx.exec("SAVEPOINT req"); err != nil {
			return batch, err
		}
		r.err = w.call(tx, r)
		if r.err != nil {
			if _, err := tx.exec("ROLLBACK TO req"); err != nil {
				return batch, err
			}
		}
		if _, err := tx.exec("RELEASE req"); err != nil {
			return batch, err
		}
	}
	start := time.Now()
	if _, err := tx.exec("COMMIT"); err != nil {
		return batch, err
	}
	if !w.lazyNormal || !batch[0].lazy {
		// What the next durable transaction may wait for (joinLate).
		w.lastCommit = time.Since(start)
		w.lastAnswered = len(batch)
	}
	if w.cp != nil {
		w.cp.committed()
	}
	return batch, nil
}

// call runs one request's function, turning a panic into an error so that
// one bad request cannot take the writer down.
func (w *writer) call(tx *wtx, r *writeReq) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("sqlstore: internal error in write: %v", p)
			w.log.Error("sqlstore: panic in write request", "panic", p)
		}
	}()
	return mapErr(r.fn(tx))
}

func noTransaction(err error) bool {
	return strings.Contains(err.Error(), "no transaction is active")
}

// wtx is the handle a writeFunc uses. Every statement is prepared once on
// the write connection and reused.
type wtx struct{ w *writer }

func (t *wtx) stmt(query string) (*sqlx.Stmt, error) {
	if t.w.faults != nil {
		if err := t.w.faults(query); err != nil {
			return nil, err
		}
	}
	if st, ok := t.w.stmts[query]; ok {
		return st, nil
	}
	st, err := t.w.conn.PreparexContext(t.w.ctx, query)
	if err != nil {
		return nil, err
	}
	t.w.stmts[query] = st
	return st, nil
}

// exec runs a statement that returns no rows.
func (t *wtx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.w.ctx, args...)
}

// get scans exactly one row into dest; sql.ErrNoRows when there is none.
func (t *wtx) get(dest any, query string, args ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.GetContext(t.w.ctx, dest, args...)
}

// scan runs a query returning one row and scans its columns into dest
// without reflection (the hot paths use it).
func (t *wtx) scan(query string, args []any, dest ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(t.w.ctx, args...).Scan(dest...)
}

// selectRows scans all rows into dest, a pointer to a slice.
func (t *wtx) selectRows(dest any, query string, args ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.SelectContext(t.w.ctx, dest, args...)
}
