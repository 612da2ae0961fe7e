package sqlstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
)

// BenchmarkRawUpdate is the baseline of the governed write path: one
// prepared single-row UPDATE per BEGIN IMMEDIATE … COMMIT on one
// connection, with the store's pragmas. Compare it with Governance/Use of
// BenchmarkStore to see what the checks and the store's bookkeeping cost:
//
//	go test ./sqlstore -run '^$' -bench 'RawUpdate|Store/.*/Governance/Use/session=shared/callers=1$' -benchtime 2s
func BenchmarkRawUpdate(b *testing.B) {
	for _, sync := range []Synchronous{SyncFull, SyncNormal} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			cfg := defaultConfig()
			cfg.sync = sync
			db, err := sqlx.Open(driverName, writeDSN(filepath.Join(b.TempDir(), "raw.db"), &cfg))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			ctx := context.Background()
			if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT;
				INSERT INTO t VALUES (1, 0)`); err != nil {
				b.Fatal(err)
			}
			conn, err := db.Connx(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			prepare := func(q string) *sql.Stmt {
				st, err := conn.PrepareContext(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				return st
			}
			begin := prepare("BEGIN IMMEDIATE")
			defer begin.Close()
			upd := prepare("UPDATE t SET n = n + 1 WHERE id = 1")
			defer upd.Close()
			commit := prepare("COMMIT")
			defer commit.Close()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := begin.Exec(); err != nil {
					b.Fatal(err)
				}
				if _, err := upd.Exec(); err != nil {
					b.Fatal(err)
				}
				if _, err := commit.Exec(); err != nil {
					b.Fatal(err)
				}
			}
			var n int
			if err := conn.QueryRowContext(ctx, "SELECT n FROM t WHERE id = 1").Scan(&n); err != nil || n != b.N {
				b.Fatalf("counter %d after %d updates: %v", n, b.N, err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
