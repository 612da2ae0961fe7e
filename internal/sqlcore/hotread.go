package sqlcore

import (
	"context"
	"database/sql"
)

// HotQuerier is implemented by a backend's read transaction when it can
// run a query below database/sql: on the driver's connection, with the
// statement prepared once per connection, each row's values taken as the
// driver produced them instead of converted column by column. The reads a
// runtime makes most (an agent session's events and state, a page of
// sessions) use it where it is there and Tx.Query elsewhere, with the same
// callback.
//
// The Rows it passes scan only into *int64, *string and *[]byte, and a
// []byte they scan into is the caller's to keep: the driver allocates
// every value anew. A read that needs any other destination type uses
// Tx.Query.
type HotQuerier interface {
	QueryHot(query string, args []any, fn func(Rows) error) error
}

// HotReader is implemented by a backend's DB that can run a read
// transaction whose statements are all hot (see HotQuerier) more cheaply
// than DB.Read: the agent-session reads use it. The Tx it passes still
// runs any statement; the others may cost more than in DB.Read.
type HotReader interface {
	ReadHot(ctx context.Context, fn func(tx Tx) error) error
}

// readTxHot runs fn in a read transaction made for hot statements (see
// HotReader), or DB.Read's.
func (s *Store) readTxHot(ctx context.Context, fn func(tx Tx) error) error {
	if h, ok := s.db.(HotReader); ok {
		return h.ReadHot(ctx, fn)
	}
	return s.db.Read(ctx, fn)
}

// queryHot runs query on r's fastest row path (see HotQuerier).
func queryHot(r Tx, query string, args []any, fn func(Rows) error) error {
	if h, ok := r.(HotQuerier); ok {
		return h.QueryHot(query, args, fn)
	}
	return r.Query(query, args, fn)
}

// scanHot scans the first row query returns into dest on r's fastest row
// path (see HotQuerier for the destination types); sql.ErrNoRows when
// there is none, as Tx.Scan.
func scanHot(r Tx, query string, args []any, dest ...any) error {
	if _, ok := r.(HotQuerier); !ok {
		return r.Scan(query, args, dest...)
	}
	found := false
	err := queryHot(r, query, args, func(rows Rows) error {
		if found {
			return nil
		}
		found = true
		return rows.Scan(dest...)
	})
	if err == nil && !found {
		return sql.ErrNoRows
	}
	return err
}
