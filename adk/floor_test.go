package adk_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/adk/internal/benchkit"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/sqlstore"
)

// TestFloorWritesAsAdapter checks that the comparison's floor
// (floorTarget, floor_bench_test.go) writes what the adapter writes: on
// two copies of one seeded database, the same creates (with and without
// an initial state of every scope) and the same appends (runner events
// with state deltas, their ids and times fixed) write the same number of
// pages to the log, operation by operation, and leave the same rows in the
// tables they write.
func TestFloorWritesAsAdapter(t *testing.T) {
	ctx := context.Background()
	dirA, dirF := t.TempDir(), t.TempDir()
	sqltest.Seed(t, filepath.Join(dirA, "sessions.db"))
	sqltest.Seed(t, filepath.Join(dirF, "sessions.db"))
	// No background indexer: its folds land in the log at random.
	svc, err := adk.Open(ctx, filepath.Join(dirA, "sessions.db"), syncOption("FULL"), sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		t.Fatal(err)
	}
	adapter := &benchkit.ServiceTarget{Svc: svc, Closer: svc.Close}
	floor, err := openFloor(ctx, dirF, "FULL")
	if err != nil {
		t.Fatal(err)
	}
	pagesA := runFloorScript(t, adapter, dirA)
	pagesF := runFloorScript(t, floor, dirF)
	if diff := cmp.Diff(pagesA, pagesF); diff != "" {
		t.Errorf("pages written per operation differ (-adapter +floor):\n%s", diff)
	}
	t.Logf("pages per operation: %v", pagesA)
	if err := adapter.Close(); err != nil {
		t.Fatal(err)
	}
	if err := floor.Close(); err != nil {
		t.Fatal(err)
	}
	rowsA, rowsF := floorRows(t, dirA, false), floorRows(t, dirF, false)
	if len(rowsA["agent_events"]) != 2*floorScriptAppends {
		t.Fatalf("the adapter's database holds %d events, want %d", len(rowsA["agent_events"]), 2*floorScriptAppends)
	}
	if diff := cmp.Diff(rowsA, rowsF); diff != "" {
		t.Errorf("rows differ (-adapter +floor):\n%s", diff)
	}
}

const floorScriptAppends = 30

// runFloorScript creates two sessions and appends floorScriptAppends
// events to each, alternately, through t, and returns the pages each
// operation wrote.
func runFloorScript(t *testing.T, target benchkit.Target, dir string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sessions.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	count := func(what string, op func() error) {
		t.Helper()
		n, err := benchkit.PagesOf(ctx, db, op)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		out = append(out, fmt.Sprintf("%s: %d", what, n))
	}
	states := []map[string]any{nil, {"turn": 1.0, "topic": "foxes", "app:model": "flash", "user:name": "Ada", "temp:scratch": true}}
	handles := make([]any, len(states))
	for i, st := range states {
		id := fmt.Sprintf("s%d", i)
		count("create "+id, func() error { return target.Create(ctx, "bench", "u", id, st) })
		h, err := target.Handle(ctx, "bench", "u", id)
		if err != nil {
			t.Fatal(err)
		}
		handles[i] = h
	}
	base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i := range floorScriptAppends {
		for s, h := range handles {
			ev := benchkit.TurnEvent(i)
			ev.ID = fmt.Sprintf("ev-%d-%d", s, i)
			ev.Timestamp = base.Add(time.Duration(i)*time.Millisecond + time.Duration(s*1001))
			if i%5 == 4 { // app, user and temp keys too
				ev.Actions.StateDelta["app:calls"] = float64(i)
				ev.Actions.StateDelta["user:seen"] = []any{"x", float64(i)}
				ev.Actions.StateDelta["temp:draft"] = "not kept"
			}
			count(fmt.Sprintf("append s%d #%d", s, i), func() error { return target.Append(ctx, h, ev) })
		}
	}
	return out
}

