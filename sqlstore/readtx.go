package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// rtx is a read transaction on the read pool: every query in it sees the
// same snapshot of the database (WAL readers keep their snapshot until the
// transaction ends). Statements are the pool's cached prepared statements,
// bound to the transaction's connection.
type rtx struct {
	s    *Store
	ctx  context.Context
	conn *sqlx.Conn // the connection tx runs on, for QueryHot
	tx   *sqlx.Tx
	// temp holds the statements a readTxHot transaction prepared for one
	// call (closed when it ends).
	temp []*sqlx.Stmt
	// missed lists statements that were not in the pool's cache yet: they
	// were prepared on the transaction's connection only, and are added to
	// the cache after the transaction has given its connection back.
	missed []string
	// snap is the ReadSnapshot this read runs in (nil: none); its
	// connection is conn, already inside the snapshot's transaction.
	snap *snapshot
}

// readTx runs fn in a read-only transaction and ends it.
func (s *Store) readTx(ctx context.Context, fn func(r *rtx) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, fn)
	}
	conn, err := s.readConn(ctx)
	if err != nil {
		return err
	}
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return mapErr(err)
	}
	r := &rtx{s: s, ctx: ctx, conn: conn, tx: tx}
	err = fn(r)
	tx.Rollback()
	conn.Close() // back to the pool before preparing on it below
	for _, q := range r.missed {
		s.readStmt(ctx, q) // best effort; a failure only costs a later prepare
	}
	return mapErr(err)
}

// readConn takes a connection of the read pool; the caller closes it.
func (s *Store) readConn(ctx context.Context) (*sqlx.Conn, error) {
	if s.closed.Load() {
		return nil, store.ErrStoreClosed
	}
	conn, err := s.reads.Connx(ctx)
	if err != nil {
		return nil, mapErr(err)
	}
	return conn, nil
}

// readTxHot runs fn in a read transaction begun on the driver connection
// itself (sqlcore.HotReader): BEGIN and ROLLBACK are statements the
// connection keeps prepared, with no database/sql transaction around
// them, which halves the fixed cost of a read made of hot statements. A
// statement that is not hot runs on the same connection (so in the same
// snapshot), prepared for the call.
func (s *Store) readTxHot(ctx context.Context, fn func(r *rtx) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, fn)
	}
	conn, err := s.readConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { return hotExec(ctx, dc, "BEGIN") }); err != nil {
		return mapErr(err)
	}
	r := &rtx{s: s, ctx: ctx, conn: conn}
	err = fn(r)
	for _, st := range r.temp {
		st.Close()
	}
	rerr := conn.Raw(func(dc any) error {
		// Whatever ctx says: the connection goes back to the pool, and
		// must not go back inside a transaction.
		if err := hotExec(context.Background(), dc, "ROLLBACK"); err != nil {
			return errors.Join(err, driver.ErrBadConn) // the pool discards it
		}
		return nil
	})
	if err == nil && rerr != nil {
		err = rerr
	}
	return mapErr(err)
}

// stmt returns query prepared on the transaction's connection. It never
// takes a second connection from the pool: with every reader inside a
// transaction, preparing on the pool would wait for a connection forever.
func (r *rtx) stmt(query string) (*sqlx.Stmt, error) {
	if r.s.closed.Load() {
		return nil, store.ErrStoreClosed
	}
	if r.snap != nil {
		return r.snap.stmt(r.ctx, query)
	}
	if r.tx == nil { // readTxHot: the connection is in the transaction
		st, err := r.conn.PreparexContext(r.ctx, query)
		if err == nil {
			r.temp = append(r.temp, st)
		}
		return st, err
	}
	if st, ok := r.s.readStmts.Load(query); ok {
		return r.tx.StmtxContext(r.ctx, st.(*sqlx.Stmt)), nil
	}
	r.missed = append(r.missed, query)
	return r.tx.PreparexContext(r.ctx, query)
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

// scan runs a query returning one row into dest, without reflection;
// sql.ErrNoRows when there is none.
func (r *rtx) scan(query string, args []any, dest ...any) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	return st.QueryRowContext(r.ctx, args...).Scan(dest...)
}

// QueryHot runs query on the transaction's driver connection (see
// sqlcore.HotQuerier and hotQuery): the same snapshot, below database/sql.
func (r *rtx) QueryHot(query string, args []any, fn func(sqlcore.Rows) error) error {
	if r.s.closed.Load() {
		return store.ErrStoreClosed
	}
	return r.conn.Raw(func(dc any) error { return hotQuery(r.ctx, dc, query, args, fn) })
}

// query calls fn for each row; the rows are always closed.
func (r *rtx) query(query string, args []any, fn func(sqlcore.Rows) error) error {
	st, err := r.stmt(query)
	if err != nil {
		return err
	}
	return eachRow(r.ctx, st, args, fn)
}
