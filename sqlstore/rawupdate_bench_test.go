package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkRawUpdate is the baseline of the governed write path: one
// prepared single-row UPDATE per BEGIN IMMEDIATE … COMMIT on one
// connection, with the store's pragmas. Compare it with Governance/Use of
// BenchmarkStore to see what the checks and the store's bookkeeping cost:
//
//	go test ./sqlstore -run '^$' -bench 'RawUpdate|^BenchmarkStore$/.*/Governance/Use/session=shared/callers=1$' -benchtime 2s
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

// BenchmarkRawAppend is the floor of an agent-session append: the store's
// own statements of one AppendEvent with a one-key session delta (the
// conditional version bump, the event insert, the state upsert and its
// log row) on the
// store's schema, prepared once on one connection with the store's
// pragmas, one BEGIN IMMEDIATE … COMMIT each, the event of
// BenchmarkStore's AgentSessions/AppendEvent. Compare the two:
//
//	go test ./sqlstore -run '^$' -bench 'RawAppend|^BenchmarkStore$/sync=NORMAL/AgentSessions/AppendEvent/callers=1$' -benchtime 5000x
func BenchmarkRawAppend(b *testing.B) {
	for _, sync := range []Synchronous{SyncFull, SyncNormal} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "append.db")
			st, err := Open(ctx, path)
			if err != nil {
				b.Fatal(err)
			}
			key := store.SessionKey{App: "bench", User: "u", Session: "s"}
			if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			cfg := defaultConfig()
			cfg.sync = sync
			db, err := sql.Open(driverName, writeDSN(path, &cfg))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			// No checkpoint inside a commit (the store runs them in the
			// background, checkpoint.go): the floor is the statements alone.
			// The log is checkpointed outside the timer every 256 commits,
			// so that it starts over as the store's does: a log that only
			// grows makes every commit extend the file, which at FULL costs
			// each fsync the file's new size and would flatter the store.
			if _, err := conn.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
				b.Fatal(err)
			}
			prepare := func(q string) *sql.Stmt {
				st, err := conn.PrepareContext(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				return st
			}
			begin, bump, insert, put, stlog, commit := prepare("BEGIN IMMEDIATE"), prepare(asBumpSQL),
				prepare(evInsertSQL), prepare(stSessionPutSQL), prepare(stLogSQL), prepare("COMMIT")
			data := string(storetest.BenchEventData())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if _, err := begin.Exec(); err != nil {
					b.Fatal(err)
				}
				var pk, version, count, epoch int64
				var dataKey sql.NullString
				if err := bump.QueryRow(time.Now().UnixMilli(), key.App, key.User, key.Session, 0, 1, "").Scan(&pk, &version, &count, &dataKey, &epoch); err != nil {
					b.Fatal(err)
				}
				if _, err := insert.Exec(pk, count, fmt.Sprintf("ev-%d", i), fmt.Sprintf("inv-%d", i/4), time.Now().UnixMicro(), 0, data, 0, 0, ""); err != nil {
					b.Fatal(err)
				}
				value := strconv.Itoa(i)
				if _, err := put.Exec(pk, "turn", value, ""); err != nil {
					b.Fatal(err)
				}
				if _, err := stlog.Exec(pk, "turn", count, value, ""); err != nil {
					b.Fatal(err)
				}
				if _, err := commit.Exec(); err != nil {
					b.Fatal(err)
				}
				if i%256 == 0 {
					b.StopTimer()
					if _, err := conn.ExecContext(ctx, "PRAGMA wal_checkpoint(RESTART)"); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
