package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// The hot read path (sqlcore.HotQuerier): the reads an agent runtime makes
// most run on the driver's connection, below database/sql, which would
// otherwise lock, convert and copy every column of every row. Profiled on
// a 1,000-event session (BenchmarkReadFloor), database/sql's per-row work
// and a second copy of each event's document were more than half of the
// read.

// openReadPool opens a pool of read connections whose connections keep
// the hot reads' statements prepared (hotConn).
func openReadPool(dsn string) (*sqlx.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(hotConnector{c}), driverName), nil
}

// hotConnector makes the driver's connections hotConns.
type hotConnector struct{ driver.Connector }

func (c hotConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	mc, ok := conn.(driverConn)
	if !ok { // not modernc's connection: use it as it is
		return conn, nil
	}
	return &hotConn{driverConn: mc, stmts: map[string]driver.Stmt{}}, nil
}

// driverConn is what database/sql uses of modernc's connection; hotConn
// passes all of it through, so the pool behaves as on the bare driver.
type driverConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// hotConn is a driver connection with the hot reads' prepared statements.
// database/sql serializes every use of a connection (the hot path runs
// under sql.Conn.Raw), so stmts needs no lock of its own.
type hotConn struct {
	driverConn
	stmts map[string]driver.Stmt
}

// stmt returns query prepared on c, preparing it the first time.
func (c *hotConn) stmt(ctx context.Context, query string) (driver.Stmt, error) {
	if st, ok := c.stmts[query]; ok {
		return st, nil
	}
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.stmts[query] = st
	return st, nil
}

// Close finalizes the prepared statements, then closes the connection.
func (c *hotConn) Close() error {
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	return errors.Join(append(errs, c.driverConn.Close())...)
}

// queryHot runs one read statement on the hot path, on a connection of
// the read pool (outside a transaction: the statement is its own snapshot).
// fn scans as sqlcore.HotQuerier says.
func (s *Store) queryHot(ctx context.Context, query string, args []any, fn func(sqlcore.Rows) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(ctx, func(r *rtx) error { return r.QueryHot(query, args, fn) })
	}
	conn, err := s.readConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return mapErr(conn.Raw(func(dc any) error { return hotQuery(ctx, dc, query, args, fn) }))
}

// hotStmt returns query prepared on the driver connection dc and the
// function that releases it: on a hotConn the statement is prepared once
// per connection and kept; on any other connection (a pool the caller
// opened: OpenDB) it is prepared for this call and closed on release.
func hotStmt(ctx context.Context, dc any, query string) (driver.Stmt, func(), error) {
	if c, ok := dc.(*hotConn); ok {
		st, err := c.stmt(ctx, query)
		return st, func() {}, err
	}
	c, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, nil, fmt.Errorf("sqlstore: the driver's connection (%T) cannot prepare", dc)
	}
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// hotExec runs a statement that returns no rows on the driver connection
// dc (see hotStmt).
func hotExec(ctx context.Context, dc any, query string) error {
	st, release, err := hotStmt(ctx, dc, query)
	if err != nil {
		return err
	}
	defer release()
	_, err = st.(driver.StmtExecContext).ExecContext(ctx, nil)
	return err
}

// hotQuery runs query on the driver connection dc (see hotStmt) and calls
// fn for each row.
func hotQuery(ctx context.Context, dc any, query string, args []any, fn func(sqlcore.Rows) error) error {
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return fmt.Errorf("sqlstore: argument %d: %w", i+1, err)
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	st, release, err := hotStmt(ctx, dc, query)
	if err != nil {
		return err
	}
	defer release()
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, named)
	if err != nil {
		return err
	}
	defer rows.Close()
	vr := valueRows{vals: make([]driver.Value, len(rows.Columns()))}
	for {
		if err := rows.Next(vr.vals); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := fn(&vr); err != nil {
			return err
		}
	}
}

// valueRows scans a row of driver values into the destinations the hot
// reads use (see sqlcore.HotQuerier).
type valueRows struct{ vals []driver.Value }

func (r *valueRows) Scan(dest ...any) error {
	if len(dest) != len(r.vals) {
		return fmt.Errorf("sqlstore: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		v := r.vals[i]
		ok := false
		switch d := d.(type) {
		case *int64:
			*d, ok = v.(int64)
		case *string:
			switch v := v.(type) {
			case string:
				*d, ok = v, true
			case []byte:
				*d, ok = string(v), true
			}
		case *[]byte:
			switch v := v.(type) {
			case []byte:
				// The driver allocated v for this row alone: it is kept,
				// not copied.
				*d, ok = v, true
			case string:
				*d, ok = []byte(v), true
			case nil:
				*d, ok = nil, true
			}
		default:
			return fmt.Errorf("sqlstore: the hot read path cannot scan into %T", d)
		}
		if !ok {
			return fmt.Errorf("sqlstore: column %d holds %T, not %T", i+1, v, d)
		}
	}
	return nil
}
