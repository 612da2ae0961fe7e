package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// The shared facets of sqlcore run on pgx's native interface, like the
// governed-session facet: one database stack for the whole backend
// (database/sql appears only where goose needs it, for migrations).
// BenchmarkDriverStack measured why: on the same pool and statement, a
// one-row update transaction costs 1.7x as much through database/sql.
//
// Queries arrive with "?" or "?N" placeholders and are rebound once to
// PostgreSQL's "$N". pgx prepares and caches every statement per
// connection. Get and Select scan into structs by their db tags (the
// columns' names), or into a single value.

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

// pgTx is sqlcore's Tx on a pgx transaction, or on the pool for the
// single-statement reads outside one.
type pgTx struct {
	ctx context.Context
	q   querier
}

var _ sqlcore.Tx = (*pgTx)(nil)

// rowsAffected is the sql.Result of an Exec.
type rowsAffected int64

func (n rowsAffected) LastInsertId() (int64, error) {
	return 0, fmt.Errorf("pgstore: LastInsertId is not supported")
}
func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }

func (t *pgTx) Exec(query string, args ...any) (sql.Result, error) {
	tag, err := t.q.Exec(t.ctx, rebind(query), args...)
	if err != nil {
		return nil, err
	}
	return rowsAffected(tag.RowsAffected()), nil
}

// Get scans the first row into dest; sql.ErrNoRows (as pgx.ErrNoRows,
// which matches it) when there is none.
func (t *pgTx) Get(dest any, query string, args ...any) error {
	rows, err := t.q.Query(t.ctx, rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := scanInto(rows, reflect.ValueOf(dest)); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// Select appends every row to the slice dest points to.
func (t *pgTx) Select(dest any, query string, args ...any) error {
	slice := reflect.ValueOf(dest)
	if slice.Kind() != reflect.Pointer || slice.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("pgstore: Select needs a pointer to a slice, not %T", dest)
	}
	slice = slice.Elem()
	rows, err := t.q.Query(t.ctx, rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	elem := slice.Type().Elem()
	for rows.Next() {
		v := reflect.New(elem)
		if err := scanInto(rows, v); err != nil {
			return err
		}
		slice.Set(reflect.Append(slice, v.Elem()))
	}
	return rows.Err()
}

func (t *pgTx) Scan(query string, args []any, dest ...any) error {
	return t.q.QueryRow(t.ctx, rebind(query), args...).Scan(dest...)
}

func (t *pgTx) Query(query string, args []any, fn func(sqlcore.Rows) error) error {
	rows, err := t.q.Query(t.ctx, rebind(query), args...)
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

// scanInto scans the current row into ptr: a pointer to a struct whose
// fields carry db tags (matched to the columns by name), or to one value.
func scanInto(rows pgx.Rows, ptr reflect.Value) error {
	if ptr.Kind() != reflect.Pointer {
		return fmt.Errorf("pgstore: scan needs a pointer, not %s", ptr.Type())
	}
	fields := tagFields(ptr.Type().Elem())
	if fields == nil {
		return rows.Scan(ptr.Interface())
	}
	cols := rows.FieldDescriptions()
	dest := make([]any, len(cols))
	elem := ptr.Elem()
	for i, c := range cols {
		idx, ok := fields[c.Name]
		if !ok {
			return fmt.Errorf("pgstore: column %q has no field in %s", c.Name, elem.Type())
		}
		dest[i] = elem.FieldByIndex(idx).Addr().Interface()
	}
	return rows.Scan(dest...)
}

// fieldMaps caches tagFields per type.
var fieldMaps sync.Map // reflect.Type -> map[string][]int (nil: scan as one value)

// tagFields maps the db tags of a struct type's fields, those of embedded
// structs included (as sqlx flattens them), to their index paths; nil when
// t is not a struct with db tags (it scans as one value, like
// sql.NullString or time.Time).
func tagFields(t reflect.Type) map[string][]int {
	if m, ok := fieldMaps.Load(t); ok {
		return m.(map[string][]int)
	}
	var m map[string][]int
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			p := append(path[:len(path):len(path)], i)
			if tag, ok := f.Tag.Lookup("db"); ok && tag != "-" {
				if m == nil {
					m = make(map[string][]int)
				}
				m[tag] = p
			} else if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, p)
			}
		}
	}
	if t.Kind() == reflect.Struct {
		walk(t, nil)
	}
	fieldMaps.Store(t, m)
	return m
}

// write runs fn in one READ COMMITTED transaction and commits it when fn
// returns nil; fn's error rolls back and reaches the caller. A
// serialization failure or deadlock runs fn again from the start (bounded;
// see retry): fn must only assign its outputs.
func (s *Store) write(ctx context.Context, fn func(tx *pgTx) error) error {
	err := s.writeDerived(ctx, fn)
	if err == nil {
		s.wrote.Store(true) // Close folds the search queue (store.go)
	}
	return err
}

// writeDerived is write for derived data (the search index's folds,
// coreDB.WriteLazy): its commit does not make Close fold.
func (s *Store) writeDerived(ctx context.Context, fn func(tx *pgTx) error) error {
	if s.snapshotOf(ctx) != nil {
		return store.ErrSnapshotWrite
	}
	return s.retry(ctx, func(ctx context.Context) error {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
			return fn(&pgTx{ctx: ctx, q: tx})
		})
	})
}

// readTx runs fn in a read-only REPEATABLE READ transaction: every
// statement of it sees the same snapshot.
func (s *Store) readTx(ctx context.Context, fn func(r *pgTx) error) error {
	if sn := s.snapshotOf(ctx); sn != nil {
		return sn.read(func(q querier) error { return fn(&pgTx{ctx: ctx, q: q}) })
	}
	return s.retry(ctx, func(ctx context.Context) error {
		opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
		return pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
			return fn(&pgTx{ctx: ctx, q: tx})
		})
	})
}
