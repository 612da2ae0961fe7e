package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkAuditCost measures what the audit trail adds to a governed Use,
// in one process and alternating, so that the machine's load and the
// disk's moods weigh on every contender alike: each round runs a burst
// of raw prepared one-row UPDATE transactions (BenchmarkRawUpdate's), of
// audited Uses, of unaudited Uses (WithoutAudit) and of the audited Use's
// own statements without the store (useFloor), each on its own file, and
// the medians of the rounds' per-call times are reported with their
// ratios:
//
//	go test ./sqlstore -run '^$' -bench AuditCost -benchtime 5x
//
// audited/raw is the "Use ≤ 1.25× raw at FULL", audited/bare its
// "audited Use ≤ 1.3× unaudited at NORMAL"; audited/floor is what the
// store adds to the statements of a Use (its writer, file lock,
// checkpoints and Go code), floor/raw what the statements of a decision
// and its audit row cost beyond a bare update. Each -benchtime iteration
// is one round. Every contender first runs warmCalls calls, untimed, so
// that each measures its log in its steady state: a fresh log grows with
// every commit (each fsync then also commits the file's new size) until
// its first checkpoint lets it start over, at 1,000 pages for the raw
// contenders (SQLite's automatic checkpoint) and after a background
// round for the stores; without it the raw update, one page a commit,
// spent all its rounds growing its log while the stores rewrote theirs.
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
			fst, fid := open("floor.db")
			if err := fst.Close(); err != nil {
				b.Fatal(err)
			}
			floor := newUseFloor(b, filepath.Join(dir, "floor.db"), sync, fid)
			defer floor.close()
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
				{name: "floor", fn: floor.use},
			}
			for _, c := range contenders {
				for range warmCalls {
					c.fn()
				}
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
			b.ReportMetric(med["audited"]/med["floor"], "audited/floor")
			b.ReportMetric(med["floor"]/med["raw"], "floor/raw")
		})
	}
}

// warmCalls is how many calls each contender of BenchmarkAuditCost runs
// before it is timed: more than the 1,000 pages after which SQLite's
// automatic checkpoint lets the raw update's log start over.
const warmCalls = 1100

// useFloor is the floor of an audited governed Use: the store's own
// statements of one (the conditional update that advances the session's
// audit head, the event's insert), prepared once on one connection with
// the store's pragmas, one BEGIN IMMEDIATE … COMMIT each, with SQLite's
// automatic checkpoint inside the commit that crosses 1,000 pages as in
// BenchmarkRawUpdate. What a Use costs beyond it is the store's own.
type useFloor struct {
	tb      testing.TB
	db      *sql.DB
	conn    *sql.Conn
	stmts   map[string]*sql.Stmt
	session string
}

func newUseFloor(tb testing.TB, path string, sync Synchronous, session string) *useFloor {
	cfg := defaultConfig()
	cfg.sync = sync
	db, err := sql.Open(driverName, writeDSN(path, &cfg))
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return &useFloor{tb: tb, db: db, conn: conn, stmts: map[string]*sql.Stmt{}, session: session}
}

func (f *useFloor) stmt(query string) *sql.Stmt {
	st, ok := f.stmts[query]
	if !ok {
		var err error
		if st, err = f.conn.PrepareContext(context.Background(), query); err != nil {
			f.tb.Fatal(err)
		}
		f.stmts[query] = st
	}
	return st
}

// Exec and Scan make useFloor the sqlcore.Tx of sqlcore.InsertAuditEvent
// (which uses Exec only).
func (f *useFloor) Exec(query string, args ...any) (sql.Result, error) {
	return f.stmt(query).Exec(args...)
}
func (f *useFloor) Scan(query string, args []any, dest ...any) error {
	return f.stmt(query).QueryRow(args...).Scan(dest...)
}
func (f *useFloor) Get(any, string, ...any) error { return errors.New("useFloor: Get not supported") }
func (f *useFloor) Select(any, string, ...any) error {
	return errors.New("useFloor: Select not supported")
}
func (f *useFloor) Query(string, []any, func(sqlcore.Rows) error) error {
	return errors.New("useFloor: Query not supported")
}

func (f *useFloor) use() {
	if _, err := f.Exec("BEGIN IMMEDIATE"); err != nil {
		f.tb.Fatal(err)
	}
	now := time.Now()
	nowUS := rowcodec.ToMicros(now)
	rec := sqlcore.UseAudit("", f.session, "", []string{"read_file"})
	payload, detail, err := sqlcore.AuditPayload(nowUS, rec)
	if err != nil {
		f.tb.Fatal(err)
	}
	var calls, windowStart, windowCalls, created int64
	place := sqlcore.AuditChained{Chain: f.session, AtUS: nowUS}
	if err := f.Scan(govUseOneAuditedSQL, []any{rowcodec.ToMillis(now), int64(1), f.session, "", `"read_file"`, "", payload},
		&calls, &windowStart, &windowCalls, &created, &place.AgentID, &place.Seq, &place.PrevHash, &place.Hash); err != nil {
		f.tb.Fatal(err)
	}
	rec.AgentID = place.AgentID
	if err := sqlcore.InsertAuditEvent(f, place, rec, detail); err != nil {
		f.tb.Fatal(err)
	}
	if _, err := f.Exec("COMMIT"); err != nil {
		f.tb.Fatal(err)
	}
}

func (f *useFloor) close() {
	for _, st := range f.stmts {
		st.Close()
	}
	f.conn.Close()
	f.db.Close()
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
