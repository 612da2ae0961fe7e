package sqlstore

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// rtx is a read transaction on the read pool: every query in it sees the
// same snapshot of the database (WAL readers keep their snapshot until the
// transaction ends). Statements are the pool's cached prepared statements,
// bound to the transaction's connection.
type rtx struct {
	s   *Store
	ctx context.Context
	tx  *sqlx.Tx
}

// readTx runs fn in a read-only transaction and ends it.
func (s *Store) readTx(ctx context.Context, fn func(r *rtx) error) error {
	if s.closed.Load() {
		return store.ErrStoreClosed
	}
	tx, err := s.reads.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer tx.Rollback()
	return fn(&rtx{s: s, ctx: ctx, tx: tx})
}

func (r *rtx) stmt(query string) (*sqlx.Stmt, error) {
	st, err := r.s.readStmt(r.ctx, query)
	if err != nil {
		return nil, err
	}
	return r.tx.StmtxContext(r.ctx, st), nil
}

// get scans one row into dest; sql.ErrNoRows when there is none.
func (r *rtx) get(dest any, query string, args ...any) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	return st.GetContext(r.ctx, dest, args...)
}

// selectRows scans all rows into dest, a pointer to a slice.
func (r *rtx) selectRows(dest any, query string, args ...any) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	return mapErr(st.SelectContext(r.ctx, dest, args...))
}
