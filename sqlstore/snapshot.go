package sqlstore

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// snap is a read transaction on the read pool: every query in it sees the
// same snapshot of the database (a WAL reader keeps its snapshot until the
// transaction ends). Its statements are the pool's cached prepared
// statements, bound to the transaction's connection.
type snap struct {
	s   *Store
	ctx context.Context
	tx  *sqlx.Tx
}

// snapshot runs fn in a read-only transaction and ends it.
func (s *Store) snapshot(ctx context.Context, fn func(r *snap) error) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	tx, err := s.reads.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	return mapErr(fn(&snap{s: s, ctx: ctx, tx: tx}))
}

func (r *snap) stmt(query string) (*sqlx.Stmt, error) {
	st, err := r.s.readStmt(r.ctx, query)
	if err != nil {
		return nil, err
	}
	return r.tx.StmtxContext(r.ctx, st), nil
}

// scan runs a query returning one row into dest, without reflection;
// sql.ErrNoRows when there is none.
func (r *snap) scan(query string, args []any, dest ...any) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(r.ctx, args...).Scan(dest...)
}

// query calls fn for each row; the rows are always closed.
func (r *snap) query(query string, args []any, fn func(*sql.Rows) error) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(r.ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
