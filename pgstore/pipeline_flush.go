package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A batch whose pipeline ends with its COMMIT (decideBatch's one round
// trip) is sent with a Flush message before the COMMIT: the server then
// sends the statements' answers as soon as they have run, and the leader
// hands its turn over while the COMMIT waits for its WAL flush, so that
// the next batch's statements run meanwhile. pgx's SendBatch ends a
// pipeline with one Sync and nothing before it, and the server holds its
// answers until that Sync, which it reaches after the COMMIT: measured,
// the answers came after the WAL flush, the hand-over overlapped nothing,
// and a batch of 15 calls of 32 callers on their own sessions took
// 2.5–3.1 ms from one batch to the next, against 1.4–1.9 ms with the
// Flush (a durable server on this machine's disk). The Flush changes no
// outcome: the pipeline still has one Sync, so a statement the server
// refuses still makes it skip the COMMIT.

// pipelineResults is what decideBatch reads a pipeline's answers with:
// pgx.BatchResults, or a flushedBatch.
type pipelineResults interface {
	Exec() (pgconn.CommandTag, error)
	Query() (pgx.Rows, error)
	QueryRow() pgx.Row
	Close() error
}

// flushPlan is how a store sends a flushed pipeline, found when it opens
// from its pool's configuration.
type flushPlan struct {
	// on: the pool's connections prepare and cache their statements
	// (pgx's default exec mode), so a flushed pipeline can send prepared
	// statements too. A pool set to another mode (PgBouncer's transaction
	// pooling, say) keeps pgx's SendBatch.
	on bool
	// tracer is the pool's tracer, told of a flushed pipeline's
	// statements as pgx tells it of a batch's.
	tracer pgx.BatchTracer
}

// newFlushPlan reads pool's configuration.
func newFlushPlan(pool *pgxpool.Pool) flushPlan {
	cc := pool.Config().ConnConfig
	p := flushPlan{on: cc.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement}
	p.tracer, _ = cc.Tracer.(pgx.BatchTracer)
	return p
}

// sendFlushed sends b's statements in one pipeline with one Sync, as
// SendBatch does, with a Flush message before the last one (the
// COMMIT). Each statement is prepared on conn once (Conn.Prepare with
// its text as its name: a statement of pgx's own, apart from its
// statement cache), so the pipeline sends no Parse. An error returned
// here was met before anything of b was sent; an error in sending it is
// the first read's.
func (p flushPlan) sendFlushed(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) (*flushedBatch, error) {
	sds := make([]*pgconn.StatementDescription, len(b.QueuedQueries))
	for i, q := range b.QueuedQueries {
		sd, err := conn.Prepare(ctx, q.SQL, q.SQL)
		if err != nil {
			return nil, err
		}
		sds[i] = sd
	}
	fb := &flushedBatch{ctx: ctx, conn: conn, queued: b.QueuedQueries, tracer: p.tracer}
	if fb.tracer != nil {
		fb.ctx = fb.tracer.TraceBatchStart(ctx, conn, pgx.TraceBatchStartData{Batch: b})
	}
	fb.pipe = conn.PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	for i, q := range b.QueuedQueries {
		if i == len(b.QueuedQueries)-1 {
			fb.pipe.SendFlushRequest()
		}
		if err := eqb.Build(conn.TypeMap(), sds[i], q.Arguments); err != nil {
			// Nothing was sent (the pipeline sends at its Sync): closing
			// it unsynced closes the connection, which the pool then
			// drops.
			fb.pipe.Close()
			err = fmt.Errorf("pgstore: encode the arguments of %.40q: %w", q.SQL, err)
			if fb.tracer != nil {
				fb.tracer.TraceBatchEnd(fb.ctx, conn, pgx.TraceBatchEndData{Err: err})
			}
			return nil, err
		}
		// The result formats are kept by the pipeline until the answer
		// is read; the builder reuses its slice.
		fb.pipe.SendQueryStatement(sds[i], eqb.ParamValues, eqb.ParamFormats, slices.Clone(eqb.ResultFormats))
	}
	if err := fb.pipe.Sync(); err != nil {
		fb.err = err
	}
	return fb, nil
}

// flushedBatch reads the answers of a pipeline sent by sendFlushed, in
// order, as pgx.BatchResults reads a batch's.
type flushedBatch struct {
	ctx    context.Context
	conn   *pgx.Conn
	pipe   *pgconn.Pipeline
	queued []*pgx.QueuedQuery
	next   int // the statement whose answer is read next
	tracer pgx.BatchTracer
	err    error // the first error met: every later read returns it
	closed bool
}

// errBatchClosed is a read after Close.
var errBatchClosed = errors.New("pgstore: pipeline closed")

// result reads the next statement's answer.
func (fb *flushedBatch) result() (*pgconn.ResultReader, *pgx.QueuedQuery, error) {
	if fb.closed {
		return nil, nil, errBatchClosed
	}
	if fb.err != nil {
		return nil, nil, fb.err
	}
	if fb.next >= len(fb.queued) {
		fb.err = errors.New("pgstore: no more answers in the pipeline")
		return nil, nil, fb.err
	}
	q := fb.queued[fb.next]
	fb.next++
	res, err := fb.pipe.GetResults()
	if err == nil {
		rr, ok := res.(*pgconn.ResultReader)
		if ok {
			return rr, q, nil
		}
		err = fmt.Errorf("pgstore: the pipeline answered %T for %.40q", res, q.SQL)
	}
	fb.err = err
	fb.trace(q, pgconn.CommandTag{}, err)
	return nil, q, err
}

func (fb *flushedBatch) trace(q *pgx.QueuedQuery, tag pgconn.CommandTag, err error) {
	if fb.tracer != nil {
		fb.tracer.TraceBatchQuery(fb.ctx, fb.conn, pgx.TraceBatchQueryData{SQL: q.SQL, Args: q.Arguments, CommandTag: tag, Err: err})
	}
}

// Exec reads the next statement's answer, its rows discarded.
func (fb *flushedBatch) Exec() (pgconn.CommandTag, error) {
	rr, q, err := fb.result()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	if err != nil {
		fb.err = err
	}
	fb.trace(q, tag, err)
	return tag, err
}

// Query returns the next statement's rows.
func (fb *flushedBatch) Query() (pgx.Rows, error) {
	rr, q, err := fb.result()
	if err != nil {
		return nil, err
	}
	fb.trace(q, pgconn.CommandTag{}, nil)
	return pgx.RowsFromResultReader(fb.conn.TypeMap(), rr), nil
}

// QueryRow returns the next statement's one row.
func (fb *flushedBatch) QueryRow() pgx.Row {
	rows, err := fb.Query()
	return &flushedRow{rows: rows, err: err}
}

// Close reads what is left of the pipeline's answers, up to its Sync,
// and returns the first error met (none after a first Close).
func (fb *flushedBatch) Close() error {
	if fb.closed {
		return nil
	}
	fb.closed = true
	for fb.err == nil && fb.next < len(fb.queued) {
		q := fb.queued[fb.next]
		fb.next++
		res, err := fb.pipe.GetResults()
		var tag pgconn.CommandTag
		if rr, ok := res.(*pgconn.ResultReader); ok && err == nil {
			tag, err = rr.Close()
		} else if err == nil {
			err = fmt.Errorf("pgstore: the pipeline answered %T for %.40q", res, q.SQL)
		}
		fb.err = err
		fb.trace(q, tag, err)
	}
	if fb.err == nil {
		if res, err := fb.pipe.GetResults(); err != nil {
			fb.err = err
		} else if _, ok := res.(*pgconn.PipelineSync); !ok {
			fb.err = fmt.Errorf("pgstore: the pipeline answered %T for its Sync", res)
		}
	}
	if err := fb.pipe.Close(); fb.err == nil {
		fb.err = err
	}
	if stalePlan(fb.err) {
		// The statements are prepared on this connection for good: after
		// a change of a table's columns (a newer binary's migration) one
		// of them can no longer run, and would fail every batch sent on
		// the connection. Closed, the connection is dropped by the pool
		// when released (pgx's own statement cache forgets a statement
		// on the same error).
		fb.conn.Close(context.WithoutCancel(fb.ctx))
	}
	if fb.tracer != nil {
		fb.tracer.TraceBatchEnd(fb.ctx, fb.conn, pgx.TraceBatchEndData{Err: fb.err})
	}
	return fb.err
}

// stalePlan reports the server's refusal to run a prepared statement
// whose result's columns changed since it was prepared.
func stalePlan(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "0A000" && strings.Contains(pe.Message, "cached plan")
}

// flushedRow is QueryRow's row: the first row of a statement's answer.
type flushedRow struct {
	rows pgx.Rows
	err  error
}

// Scan scans the first row into dest (pgx.ErrNoRows without one), and
// reads the rest of the answer.
func (r *flushedRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
