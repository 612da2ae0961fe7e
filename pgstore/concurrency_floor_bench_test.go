package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// The floors of BenchmarkGovernedConcurrency's shapes: what the schema
// and the store's statements allow on this machine without the store's
// Go code, measured in the same rounds as the shapes they bound, each
// right after its shape (so that the disk's drift weighs on both), and
// reported as metrics of the same benchmark (PG_BENCH_FLOOR=0 leaves them
// out). Two contenders follow caller=1, three each of shared/callers=32,
// one-agent/callers=32 and agents/callers=32, on sessions of their own
// created as the shape's are, in the benchmark's schema:
//
//   - floor:<shape>: the statements the store's batch sends, replayed
//     with pgx directly. They are not written here: they are recorded,
//     statement by statement and argument by argument, round trip by
//     round trip, from the store itself deciding the same batches on a
//     schema of its own that holds copies of the contenders' session rows
//     (floorGen, outside the timed part), so they follow any change of the
//     store's statements. Each round takes the calls per transaction its
//     shape reached in that round: floorCalls calls in batches of that mean
//     size, each what a batch of the store sends: for shared, one
//     session's calls behind the previous batch's COMMIT
//     (DecideUseBatchAfterCommit), otherwise one call of each of that many
//     sessions (DecideUseBatch). As many leaders as 32 callers fill with
//     batches of that size replay them, transaction after transaction,
//     each on a connection of its own (for the many-session shapes, each
//     on sessions of its own). No queue, no decision, no hashing in Go:
//     its calls per second divided by caller=1's bound what the store's
//     shape can reach with these statements. floor:caller=1 replays the
//     one statement a lone call sends.
//   - callers-floor:<shape> (shapes of 32 callers): the floor's
//     statements, recorded the same way on sessions of their own, and
//     replayed by the same leaders, but each call made by one of 32
//     caller goroutines that hands it to the leaders and waits on a
//     channel of its own for the answer, as a caller of the store's
//     blocking Use does (one park and one wakeup per call). What it costs
//     beyond floor:<shape> is what any Go API with blocking calls pays
//     for them; what the store costs beyond it is its own code's.
//   - raw:<shape>: the least a durable governed call can write, whatever
//     the statements: per transaction one UPDATE of the session rows
//     (calls made and audit head) and one INSERT of one audit event per
//     call (the same events, their hashes computed before the timed
//     part), in one round trip (an implicit transaction), in batches of
//     the same sizes on the same leaders. raw:caller=1 is one such
//     transaction per call: the bound of one caller's commits.
//
// Each contender reports its calls per second (median of the rounds),
// that ÷ caller=1's (×1: the bound of the goal's ratio), that ÷ the
// median of its own kind's one caller (×own1: how the statements scale
// by themselves), the calls per transaction it ran, its leaders, the
// transactions it reran after a lock timeout (reruns/txn: a lock wait
// past useLockManySQL's 1 ms though no two leaders share a row, which the
// store reruns too) and its client and server CPU per call
// (cpu_bench_test.go). Batches of one session replayed by several
// leaders may commit in another order than recorded (each writes the
// head it was recorded with): the same rows, in another order.
// TestGovernedFloorWritesAsStore checks that, in order, the replay (by
// leaders alone and through callers) and the raw contender write what the
// store writes.

// floorCalls is the calls of a contender per round, the shapes' as the
// floors': 1,920, a few hundred milliseconds of each on this machine's
// durable server. (With 640, a round of a shape of 32 callers lasted
// 60–100 ms, and one slow WAL flush moved its figure by tens of
// percent.)
const floorCalls = 1920

// floorStmt is one statement of a recorded round trip, with its
// arguments.
type floorStmt struct {
	sql  string
	args []any
}

// floorStep is one round trip: a pipeline (pgx.Batch) or one statement.
type floorStep struct {
	pipeline bool
	stmts    []floorStmt
}

// floorTxn is what one transaction sent, round trip by round trip.
type floorTxn []floorStep

// sqls returns the statements of t, in order.
func (t floorTxn) sqls() []string {
	var out []string
	for _, st := range t {
		for _, s := range st.stmts {
			out = append(out, s.sql)
		}
	}
	return out
}

