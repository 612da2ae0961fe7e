package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// TestGovernedFloorWritesAsStore checks that the contenders of
// BenchmarkGovernedConcurrency's floor (concurrency_floor_bench_test.go)
// are honest. On three schemas created alike (the same sessions, the
// same clock), the same governed Use calls (a lone call, batches of one
// session's calls behind a COMMIT, batches of one call of each of several
// sessions of one agent and of several agents) are decided by the store
// on the first, replayed by the floor on the second, replayed again by the
// floor's leaders through callers (callers-floor:, runPlan with callers)
// on the fourth, and written by the raw contender on the third: the floor
// sends, round trip by round trip, the statements and arguments the store
// sends, every transaction of each commits, and all four leave the same
// rows in the tables a governed Use writes (but the sessions' random feed
// epochs).
func TestGovernedFloorWritesAsStore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := pgstore.WithClock(func() time.Time { return now })
	open := func(tracer pgx.QueryTracer) (*pgstore.Store, *pgxpool.Pool) {
		t.Helper()
		pc, err := pgxpool.ParseConfig(newSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		if tracer != nil {
			pc.ConnConfig.Tracer = tracer
		}
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		st, err := pgstore.OpenPool(ctx, pool, pgstore.WithoutIndexer(), clock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, pool
	}
	rec := &floorRecorder{}
	stS, poolS := open(rec) // the store's
	stF, poolF := open(nil) // the floor's
	stR, poolR := open(nil) // the raw contender's
	stC, poolC := open(nil) // the floor's through callers
	gen := newFloorGen(t, ctx, clock)

	agents := map[string]string{"alone": "A", "shared": "A", "m-0": "A", "m-1": "A", "m-2": "B", "m-3": "C"}
	var ids []string
	reqs := map[string]store.UseRequest{}
	for id, agent := range agents {
		for _, st := range []*pgstore.Store{stS, stF, stR, stC} {
			if _, err := st.Governance().Create(ctx, store.CreateRequest{
				ID: id, AgentID: agent, AuthorizedTools: []string{"*"}, CallBudget: 1000, TimeLimit: time.Hour,
			}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, id)
		reqs[id] = store.UseRequest{SessionID: id, AgentID: agent, Tools: []string{"read_file"}}
	}
	if err := gen.copySessions(ctx, poolF, ids); err != nil {
		t.Fatal(err)
	}
	var raws []store.UseRequest
	for _, id := range ids {
		raws = append(raws, reqs[id])
	}
	heads, err := loadRaw(ctx, poolR, raws)
	if err != nil {
		t.Fatal(err)
	}
	rawOf := map[string]*rawSession{}
	for _, h := range heads {
		rawOf[h.req.SessionID] = h
	}
	connF, err := poolF.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer connF.Release()
	connR, err := poolR.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer connR.Release()

	batch := func(ids ...string) []store.UseRequest {
		out := make([]store.UseRequest, len(ids))
		for i, id := range ids {
			out[i] = reqs[id]
		}
		return out
	}
	steps := []struct {
		name  string
		reqs  []store.UseRequest
		alone bool // one call decided alone
		after bool // one session's calls behind a COMMIT
	}{
		{"a lone call", batch("alone"), true, false},
		{"three calls of one session", batch("shared", "shared", "shared"), false, true},
		{"four sessions of three agents", batch("m-0", "m-1", "m-2", "m-3"), false, false},
		{"two calls of one session", batch("shared", "shared"), false, true},
		{"two sessions of two agents", batch("m-1", "m-3"), false, false},
	}
	for _, s := range steps {
		// The store.
		sent, err := rec.record(func() error {
			switch {
			case s.alone:
				_, err := stS.Governance().Use(ctx, s.reqs[0])
				return err
			case s.after:
				_, errs := stS.DecideUseBatchAfterCommit(ctx, s.reqs)
				return errors.Join(errs...)
			default:
				_, errs := stS.DecideUseBatch(ctx, s.reqs)
				return errors.Join(errs...)
			}
		})
		if err != nil {
			t.Fatalf("%s: the store: %v", s.name, err)
		}
		// The floor: recorded by the generator, replayed.
		var floor floorTxn
		if s.alone {
			floor, err = gen.alone(ctx, s.reqs[0])
		} else {
			floor, err = gen.batch(ctx, s.reqs, s.after)
		}
		if err != nil {
			t.Fatalf("%s: the floor's generator: %v", s.name, err)
		}
		if d := diffTxns(sent, floor); d != "" {
			t.Errorf("%s: the floor sends other statements than the store:\n%s", s.name, d)
		}
		if err := floor.replay(ctx, connF.Conn()); err != nil {
			t.Fatalf("%s: the floor's replay: %v", s.name, err)
		}
		// The same transaction, through one caller per call.
		fl := &govFloors{pool: poolC}
		if _, _, _, err := fl.runPlan(ctx, floorPlan{queues: [][]floorTxn{{floor}}, sizes: [][]int{{len(s.reqs)}},
			leaders: 1, calls: len(s.reqs), txns: 1, callers: len(s.reqs)}); err != nil {
			t.Fatalf("%s: the floor through callers: %v", s.name, err)
		}
		// The raw contender.
		calls := make([]*rawSession, len(s.reqs))
		for i, r := range s.reqs {
			calls[i] = rawOf[r.SessionID]
		}
		raw, err := rawTxn(calls, rowcodec.ToMicros(now))
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.replay(ctx, connR.Conn()); err != nil {
			t.Fatalf("%s: the raw contender: %v", s.name, err)
		}
	}
	rowsS := governedRows(t, poolS)
	if n := len(rowsS["audit_events"]); n != len(ids)+1+3+4+2+2 {
		t.Fatalf("the store wrote %d audit events; want %d", n, len(ids)+12)
	}
	if d := diffRows(rowsS, governedRows(t, poolF)); d != "" {
		t.Errorf("rows differ (-store +floor):\n%s", d)
	}
	if d := diffRows(rowsS, governedRows(t, poolR)); d != "" {
		t.Errorf("rows differ (-store +raw):\n%s", d)
	}
	if d := diffRows(rowsS, governedRows(t, poolC)); d != "" {
		t.Errorf("rows differ (-store +floor through callers):\n%s", d)
	}
}

// diffTxns describes how two recorded transactions differ: in their round
// trips, statements or arguments ("" when alike).
func diffTxns(want, got floorTxn) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d round trips, want %d: %q, want %q", len(got), len(want), got.sqls(), want.sqls())
	}
	var out []string
	for i := range want {
		w, g := want[i], got[i]
		if w.pipeline != g.pipeline || len(w.stmts) != len(g.stmts) {
			out = append(out, fmt.Sprintf("round trip %d: %d statements (pipeline %v), want %d (pipeline %v)", i, len(g.stmts), g.pipeline, len(w.stmts), w.pipeline))
			continue
		}
		for j := range w.stmts {
			if w.stmts[j].sql != g.stmts[j].sql {
				out = append(out, fmt.Sprintf("round trip %d, statement %d: %.60q, want %.60q", i, j, g.stmts[j].sql, w.stmts[j].sql))
			} else if !reflect.DeepEqual(w.stmts[j].args, g.stmts[j].args) {
				out = append(out, fmt.Sprintf("round trip %d, statement %d (%.40q): arguments %v, want %v", i, j, w.stmts[j].sql, g.stmts[j].args, w.stmts[j].args))
			}
		}
	}
	return strings.Join(out, "\n")
}

// governedRows reads the rows a governed Use writes, as JSON, each table
// in its key order, without the sessions' feed epochs (random).
func governedRows(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table, query := range map[string]string{
		"governed_sessions": `SELECT (to_jsonb(g) - 'epoch')::text FROM governed_sessions AS g ORDER BY tenant, id`,
		"audit_events":      `SELECT to_jsonb(e)::text FROM audit_events AS e ORDER BY tenant, agent_id, chain, seq`,
	} {
		rows, err := pool.Query(context.Background(), query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		out[table] = got
	}
	return out
}

// diffRows describes how the rows of two schemas differ, table by table
// ("" when alike).
func diffRows(want, got map[string][]string) string {
	var out []string
	for table, w := range want {
		g := got[table]
		for i := range max(len(w), len(g)) {
			switch {
			case i >= len(g):
				out = append(out, fmt.Sprintf("%s: missing %s", table, w[i]))
			case i >= len(w):
				out = append(out, fmt.Sprintf("%s: extra %s", table, g[i]))
			case w[i] != g[i]:
				out = append(out, fmt.Sprintf("%s: %s\n\twant %s", table, g[i], w[i]))
			}
		}
	}
	return strings.Join(out, "\n")
}
