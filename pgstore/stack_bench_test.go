package pgstore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkDriverStack measures the two ways pgstore reaches PostgreSQL,
// on the same pool and the same statements: pgx's native interface (the
// governed-session facet's hot path) and database/sql over pgx's stdlib
// adapter (the shared sqlcore facets). Each iteration is the shape of a
// governed Use: a READ COMMITTED transaction that updates one row and
// returns its counters; "read" is one primary-key SELECT outside a
// transaction. synchronous_commit=off, so that the figures are driver and
// round-trip cost, not WAL flushes:
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench DriverStack -count 6
func BenchmarkDriverStack(b *testing.B) {
	const (
		update = `UPDATE governed_sessions SET calls_made = calls_made + 1 WHERE id = $1 RETURNING calls_made, rate_window_start_ms`
		read   = `SELECT calls_made, status, expires_at_ms FROM governed_sessions WHERE id = $1`
	)
	ctx := context.Background()
	loc, err := withParam(newSchema(b), "synchronous_commit", "off")
	if err != nil {
		b.Fatal(err)
	}
	st, err := pgstore.Open(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	sess, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID: "bench", AuthorizedTools: []string{"read_file"}, CallBudget: 1 << 50, TimeLimit: 24 * time.Hour,
	})
	if err != nil {
		b.Fatal(err)
	}
	id := sess.ID
	pool := st.Pool()
	db := stdlib.OpenDBFromPool(pool)
	b.Cleanup(func() { db.Close() })

	b.Run("tx/pgx", func(b *testing.B) {
		for b.Loop() {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			var last sql.NullInt64
			if err := tx.QueryRow(ctx, update, id).Scan(&n, &last); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tx/database_sql", func(b *testing.B) {
		for b.Loop() {
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			var last sql.NullInt64
			if err := tx.QueryRowContext(ctx, update, id).Scan(&n, &last); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/pgx", func(b *testing.B) {
		for b.Loop() {
			var n, exp int64
			var status string
			if err := pool.QueryRow(ctx, read, id).Scan(&n, &status, &exp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read/database_sql", func(b *testing.B) {
		for b.Loop() {
			var n, exp int64
			var status string
			if err := db.QueryRowContext(ctx, read, id).Scan(&n, &status, &exp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