// replay sends t on conn, round trip by round trip, reading every answer
// and decoding none. A COMMIT that rolled back is an error, as is a
// transaction left open.
func (t floorTxn) replay(ctx context.Context, conn *pgx.Conn) error {
	check := func(sql string, tag string) error {
		if strings.TrimSpace(sql) == "COMMIT" && tag != "COMMIT" {
			return fmt.Errorf("floor: replayed COMMIT answered %q", tag)
		}
		return nil
	}
	for i, st := range t {
		if !st.pipeline {
			s := st.stmts[0]
			tag, err := conn.Exec(ctx, s.sql, s.args...)
			if err == nil {
				err = check(s.sql, tag.String())
			}
			if err != nil {
				return fmt.Errorf("round trip %d (%.30q): %w", i, s.sql, err)
			}
			continue
		}
		b := &pgx.Batch{}
		for _, s := range st.stmts {
			b.Queue(s.sql, s.args...)
		}
		br := conn.SendBatch(ctx, b)
		for _, s := range st.stmts {
			tag, err := br.Exec()
			if err == nil {
				err = check(s.sql, tag.String())
			}
			if err != nil {
				br.Close()
				return fmt.Errorf("round trip %d (%.30q): %w", i, s.sql, err)
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
	}
	if s := conn.PgConn().TxStatus(); s != 'I' {
		return fmt.Errorf("floor: replayed transaction left open (status %c)", s)
	}
	return nil
}

// floorRecorder is a pgx tracer that records, while on, every round trip
// each connection sends, with its arguments.
type floorRecorder struct {
	mu    sync.Mutex
	on    bool
	steps map[*pgx.Conn][]floorStep
	open  map[*pgx.Conn]*floorStep
}

func (r *floorRecorder) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.steps[conn] = append(r.steps[conn], floorStep{stmts: []floorStmt{{data.SQL, data.Args}}})
	}
	return ctx
}

func (r *floorRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *floorRecorder) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.open[conn] = &floorStep{pipeline: true}
	}
	return ctx
}

func (r *floorRecorder) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.open[conn]; st != nil {
		st.stmts = append(st.stmts, floorStmt{data.SQL, data.Args})
	}
}

func (r *floorRecorder) TraceBatchEnd(_ context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.open[conn]; st != nil {
		r.steps[conn] = append(r.steps[conn], *st)
		delete(r.open, conn)
	}
}

// record runs fn and returns the round trips it sent, which must all be
// on one connection.
func (r *floorRecorder) record(fn func() error) (floorTxn, error) {
	r.mu.Lock()
	r.on, r.steps, r.open = true, map[*pgx.Conn][]floorStep{}, map[*pgx.Conn]*floorStep{}
	r.mu.Unlock()
	err := fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	if err != nil {
		return nil, err
	}
	if len(r.steps) != 1 || len(r.open) != 0 {
		return nil, fmt.Errorf("floor: recorded round trips on %d connections (%d unfinished), want one", len(r.steps), len(r.open))
	}
	for _, steps := range r.steps {
		return steps, nil
	}
	panic("unreachable")
}

// floorGen records the transactions the store sends for given batches:
// a store of its own (no background indexer) on a schema of its own,
// which holds copies of the contenders' session rows, so that each batch
// it decides sends the statements and arguments that batch would send on
// them. Its commits are durable like the benchmark's: asynchronous ones
// would leave WAL for the WAL writer to flush while the contender they
// prepared is timed.
type floorGen struct {
	st   *pgstore.Store
	pool *pgxpool.Pool
	rec  *floorRecorder
}

func newFloorGen(tb testing.TB, ctx context.Context, opts ...pgstore.Option) *floorGen {
	tb.Helper()
	pc, err := pgxpool.ParseConfig(newSchema(tb))
	if err != nil {
		tb.Fatal(err)
	}
	g := &floorGen{rec: &floorRecorder{}}
	pc.ConnConfig.Tracer = g.rec
	if g.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(g.pool.Close)
	if g.st, err = pgstore.OpenPool(ctx, g.pool, append(opts, pgstore.WithoutIndexer())...); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.st.Close() })
	return g
}

