package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentstore/sessionstore/pgstore"
)

// TestSendFlushedAnswersBeforeLastStatement: a pipeline sent with
// SendFlushed has the server send its statements' answers before it runs
// the last statement, as a batch of governed calls needs (it hands its
// turn over while its COMMIT waits for the WAL flush). The last statement
// here waits for an advisory lock the test holds: the first statement's
// answer must arrive while it waits. The same pipeline sent by pgx's
// SendBatch (no Flush) is the control: its first answer must not arrive
// until the lock is let go, else the server flushes by itself and the
// Flush is no longer needed.
func TestSendFlushedAnswersBeforeLastStatement(t *testing.T) {
	ctx := context.Background()
	holder := connect(t, serverURL(t))
	conn := connect(t, serverURL(t))
	const key = 736104
	for _, flushed := range []bool{true, false} {
		if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
			t.Fatal(err)
		}
		b := &pgx.Batch{}
		b.Queue(`SELECT $1::int + 1`, 41)
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, key) // waits for the holder
		var br pgstore.FlushedResults
		if flushed {
			var err error
			if br, err = pgstore.SendFlushed(ctx, conn, b, nil); err != nil {
				t.Fatal(err)
			}
		} else {
			br = conn.SendBatch(ctx, b)
		}
		first := make(chan error, 1)
		var got int
		go func() { first <- br.QueryRow().Scan(&got) }()
		var early bool
		select {
		case err := <-first:
			early = true
			if err != nil || got != 42 {
				t.Fatalf("flushed=%v: first answer %d, %v; want 42", flushed, got, err)
			}
		case <-time.After(map[bool]time.Duration{true: 20 * time.Second, false: 300 * time.Millisecond}[flushed]):
		}
		if early != flushed {
			t.Errorf("flushed=%v: the first answer came while the last statement waited for the lock: %v, want %v", flushed, early, flushed)
		}
		if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key); err != nil {
			t.Fatal(err)
		}
		if !early {
			if err := <-first; err != nil || got != 42 {
				t.Fatalf("flushed=%v: first answer %d, %v; want 42", flushed, got, err)
			}
		}
		if _, err := br.Exec(); err != nil {
			t.Fatalf("flushed=%v: the lock: %v", flushed, err)
		}
		if err := br.Close(); err != nil {
			t.Fatalf("flushed=%v: close: %v", flushed, err)
		}
	}
}

// TestSendFlushedRefusalSkipsCommit: the Flush changes no outcome. A
// statement the server refuses makes it skip everything up to the
// pipeline's one Sync, the COMMIT after the Flush too: nothing of the
// transaction is committed, the error reaches the statement's read and
// Close, and the tracer is told of each statement read, as pgx tells it
// of a batch's.
func TestSendFlushedRefusalSkipsCommit(t *testing.T) {
	ctx := context.Background()
	conn := connect(t, serverURL(t))
	if _, err := conn.Exec(ctx, `CREATE TEMPORARY TABLE flushed (v int)`); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`INSERT INTO flushed VALUES ($1)`, 1)
	b.Queue(`SELECT 1 / $1::int`, 0)
	b.Queue(`COMMIT`)
	tr := &batchTrace{}
	br, err := pgstore.SendFlushed(ctx, conn, b, tr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := br.Exec(); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
	var pe *pgconn.PgError
	if _, err := br.Exec(); !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("division by zero answered %v", err)
	}
	if _, err := br.Exec(); err == nil {
		t.Fatal("the COMMIT after a refused statement answered no error")
	}
	if err := br.Close(); !errors.As(err, &pe) {
		t.Fatalf("close: %v, want the refusal", err)
	}
	if s := conn.PgConn().TxStatus(); s != 'E' {
		t.Fatalf("transaction status %c after the refusal, want E (failed, not committed)", s)
	}
	if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM flushed`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows committed (%v), want none", n, err)
	}
	if tr.starts != 1 || tr.ends != 1 || len(tr.sqls) != 3 || tr.sqls[2] != `SELECT 1 / $1::int` {
		t.Fatalf("traced %d starts, %d ends, statements %q; want 1, 1 and the three read", tr.starts, tr.ends, tr.sqls)
	}
}

// TestSendFlushedStalePlanClosesConnection: SendFlushed prepares its
// statements on the connection for good. When a table's column changes
// type under one of them, the server refuses to run it ("cached plan
// must not change result type"): the batch fails, and the connection is
// closed, so that the pool drops it rather than fail every later batch
// sent on it. A new connection runs the same pipeline.
func TestSendFlushedStalePlanClosesConnection(t *testing.T) {
	ctx := context.Background()
	run := func(conn *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT v FROM flushed_stale WHERE v >= $1`, 0)
		b.Queue(`SELECT 1`)
		br, err := pgstore.SendFlushed(ctx, conn, b, nil)
		if err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	}
	loc := newSchema(t)
	ddl := connect(t, loc)
	if _, err := ddl.Exec(ctx, `CREATE TABLE flushed_stale (v int)`); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, loc)
	if err := run(conn); err != nil {
		t.Fatal(err)
	}
	if _, err := ddl.Exec(ctx, `ALTER TABLE flushed_stale ALTER COLUMN v TYPE bigint`); err != nil {
		t.Fatal(err)
	}
	var pe *pgconn.PgError
	if err := run(conn); !errors.As(err, &pe) || pe.Code != "0A000" {
		t.Fatalf("after the column's change: %v, want the server's refusal of the stale statement", err)
	}
	if !conn.IsClosed() {
		t.Fatal("the connection holding the stale statement is still open")
	}
	fresh := connect(t, loc)
	if err := run(fresh); err != nil {
		t.Fatalf("a new connection: %v", err)
	}
}

// connect opens a connection to url, closed when t ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// batchTrace is a pgx.BatchTracer that keeps what it is told.
type batchTrace struct {
	starts, ends int
	sqls         []string
}

func (t *batchTrace) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.starts++
	return ctx
}
func (t *batchTrace) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	t.sqls = append(t.sqls, d.SQL)
}
func (t *batchTrace) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) { t.ends++ }