// floorRows reads the rows a create and an append write, without the
// columns that hold the time of the write (and the sessions' random feed
// epochs), each table in its key order; concurrent: the events in their
// sessions' order, without their row ids (the order of concurrent
// appends to different sessions).
func floorRows(t *testing.T, dir string, concurrent bool) map[string][]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	eventsQuery := `SELECT id, session_pk, seq, event_id, invocation_id, ts_us, ts_ns, data, compact_from, compact_to, tenant, typeof(data) FROM agent_events ORDER BY id`
	if concurrent {
		eventsQuery = `SELECT session_pk, seq, event_id, invocation_id, ts_us, ts_ns, data, compact_from, compact_to, tenant, typeof(data) FROM agent_events ORDER BY session_pk, seq`
	}
	out := map[string][]string{}
	for table, query := range map[string]string{
		"agent_sessions": `SELECT pk, app, user_id, session_id, version, event_count, initial_state, data_key, tenant, retired,
			lineage_parent IS NULL, fork_seq, last_access_ms, superseded_of IS NULL, superseded_from,
			updated_min = updated_at_ms / 60000, created_at_ms <= updated_at_ms FROM agent_sessions ORDER BY pk`,
		"agent_events":     eventsQuery,
		"agent_state_log":  `SELECT session_pk, key, seq, value, tenant, typeof(value) FROM agent_state_log ORDER BY session_pk, key, seq`,
		"agent_app_state":  `SELECT app, key, value, tenant, typeof(value) FROM agent_app_state ORDER BY app, key`,
		"agent_user_state": `SELECT app, user_id, key, value, tenant, typeof(value) FROM agent_user_state ORDER BY app, user_id, key`,
	} {
		rows, err := db.Query(query)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%v ", cols[i], v)
			}
			out[table] = append(out[table], b.String())
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return out
}

// TestFloorBatchesWriteAsAdapter checks the floor's batches (concurrent
// appends in one transaction, as in append/writers=4) against the
// adapter's group commit: four writers, each appending to a session of
// its own through both, leave the same rows.
func TestFloorBatchesWriteAsAdapter(t *testing.T) {
	ctx := context.Background()
	const writers, appends = 4, 25
	rows := map[string]map[string][]string{}
	for _, via := range []struct {
		name string
		open benchkit.Opener
	}{{"adapter", openAdapterNoIndex}, {"floor", openFloor}} {
		dir := t.TempDir()
		sqltest.Seed(t, filepath.Join(dir, "sessions.db"))
		target, err := via.open(ctx, dir, "NORMAL")
		if err != nil {
			t.Fatal(err)
		}
		handles := make([]any, writers)
		for w := range handles {
			id := fmt.Sprint("w", w)
			if err := target.Create(ctx, "bench", "u", id, nil); err != nil {
				t.Fatal(err)
			}
			if handles[w], err = target.Handle(ctx, "bench", "u", id); err != nil {
				t.Fatal(err)
			}
		}
		base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				for i := range appends {
					ev := benchkit.Event(i)
					ev.ID = fmt.Sprintf("ev-%d-%d", w, i)
					ev.Timestamp = base.Add(time.Duration(i)*time.Millisecond + time.Duration(w))
					if err := target.Append(ctx, handles[w], ev); err != nil {
						errs <- fmt.Errorf("%s: writer %d, append %d: %w", via.name, w, i, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if f, ok := target.(*floorTarget); ok {
			t.Logf("the floor wrote %d creates and %d appends in %d transactions", writers, writers*appends, f.commits)
		}
		if err := target.Close(); err != nil {
			t.Fatal(err)
		}
		rows[via.name] = floorRows(t, dir, true)
	}
	if n := len(rows["adapter"]["agent_events"]); n != writers*appends {
		t.Fatalf("the adapter's database holds %d events, want %d", n, writers*appends)
	}
	if diff := cmp.Diff(rows["adapter"], rows["floor"]); diff != "" {
		t.Errorf("rows differ (-adapter +floor):\n%s", diff)
	}
}
