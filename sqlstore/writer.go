package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// writeFunc is one caller's share of a write transaction. It runs on the
// writer goroutine inside its own savepoint. Returning an error rolls back
// the savepoint and reports the error to the caller; returning nil keeps its
// writes, which are acknowledged once the whole transaction has committed.
//
// A writeFunc may run more than once (when the whole transaction is retried
// after a busy error), so it must only communicate through values it
// overwrites on every run.
type writeFunc func(tx *wtx) error

// Request states: a request is queued until the writer takes it or its
// caller abandons it, whichever happens first.
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

type writeReq struct {
	ctx   context.Context
	fn    writeFunc
	state atomic.Int32
	err   error
	done  chan struct{}
}

// writer owns the store's single write connection. One goroutine runs
// queued requests in batches: one transaction per batch (group commit).
type writer struct {
	conn     *sqlx.Conn
	lock     *fileLock // nil when disabled
	log      *slog.Logger
	maxBatch int
	retryFor time.Duration

	queue   chan *writeReq
	quit    chan struct{}
	stopped chan struct{}
	stmts   map[string]*sqlx.Stmt
	ctx     context.Context // statement context, independent of callers
	faults  func(query string) error
}

func newWriter(conn *sqlx.Conn, lock *fileLock, cfg *config) *writer {
	w := &writer{
		conn:     conn,
		lock:     lock,
		log:      cfg.logger,
		maxBatch: cfg.maxBatch,
		retryFor: cfg.busyRetry,
		queue:    make(chan *writeReq, cfg.maxBatch),
		quit:     make(chan struct{}),
		stopped:  make(chan struct{}),
		stmts:    make(map[string]*sqlx.Stmt),
		ctx:      context.Background(),
		faults:   cfg.faults,
	}
	go w.loop()
	return w
}

// do enqueues fn and waits for its durable outcome. A request still queued
// when ctx ends is withdrawn and returns ctx.Err(); once the writer has
// taken it, do waits for the transaction so that the reported outcome is
// the true one.
func (w *writer) do(ctx context.Context, fn writeFunc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case w.queue <- r:
	case <-ctx.Done():
		return ctx.Err()
	case <-w.stopped:
		return store.ErrStoreClosed
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
	case <-w.stopped:
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return store.ErrStoreClosed
		}
	}
	<-r.done
	return r.err
}

// close stops the writer after the batch in progress and waits for it.
func (w *writer) close() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.stopped
	for _, st := range w.stmts {
		st.Close()
	}
}

func (w *writer) loop() {
	defer close(w.stopped)
	batch := make([]*writeReq, 0, w.maxBatch)
	for {
		batch = batch[:0]
		select {
		case r := <-w.queue:
			batch = w.take(batch, r)
		case <-w.quit:
			return
		}
	fill:
		for len(batch) < w.maxBatch {
			select {
			case r := <-w.queue:
				batch = w.take(batch, r)
			default:
				break fill
			}
		}
		if len(batch) > 0 {
			w.run(batch)
		}
	}
}

func (w *writer) take(batch []*writeReq, r *writeReq) []*writeReq {
	if r.state.CompareAndSwap(reqQueued, reqTaken) {
		batch = append(batch, r)
	}
	return batch
}

// run executes a batch, retrying the whole transaction while the database
// is busy, and answers every request.
func (w *writer) run(batch []*writeReq) {
	deadline := time.Now().Add(w.retryFor)
	backoff := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := w.runOnce(batch)
		if err == nil {
			for _, r := range batch {
				close(r.done)
			}
			return
		}
		if !isBusy(err) || time.Now().After(deadline) {
			err = mapErr(err)
			for _, r := range batch {
				r.err = err
				close(r.done)
			}
			return
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
			return
		}
		sleep := backoff/2 + rand.N(backoff)
		w.log.Warn("sqlstore: database busy, retrying write transaction",
			"attempt", attempt, "requests", len(batch), "backoff", sleep)
		time.Sleep(sleep)
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// runOnce runs batch in one transaction. It returns a non-nil error only
// when the transaction as a whole failed (nothing committed); per-request
// errors are left in each request.
func (w *writer) runOnce(batch []*writeReq) (err error) {
	if w.lock != nil {
		if err := w.lock.lock(); err != nil {
			return fmt.Errorf("sqlstore: writer file lock: %w", err)
		}
		defer w.lock.unlock()
	}
	tx := &wtx{w: w}
	if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
		if !strings.Contains(err.Error(), "within a transaction") {
			return err
		}
		// A previous rollback failed and left a transaction open: end it
		// and start afresh.
		w.conn.ExecContext(w.ctx, "ROLLBACK")
		if _, err := tx.exec("BEGIN IMMEDIATE"); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			if _, rerr := w.conn.ExecContext(w.ctx, "ROLLBACK"); rerr != nil && !noTransaction(rerr) {
				w.log.Error("sqlstore: rollback failed", "err", rerr)
			}
		}
	}()
	if len(batch) == 1 {
		r := batch[0]
		r.err = w.call(tx, r)
		if r.err != nil {
			// Nothing of the only request is kept: roll back, no fsync.
			if _, err := w.conn.ExecContext(w.ctx, "ROLLBACK"); err != nil {
				w.log.Error("sqlstore: rollback failed", "err", err)
			}
			return nil
		}
	} else {
		for _, r := range batch {
			if _, err := tx.exec("SAVEPOINT req"); err != nil {
				return err
			}
			r.err = w.call(tx, r)
			if r.err != nil {
				if _, err := tx.exec("ROLLBACK TO req"); err != nil {
					return err
				}
			}
			if _, err := tx.exec("RELEASE req"); err != nil {
				return err
			}
		}
	}
	if _, err := tx.exec("COMMIT"); err != nil {
		return err
	}
	return nil
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

// selectRows scans all rows into dest, a pointer to a slice.
func (t *wtx) selectRows(dest any, query string, args ...any) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return st.SelectContext(t.w.ctx, dest, args...)
}