// copySessions copies the governed_sessions rows of ids from the schema
// from reads into the generator's.
func (g *floorGen) copySessions(ctx context.Context, from *pgxpool.Pool, ids []string) error {
	rows, err := from.Query(ctx, `SELECT row_to_json(g)::text FROM governed_sessions AS g WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return err
	}
	js, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(js) != len(ids) {
		return fmt.Errorf("floor: %d of %d session rows to copy", len(js), len(ids))
	}
	for _, j := range js {
		if _, err := g.pool.Exec(ctx, `INSERT INTO governed_sessions SELECT * FROM json_populate_record(NULL::governed_sessions, $1::json)`, j); err != nil {
			return err
		}
	}
	return nil
}

// batch records the transaction of one batch of reqs:
// DecideUseBatchAfterCommit when after (the calls of one session behind
// the previous batch's COMMIT), else DecideUseBatch. Every call must be
// allowed.
func (g *floorGen) batch(ctx context.Context, reqs []store.UseRequest, after bool) (floorTxn, error) {
	txn, err := g.rec.record(func() error {
		decide := g.st.DecideUseBatch
		if after {
			decide = g.st.DecideUseBatchAfterCommit
		}
		_, errs := decide(ctx, reqs)
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, err
	}
	// One transaction: BEGIN … COMMIT, or one round trip (a pipeline is
	// an implicit transaction).
	if sqls := txn.sqls(); len(txn) > 1 && (!strings.HasPrefix(sqls[0], "BEGIN") || strings.TrimSpace(sqls[len(sqls)-1]) != "COMMIT") {
		return nil, fmt.Errorf("floor: a batch recorded as %d statements from %.20q to %.20q, not one transaction", len(sqls), sqls[0], sqls[len(sqls)-1])
	}
	return txn, nil
}

// alone records the transaction of one call decided alone.
func (g *floorGen) alone(ctx context.Context, req store.UseRequest) (floorTxn, error) {
	return g.rec.record(func() error {
		_, err := g.st.Governance().Use(ctx, req)
		return err
	})
}

// Raw statements: the least a governed call writes. rawUpdateSQL adds
// each session's calls ($2) to its row and sets its audit head ($3 to
// $5: seq, previous hash, hash); rawInsertSQL appends the events, one
// row of its arrays each (agent, session, seq, time in microseconds,
// detail, previous hash, hash); both of the default tenant.
const (
	rawUpdateSQL = `UPDATE governed_sessions AS g SET calls_made = g.calls_made + r.n,
		audit_seq = r.seq, audit_prev = r.prev, audit_hash = r.hash
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[]) AS r(id, n, seq, prev, hash)
		WHERE g.tenant = '' AND g.id = r.id`
	rawInsertSQL = `INSERT INTO audit_events (agent_id, chain, seq, at_us, kind, outcome, session_id, request_id, detail, prev_hash, hash, tenant)
		SELECT e.agent, e.sid, e.seq, e.at, '` + string(store.AuditUse) + `', '` + store.OutcomeAllowed + `', e.sid, '', e.detail, e.prev, e.hash, ''
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS e(agent, sid, seq, at, detail, prev, hash)`
)

// rawSession is the head of a raw contender's session as its
// transactions leave it.
type rawSession struct {
	req  store.UseRequest
	seq  int64
	hash string
}

// loadRaw reads the audit heads of the sessions of reqs.
func loadRaw(ctx context.Context, pool *pgxpool.Pool, reqs []store.UseRequest) ([]*rawSession, error) {
	out := make([]*rawSession, len(reqs))
	for i, r := range reqs {
		out[i] = &rawSession{req: r}
		if err := pool.QueryRow(ctx, `SELECT audit_seq, audit_hash FROM governed_sessions WHERE tenant = '' AND id = $1`,
			r.SessionID).Scan(&out[i].seq, &out[i].hash); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rawTxn returns the raw transaction of one call on each of calls (a
// session may come several times, in order) at atUS, and advances their
// heads.
func rawTxn(calls []*rawSession, atUS int64) (floorTxn, error) {
	var ids, prevs, hashes []string
	var ns, seqs []int64
	var eAgents, eSids, eDetails, ePrevs, eHashes []string
	var eSeqs, eAts []int64
	row := map[*rawSession]int{}
	for _, s := range calls {
		payload, detail, err := sqlcore.AuditPayload(atUS, sqlcore.UseAudit(s.req.AgentID, s.req.SessionID, "", s.req.Tools))
		if err != nil {
			return nil, err
		}
		next, ok := rowcodec.AuditHash(s.hash, s.seq+1, s.req.AgentID, payload)
		if !ok {
			return nil, fmt.Errorf("floor: session %s's audit head is not a hash", s.req.SessionID)
		}
		prev := s.hash
		s.seq, s.hash = s.seq+1, next
		eAgents, eSids, eSeqs, eAts = append(eAgents, s.req.AgentID), append(eSids, s.req.SessionID), append(eSeqs, s.seq), append(eAts, atUS)
		eDetails, ePrevs, eHashes = append(eDetails, detail), append(ePrevs, prev), append(eHashes, next)
		i, ok := row[s]
		if !ok {
			i = len(ids)
			row[s] = i
			ids, ns, seqs, prevs, hashes = append(ids, s.req.SessionID), append(ns, 0), append(seqs, 0), append(prevs, ""), append(hashes, "")
		}
		ns[i]++
		seqs[i], prevs[i], hashes[i] = s.seq, prev, next
	}
	return floorTxn{{pipeline: true, stmts: []floorStmt{
		{rawUpdateSQL, []any{ids, ns, seqs, prevs, hashes}},
		{rawInsertSQL, []any{eAgents, eSids, eSeqs, eAts, eDetails, ePrevs, eHashes}},
	}}}, nil
}

// floorSizes splits floorCalls calls into batches of k calls on average
// (as even as they can be).
func floorSizes(k float64) []int {
	k = min(max(k, 1), 32)
	n := max(1, int(math.Round(floorCalls/k)))
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = floorCalls / n
		if i < floorCalls%n {
			sizes[i]++
		}
	}
	return sizes
}

// floorLeaders is how many batches of sizes callers keep in flight at
// once: as many as the largest batch fits in callers.
func floorLeaders(sizes []int, callers int) int { return max(1, callers/slices.Max(sizes)) }

// floorPlan is a round of a contender: its transactions in queues, taken
// in order by leaders (leader j from queue j mod len(queues)), each on a
// connection of its own. With callers, the calls are made by that many
// goroutines of their own, each handing its call to the leaders and
// waiting on a channel of its own for the answer (callers-floor:); a
// leader takes as many calls as its transaction holds (sizes, parallel to
// queues) before it sends it, and answers each when it has been sent.
type floorPlan struct {
	queues  [][]floorTxn
	sizes   [][]int // the calls of each transaction of queues
	leaders int
	calls   int
	txns    int
	callers int // 0: no callers, the leaders replay the calls by themselves
}

// floorContender is one contender: how it plans a round whose shape
// reached k calls per transaction, and what its rounds measured.
type floorContender struct {
	name string
	base *floorContender // the one caller of its kind (nil: it is one)
	plan func(ctx context.Context, k float64) (floorPlan, error)
	rate []float64
	ks   []float64
	lead []float64
	cpu  cpuTimes
	rs   runStats // summed over the recorded rounds
	// the heap objects allocated while the recorded rounds ran
	allocs uint64
	// the calls and transactions of the recorded rounds, and the
	// transactions rerun after a lock timeout
	calls, txns, reruns int64
}

// govFloors runs the contenders after their shapes, round by round.
type govFloors struct {
	pool   *pgxpool.Pool // the benchmark's schema, 32 connections
	server int
	after  map[string][]*floorContender // by the name of the shape they follow
	all    []*floorContender
}

// newGovFloors creates the contenders' sessions in the benchmark's schema
// (loc) with create, as the shapes' are, and their generator; nil when
// PG_BENCH_FLOOR=0.
func newGovFloors(b *testing.B, ctx context.Context, loc string, server int, create func(agent, id string) store.UseRequest) *govFloors {
	if os.Getenv("PG_BENCH_FLOOR") == "0" {
		return nil
	}
	loc32, err := withParam(loc, "pool_max_conns", "32")
	if err != nil {
		b.Fatal(err)
	}
	fl := &govFloors{server: server, after: map[string][]*floorContender{}}
	if fl.pool, err = pgxpool.New(ctx, loc32); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(fl.pool.Close)
	gen := newFloorGen(b, ctx)
	sessions := func(prefix string, agents bool) []store.UseRequest {
		reqs := make([]store.UseRequest, 32)
		for i := range reqs {
			id := fmt.Sprintf("%s-fleet-%02d", prefix, i)
			agent := prefix + "-fleet"
			if agents {
				id = fmt.Sprintf("%s-agent-%02d", prefix, i)
				agent = id
			}
			reqs[i] = create(agent, id)
		}
		return reqs
	}
	add := func(shape string, c *floorContender) {
		fl.after[shape] = append(fl.after[shape], c)
		fl.all = append(fl.all, c)
	}
	ids := func(reqs []store.UseRequest) []string {
		out := make([]string, len(reqs))
		for i, r := range reqs {
			out[i] = r.SessionID
		}
		return out
	}
	// caller=1
	floorAlone := create("floor-alone", "floor-alone")
	rawAlone := create("raw-alone", "raw-alone")
	if err := gen.copySessions(ctx, fl.pool, ids([]store.UseRequest{floorAlone})); err != nil {
		b.Fatal(err)
	}
	aloneTxn, err := gen.alone(ctx, floorAlone)
	if err != nil {
		b.Fatal(err)
	}
	floor1 := &floorContender{name: "floor:caller=1", plan: func(context.Context, float64) (floorPlan, error) {
		return floorPlan{queues: [][]floorTxn{slices.Repeat([]floorTxn{aloneTxn}, floorCalls)}, leaders: 1, calls: floorCalls, txns: floorCalls}, nil
	}}
	raw1 := fl.raw(ctx, b, "raw:caller=1", []store.UseRequest{rawAlone}, true)
	add("caller=1", floor1)
	add("caller=1", raw1)
	// The shapes of 32 callers.
	for _, sh := range []struct {
		shape, name         string
		floor, callers, raw []store.UseRequest
	}{
		{"shared/callers=32", "shared", []store.UseRequest{create("floor-shared", "floor-shared")},
			[]store.UseRequest{create("callers-shared", "callers-shared")}, []store.UseRequest{create("raw-shared", "raw-shared")}},
		{"one-agent/callers=32", "one-agent", sessions("floor", false), sessions("callers", false), sessions("raw", false)},
		{"agents/callers=32", "agents", sessions("floor", true), sessions("callers", true), sessions("raw", true)},
	} {
		if err := gen.copySessions(ctx, fl.pool, append(ids(sh.floor), ids(sh.callers)...)); err != nil {
			b.Fatal(err)
		}
		add(sh.shape, &floorContender{name: "floor:" + sh.name, base: floor1, plan: func(ctx context.Context, k float64) (floorPlan, error) {
			return plan(k, 32, sh.floor, func(reqs []store.UseRequest) (floorTxn, error) {
				return gen.batch(ctx, reqs, len(sh.floor) == 1)
			})
		}})
		// The floor's statements, on sessions of their own, with 32
		// callers that hand their calls to its leaders and wait for them
		// as the store's callers do.
		add(sh.shape, &floorContender{name: "callers-floor:" + sh.name, base: floor1, plan: func(ctx context.Context, k float64) (floorPlan, error) {
			p, err := plan(k, 32, sh.callers, func(reqs []store.UseRequest) (floorTxn, error) {
				return gen.batch(ctx, reqs, len(sh.callers) == 1)
			})
			p.callers = 32
			return p, err
		}})
		raw := fl.raw(ctx, b, "raw:"+sh.name, sh.raw, false)
		raw.base = raw1
		add(sh.shape, raw)
	}
	return fl
}

// raw returns the raw contender on the sessions of reqs (alone: one call
// per transaction).
func (fl *govFloors) raw(ctx context.Context, b *testing.B, name string, reqs []store.UseRequest, alone bool) *floorContender {
	heads, err := loadRaw(ctx, fl.pool, reqs)
	if err != nil {
		b.Fatal(err)
	}
	byID := map[string]*rawSession{}
	for _, h := range heads {
		byID[h.req.SessionID] = h
	}
	return &floorContender{name: name, plan: func(ctx context.Context, k float64) (floorPlan, error) {
		callers := 32
		if alone {
			k, callers = 1, 1
		}
		atUS := rowcodec.ToMicros(time.Now())
		return plan(k, callers, reqs, func(batch []store.UseRequest) (floorTxn, error) {
			calls := make([]*rawSession, len(batch))
			for i, r := range batch {
				calls[i] = byID[r.SessionID]
			}
			return rawTxn(calls, atUS)
		})
	}}
}

// plan builds a round of batches of k calls on average, of callers
// callers, on the sessions of reqs (one session: all its calls; many: one
// call of each of a batch's sessions, each leader on sessions of its
// own), each made a transaction by txn, in order.
func plan(k float64, callers int, reqs []store.UseRequest, txn func([]store.UseRequest) (floorTxn, error)) (floorPlan, error) {
	sizes := floorSizes(k)
	p := floorPlan{leaders: floorLeaders(sizes, callers), calls: floorCalls, txns: len(sizes)}
	if len(reqs) == 1 {
		p.queues = make([][]floorTxn, 1)
	} else {
		p.queues = make([][]floorTxn, p.leaders)
	}
	p.sizes = make([][]int, len(p.queues))
	next := make([]int, len(p.queues))
	for i, m := range sizes {
		q := i % len(p.queues)
		batch := make([]store.UseRequest, m)
		for c := range batch {
			if len(reqs) == 1 {
				batch[c] = reqs[0]
				continue
			}
			// The sessions of queue q: q, q+leaders, q+2·leaders, …
			own := (len(reqs) - q + p.leaders - 1) / p.leaders
			batch[c] = reqs[q+(next[q]%own)*p.leaders]
			next[q]++
		}
		t, err := txn(batch)
		if err != nil {
			return floorPlan{}, err
		}
		p.queues[q] = append(p.queues[q], t)
		p.sizes[q] = append(p.sizes[q], m)
	}
	return p, nil
}

// run runs the contenders that follow shape, whose round reached k calls
// per transaction; record keeps what they measured.
func (fl *govFloors) run(b *testing.B, ctx context.Context, shape string, k float64, record bool) {
	if fl == nil {
		return
	}
	for _, c := range fl.after[shape] {
		p, err := c.plan(ctx, k)
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		rs0, allocs0 := readRunStats(), heapAllocs()
		var elapsed time.Duration
		var cpu cpuTimes
		var reruns int64
		// Its leaders carry its name as a profiler label, as the shapes'
		// callers carry theirs.
		pprof.Do(ctx, pprof.Labels("shape", c.name), func(ctx context.Context) {
			elapsed, cpu, reruns, err = fl.runPlan(ctx, p)
		})
		rs1, allocs1 := readRunStats(), heapAllocs()
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		if !record {
			continue
		}
		c.rate = append(c.rate, float64(p.calls)/elapsed.Seconds())
		c.ks = append(c.ks, float64(p.calls)/float64(p.txns))
		c.lead = append(c.lead, float64(p.leaders))
		c.calls += int64(p.calls)
		c.txns += int64(p.txns)
		c.reruns += reruns
		c.allocs += allocs1 - allocs0
		c.rs.csw += rs1.csw - rs0.csw
		c.rs.sysrw += rs1.sysrw - rs0.sysrw
		c.rs.bytes += rs1.bytes - rs0.bytes
		c.rs.gc += rs1.gc - rs0.gc
		c.cpu.client += cpu.client
		if cpu.server >= 0 && c.cpu.server >= 0 {
			c.cpu.server += cpu.server
		} else {
			c.cpu.server = -1 << 62
		}
	}
}

// runPlan replays p and returns how long it took, the CPU it cost the
// client and the server, and how many transactions it reran.
func (fl *govFloors) runPlan(ctx context.Context, p floorPlan) (time.Duration, cpuTimes, int64, error) {
	conns := make([]*pgxpool.Conn, p.leaders)
	for i := range conns {
		c, err := fl.pool.Acquire(ctx)
		if err != nil {
			return 0, cpuTimes{}, 0, err
		}
		defer c.Release()
		conns[i] = c
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The calls the callers hand to the leaders: each its caller's
	// channel for the answer.
	var calls chan chan error
	if p.callers > 0 {
		calls = make(chan chan error, p.callers)
	}
	next := make([]atomic.Int64, len(p.queues))
	var reruns atomic.Int64
	errs := make([]error, p.leaders+p.callers)
	start, cpu0 := time.Now(), readCPU(fl.server)
	var wg sync.WaitGroup
	// Each caller makes calls until p's are made, not a share of its own:
	// a leader takes as many calls as its transaction holds, so callers
	// with calls left must be free to hand them while others wait in the
	// leaders' transactions (at most 32 calls are in them at once).
	var made atomic.Int64
	for c := range p.callers {
		wg.Go(func() {
			answer := make(chan error, 1)
			for made.Add(1) <= int64(p.calls) {
				select {
				case calls <- answer:
				case <-ctx.Done():
					return
				}
				select {
				case errs[p.leaders+c] = <-answer:
				case <-ctx.Done():
					return
				}
				if errs[p.leaders+c] != nil {
					cancel()
					return
				}
			}
		})
	}
	for j := range p.leaders {
		wg.Go(func() {
			q := j % len(p.queues)
			var waiting []chan error
			for {
				i := int(next[q].Add(1)) - 1
				if i >= len(p.queues[q]) {
					return
				}
				if calls != nil {
					waiting = waiting[:0]
					for range p.sizes[q][i] {
						select {
						case c := <-calls:
							waiting = append(waiting, c)
						case <-ctx.Done():
							return
						}
					}
				}
				conn := conns[j].Conn()
				for attempt := 1; ; attempt++ {
					errs[j] = p.queues[q][i].replay(ctx, conn)
					var pe *pgconn.PgError
					if errs[j] == nil || !errors.As(errs[j], &pe) || pe.Code != "55P03" || attempt == 20 {
						break
					}
					// A lock wait past the batch's lock_timeout (1 ms,
					// useLockManySQL) though no two leaders share a
					// row: the store reruns such a batch (Store.retry);
					// so does the floor, and counts it.
					reruns.Add(1)
					if conn.PgConn().TxStatus() != 'I' {
						if _, errs[j] = conn.Exec(ctx, `ROLLBACK`); errs[j] != nil {
							break
						}
					}
				}
				for _, c := range waiting {
					c <- errs[j]
				}
				if errs[j] != nil {
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu1 := time.Since(start), readCPU(fl.server)
	cpu := cpuTimes{client: clientSince(cpu0, cpu1), server: -1}
	if cpu0.server >= 0 && cpu1.server >= 0 {
		cpu.server = cpu1.server - cpu0.server
	}
	return elapsed, cpu, reruns.Load(), errors.Join(errs...)
}

// report reports each contender's median calls per second, that ÷ one
// (caller=1's median), its mean calls per transaction and leaders, and
// its CPU, voluntary context switches and read and write system calls
// per call (runStats: of the whole process while it replays).
func (fl *govFloors) report(b *testing.B, one float64) {
	if fl == nil {
		return
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	for _, c := range fl.all {
		if len(c.rate) == 0 {
			continue
		}
		r := slices.Sorted(slices.Values(c.rate))
		med := r[len(r)/2]
		b.ReportMetric(med, c.name+"-calls/s")
		b.ReportMetric(med/one, c.name+"-×1")
		if c.base != nil && len(c.base.rate) > 0 {
			rb := slices.Sorted(slices.Values(c.base.rate))
			b.ReportMetric(med/rb[len(rb)/2], c.name+"-×own1")
		}
		b.ReportMetric(mean(c.ks), c.name+"-calls/txn")
		b.ReportMetric(mean(c.lead), c.name+"-leaders")
		b.ReportMetric(float64(c.reruns)/float64(c.txns), c.name+"-reruns/txn")
		b.ReportMetric(float64(c.cpu.client.Microseconds())/float64(c.calls), c.name+"-client-cpu-µs/call")
		b.ReportMetric(float64(c.allocs)/float64(c.calls), c.name+"-allocs/call")
		b.ReportMetric(float64(c.rs.csw)/float64(c.calls), c.name+"-csw/call")
		b.ReportMetric(float64(c.rs.sysrw)/float64(c.calls), c.name+"-sysrw/call")
		b.ReportMetric(float64(c.rs.bytes)/float64(c.calls), c.name+"-B/call")
		b.ReportMetric(float64(c.rs.gc.Nanoseconds())/1e3/float64(c.calls), c.name+"-gc-cpu-µs/call")
		if c.cpu.server >= 0 {
			b.ReportMetric(float64(c.cpu.server.Microseconds())/float64(c.calls), c.name+"-server-cpu-µs/call")
		}
	}
}
