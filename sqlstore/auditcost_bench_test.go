package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/store"
)

// BenchmarkAuditCost measures what the audit trail adds to a governed Use,
// in one process and alternating, so that the machine's load and the
// disk's moods weigh on every contender alike: each round runs a burst
// of raw prepared one-row UPDATE transactions (BenchmarkRawUpdate's), of
// audited Uses and of unaudited Uses (WithoutAudit), each on its own
// file, and the medians of the rounds' per-call times are reported with
// their ratios:
//
//	go test ./sqlstore -run '^$' -bench AuditCost -benchtime 5x
//
// audited/raw is the "Use ≤ 1.25× raw at FULL", audited/bare its
// "audited Use ≤ 1.3× unaudited at NORMAL". Each -benchtime iteration is
// one round.
func BenchmarkAuditCost(b *testing.B) {
	const burst = 200
	for _, sync := range []Synchronous{SyncFull, SyncNormal} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			raw := newRawUpdater(b, filepath.Join(dir, "raw.db"), sync)
			defer raw.close()
			open := func(name string, opts ...Option) (*Store, string) {
				st, err := Open(ctx, filepath.Join(dir, name), append([]Option{WithSynchronous(sync)}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				// Other sessions of the agent, as a runtime has them.
				var id string
				for i := range 50 {
					req := store.CreateRequest{AgentID: "agent", AuthorizedTools: []string{"*"}, CallBudget: 1 << 40,
						TimeLimit: 100 * 365 * 24 * time.Hour, ID: fmt.Sprintf("s%02d", i)}
					s, err := st.Governance().Create(ctx, req)
					if err != nil {
						b.Fatal(err)
					}
					id = s.ID
				}
				return st, id
			}
			audited, aid := open("audited.db")
			defer audited.Close()
			bare, bid := open("bare.db", func(c *config) { c.auditOff = true })
			defer bare.Close()
			use := func(st *Store, id string) func() {
				req := store.UseRequest{SessionID: id, Tools: []string{"read_file"}}
				return func() {
					if _, err := st.Governance().Use(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			}
			contenders := []struct {
				name string
				fn   func()
				per  []float64
			}{
				{name: "raw", fn: raw.update},
				{name: "audited", fn: use(audited, aid)},
				{name: "bare", fn: use(bare, bid)},
			}
			for b.Loop() {
				for i := range contenders {
					c := &contenders[i]
					start := time.Now()
					for range burst {
						c.fn()
					}
					c.per = append(c.per, float64(time.Since(start).Nanoseconds())/burst)
				}
			}
			med := map[string]float64{}
			for _, c := range contenders {
				slices.Sort(c.per)
				med[c.name] = c.per[len(c.per)/2]
				b.ReportMetric(med[c.name], c.name+"-ns/call")
			}
			b.ReportMetric(med["audited"]/med["raw"], "audited/raw")
			b.ReportMetric(med["audited"]/med["bare"], "audited/bare")
			b.ReportMetric(med["bare"]/med["raw"], "bare/raw")
		})
	}
}

// rawUpdater is BenchmarkRawUpdate's transaction: BEGIN IMMEDIATE, one
// prepared single-row UPDATE, COMMIT, on one connection with the store's
// pragmas.
type rawUpdater struct {
	tb                 testing.TB
	db                 *sqlx.DB
	conn               *sqlx.Conn
	begin, upd, commit *sql.Stmt
}

func newRawUpdater(tb testing.TB, path string, sync Synchronous) *rawUpdater {
	cfg := defaultConfig()
	cfg.sync = sync
	db, err := sqlx.Open(driverName, writeDSN(path, &cfg))
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL) STRICT;
		INSERT INTO t VALUES (1, 0)`); err != nil {
		tb.Fatal(err)
	}
	conn, err := db.Connx(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawUpdater{tb: tb, db: db, conn: conn}
	prepare := func(q string) *sql.Stmt {
		st, err := conn.PrepareContext(ctx, q)
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
	r.begin, r.upd, r.commit = prepare("BEGIN IMMEDIATE"), prepare("UPDATE t SET n = n + 1 WHERE id = 1"), prepare("COMMIT")
	return r
}

func (r *rawUpdater) update() {
	for _, st := range []*sql.Stmt{r.begin, r.upd, r.commit} {
		if _, err := st.Exec(); err != nil {
			r.tb.Fatal(err)
		}
	}
}

func (r *rawUpdater) close() {
	r.begin.Close()
	r.upd.Close()
	r.commit.Close()
	r.conn.Close()
	r.db.Close()
}
