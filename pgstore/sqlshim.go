package pgstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// The conversation and runtime facets use database/sql through sqlx (on
// pgx's stdlib driver, sharing the store's pool): struct scanning by db
// tags, sql.Null* columns and sql.Result, with the same small helpers as
// sqlstore (write, readTx, get, selectRows). Queries are written with "?"
// or "?N" placeholders and rebound once to PostgreSQL's "$N". pgx prepares
// and caches every statement per connection.

// rebinds caches rebind results: queries are constant strings.
var rebinds sync.Map

// rebind turns "?" (numbered in order) and "?N" placeholders into "$N".
// Queries never contain a literal question mark.
func rebind(query string) string {
	if q, ok := rebinds.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		if c != '?' {
			b.WriteByte(c)
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		b.WriteByte('$')
		if j > i+1 {
			b.WriteString(query[i+1 : j])
		} else {
			n++
			b.WriteString(strconv.Itoa(n))
		}
		i = j - 1
	}
	q := b.String()
	rebinds.Store(query, q)
	return q
}

// wtx is a write transaction (READ COMMITTED) of a facet.
type wtx struct {
	ctx context.Context
	tx  *sqlx.Tx
}

func (t *wtx) Exec(query string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(t.ctx, rebind(query), args...)
}

// get scans one row into dest; sql.ErrNoRows when there is none.
func (t *wtx) Get(dest any, query string, args ...any) error {
	return t.tx.GetContext(t.ctx, dest, rebind(query), args...)
}

// selectRows scans all rows into dest, a pointer to a slice.
func (t *wtx) Select(dest any, query string, args ...any) error {
	return t.tx.SelectContext(t.ctx, dest, rebind(query), args...)
}

// write runs fn in one READ COMMITTED transaction and commits it when fn
// returns nil; fn's error rolls back and reaches the caller. A
// serialization failure or deadlock runs fn again from the start (bounded;
// see retry): fn must only assign its outputs.
func (s *Store) write(ctx context.Context, fn func(tx *wtx) error) error {
	return s.retry(ctx, func(ctx context.Context) error {
		tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return err
		}
		if err := fn(&wtx{ctx: ctx, tx: tx}); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
}

// Scan scans one row into dest without reflection; sql.ErrNoRows when
// there is none.
func (t *wtx) Scan(query string, args []any, dest ...any) error {
	return t.tx.QueryRowContext(t.ctx, rebind(query), args...).Scan(dest...)
}

// Query calls fn for each row; the rows are always closed.
func (t *wtx) Query(query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := t.tx.QueryContext(t.ctx, rebind(query), args...)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

// rtx is a read-only REPEATABLE READ transaction: every query in it sees
// the same snapshot.
type rtx struct {
	ctx context.Context
	tx  *sqlx.Tx
}

func (r *rtx) Get(dest any, query string, args ...any) error {
	return r.tx.GetContext(r.ctx, dest, rebind(query), args...)
}

func (r *rtx) Select(dest any, query string, args ...any) error {
	return mapErr(r.tx.SelectContext(r.ctx, dest, rebind(query), args...))
}

// Exec refuses: the transaction is read-only.
func (r *rtx) Exec(query string, args ...any) (sql.Result, error) { return nil, store.ErrReadOnly }

// Scan scans one row into dest without reflection; sql.ErrNoRows when
// there is none.
func (r *rtx) Scan(query string, args []any, dest ...any) error {
	return r.tx.QueryRowContext(r.ctx, rebind(query), args...).Scan(dest...)
}

// Query calls fn for each row; the rows are always closed.
func (r *rtx) Query(query string, args []any, fn func(*sql.Rows) error) error {
	rows, err := r.tx.QueryContext(r.ctx, rebind(query), args...)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

// readTx runs fn in a read-only snapshot transaction and ends it.
func (s *Store) readTx(ctx context.Context, fn func(r *rtx) error) error {
	return s.retry(ctx, func(ctx context.Context) error {
		tx, err := s.db.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		return fn(&rtx{ctx: ctx, tx: tx})
	})
}

// get runs a read returning one row (sql.ErrNoRows when none; other errors
// unmapped, as the callers map them).
func (s *Store) get(ctx context.Context, dest any, query string, args ...any) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	return s.db.GetContext(ctx, dest, rebind(query), args...)
}

// selectRows runs a read returning many rows into dest.
func (s *Store) selectRows(ctx context.Context, dest any, query string, args ...any) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	return mapErr(s.db.SelectContext(ctx, dest, rebind(query), args...))
}
