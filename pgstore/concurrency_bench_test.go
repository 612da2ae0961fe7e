package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkGovernedConcurrency measures governed Use throughput with the
// store's default pool (pgstore.DefaultMaxConns), in six shapes, run in
// rounds that alternate them in one process so that the machine's load
// weighs on all alike; the medians of the rounds' calls per second are
// reported, and each shape's ratio to one caller:
//
//		scripts/with-postgres.sh go test ./pgstore -run '^$' -bench GovernedConcurrency -benchtime 5x
//
//	  - caller=1: one caller, one session.
//	  - shared/callers=32: 32 callers on one session (batched, usebatch.go).
//	  - one-agent/callers=32: 32 callers, each on its own session, all 32
//	    sessions of one agent: the shape of a runtime with one agent
//	    identity over many sessions. Per-session audit chains let them
//	    commit in parallel.
//	  - agents/callers=32: 32 callers on 32 sessions of 32 agents.
//	  - few/callers=2 and few/callers=4: 2 and 4 callers, each on its own
//	    session of one agent: few calls in flight, decided at once rather
//	    than queued (usebatch.go, directUses).
//
// Each -benchtime iteration is one round; a round gives every shape the
// same number of calls, after one unrecorded round that opens the pool's
// connections. PG_BENCH_SHAPE=one-agent (a prefix of a shape's name) runs
// only that shape beside caller=1. Each of caller=1 and the three shapes
// of 32 callers is followed, in every round, by its floors
// (concurrency_floor_bench_test.go: the store's statements replayed
// without the store, and the schema's least write), reported beside it;
// PG_BENCH_FLOOR=0 leaves them out. Each shape also reports what one call
// costs this process in counts that depend little on the machine's load
// (runStats: the whole process's, the pool's and the benchmark's callers'
// too): the heap objects it allocates (allocs/call), the goroutines it
// starts (goroutines/call), the voluntary context switches of its
// threads (csw/call: threads put to sleep, waiting for work or the
// network), its read and write system calls (sysrw/call: the sockets'
// reads and writes, mostly), the heap bytes it allocates (B/call) and
// the CPU the garbage collector spends meanwhile (gc-cpu-µs/call, the
// runtime's estimate); and the CPU one call costs in
// this process (client) and in the server's processes (server, when the
// server runs on this machine): the cores divided by their sum bound the
// calls per second, whatever the concurrency. The goals (issue 36): shared ≥ 5×, one-agent ≥ 4×
// and agents ≥ 5× caller=1 (at synchronous_commit=on, the default), on a
// durable server: the test server of scripts/with-postgres.sh runs with
// fsync off, so measure with scripts/pg-bench.sh (which starts it with
// fsync on and also runs the encryption benchmarks), or with
// SESSIONSTORE_PG_DURABLE=1 before the command above.
func BenchmarkGovernedConcurrency(b *testing.B) {
	ctx := context.Background()
	loc := newSchema(b)
	st, err := pgstore.Open(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	gov := st.Governance()
	create := func(agent, id string) store.UseRequest {
		req := store.CreateRequest{ID: id, AgentID: agent, AuthorizedTools: []string{"*"}, CallBudget: 1 << 50, TimeLimit: 24 * time.Hour}
		if _, err := gov.Create(ctx, req); err != nil {
			b.Fatal(err)
		}
		return store.UseRequest{SessionID: id, AgentID: agent, Tools: []string{"read_file"}}
	}
	server := serverPID(ctx, adminPool(b))
	const callers = 32
	alone := []store.UseRequest{create("alone", "alone")}
	shared := make([]store.UseRequest, callers)
	one := create("shared", "shared")
	for i := range shared {
		shared[i] = one
	}
	oneAgent := make([]store.UseRequest, callers)
	agents := make([]store.UseRequest, callers)
	for i := range callers {
		oneAgent[i] = create("fleet", fmt.Sprintf("fleet-%02d", i))
		agents[i] = create(fmt.Sprintf("agent-%02d", i), fmt.Sprintf("agent-%02d", i))
	}
	// The shapes' floors, each run right after its shape in every round
	// (concurrency_floor_bench_test.go; PG_BENCH_FLOOR=0: none).
	floors := newGovFloors(b, ctx, loc, server, create)
	// The statistics autovacuum gathers on a production server (a minute
	// or so after a table has grown by 50 rows and 10%). Without them the
	// batch statement's generic plan joins by hashing every session of the
	// tenant, the floors' ~200 included (docs/postgresql.md), until
	// autovacuum's ANALYZE lands, which it did at a different moment of
	// each run, or not at all.
	analyze, err := pgx.Connect(ctx, loc)
	if err != nil {
		b.Fatal(err)
	}
	_, err = analyze.Exec(ctx, "ANALYZE governed_sessions, audit_heads, audit_events")
	analyze.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	shapes := []struct {
		name   string
		reqs   []store.UseRequest
		rate   []float64
		cpu    cpuTimes // summed over the rounds
		txns   int64    // the transactions of the rounds' calls
		allocs uint64   // the heap objects allocated by the rounds' calls
		// the goroutines those calls started, the process's threads'
		// voluntary context switches, and its read and write system calls
		goroutines, csw, sysrw uint64
		bytes                  uint64        // the heap bytes they allocated
		gc                     time.Duration // the CPU the garbage collector spent meanwhile
		// the calls decided at once without queueing, and those taken
		// out of a batch (their row held by another transaction)
		direct, apart int64
	}{
		{name: "caller=1", reqs: alone},
		{name: "shared/callers=32", reqs: shared},
		{name: "one-agent/callers=32", reqs: oneAgent},
		{name: "agents/callers=32", reqs: agents},
		{name: "few/callers=2", reqs: oneAgent[:2]},
		{name: "few/callers=4", reqs: oneAgent[:4]},
	}
	// PG_BENCH_SHAPE=name runs only the shapes whose names begin with
	// name, beside caller=1 (the ratios' base), for profiling one shape.
	if only := os.Getenv("PG_BENCH_SHAPE"); only != "" {
		kept := shapes[:1]
		for _, sh := range shapes[1:] {
			if strings.HasPrefix(sh.name, only) {
				kept = append(kept, sh)
			}
		}
		shapes = kept
	}
	// The calls of each shape per round: as many as each of its floors
	// replays (floorCalls). With 640 a round of 32 callers lasted 60-100
	// ms, so its ramp-up (the first calls are decided at once, before
	// batches form) and its tail (the last callers' smaller batches) and
	// one slow WAL flush weighed three times as much on the store's figure
	// as on its floors'.
	const calls = floorCalls
	// One round before the measured ones, not recorded: it opens the
	// pool's connections (a new backend's start and its first statements
	// cost the server several milliseconds of CPU each, which fell on the
	// first shape that needed 32 connections) and warms the caches.
	round := func(record bool) {
		for i := range shapes {
			sh := &shapes[i]
			n := len(sh.reqs)
			shared0, sharedCalls0 := st.UseBatchStats()
			direct0 := st.UseDirect()
			_, apart0 := st.UseBatchMixed()
			start, cpu0 := time.Now(), readCPU(server)
			allocs0 := heapAllocs()
			rs0 := readRunStats()
			var wg sync.WaitGroup
			// The callers carry the shape's name as a profiler label
			// (go tool pprof -tagfocus shape=one-agent/callers=32).
			pprof.Do(ctx, pprof.Labels("shape", sh.name), func(context.Context) {
				for c := range n {
					wg.Go(func() {
						for range calls / n {
							if _, err := gov.Use(ctx, sh.reqs[c]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
			})
			wg.Wait()
			allocs1 := heapAllocs()
			rs1 := readRunStats()
			elapsed, cpu1 := time.Since(start), readCPU(server)
			// A call decided alone is a transaction of its own.
			shared1, sharedCalls1 := st.UseBatchStats()
			txns := shared1 - shared0 + calls/int64(n)*int64(n) - (sharedCalls1 - sharedCalls0)
			floors.run(b, ctx, sh.name, float64(calls/n*n)/float64(txns), record)
			if !record {
				continue
			}
			sh.rate = append(sh.rate, float64(calls)/elapsed.Seconds())
			sh.txns += txns
			sh.allocs += allocs1 - allocs0
			sh.goroutines += rs1.goroutines - rs0.goroutines
			sh.csw += rs1.csw - rs0.csw
			sh.sysrw += rs1.sysrw - rs0.sysrw
			sh.bytes += rs1.bytes - rs0.bytes
			sh.gc += rs1.gc - rs0.gc
			_, apart1 := st.UseBatchMixed()
			sh.direct += st.UseDirect() - direct0
			sh.apart += apart1 - apart0
			sh.cpu.client += clientSince(cpu0, cpu1)
			if cpu0.server >= 0 && cpu1.server >= 0 {
				sh.cpu.server += cpu1.server - cpu0.server
			} else {
				sh.cpu.server = -1 << 62
			}
		}
	}
	round(false)
	for b.Loop() {
		round(true)
	}
	med := make([]float64, len(shapes))
	for i := range shapes {
		r := slices.Sorted(slices.Values(shapes[i].rate))
		med[i] = r[len(r)/2]
		b.ReportMetric(med[i], shapes[i].name+"-calls/s")
		if i > 0 {
			b.ReportMetric(med[i]/med[0], shapes[i].name+"-×1")
		}
		rounds := float64(len(shapes[i].rate) * calls)
		b.ReportMetric(rounds/float64(shapes[i].txns), shapes[i].name+"-calls/txn")
		b.ReportMetric(float64(shapes[i].direct)/rounds, shapes[i].name+"-direct/call")
		b.ReportMetric(float64(shapes[i].apart)/rounds, shapes[i].name+"-apart/call")
		b.ReportMetric(float64(shapes[i].cpu.client.Microseconds())/rounds, shapes[i].name+"-client-cpu-µs/call")
		b.ReportMetric(float64(shapes[i].allocs)/rounds, shapes[i].name+"-allocs/call")
		b.ReportMetric(float64(shapes[i].goroutines)/rounds, shapes[i].name+"-goroutines/call")
		b.ReportMetric(float64(shapes[i].csw)/rounds, shapes[i].name+"-csw/call")
		b.ReportMetric(float64(shapes[i].sysrw)/rounds, shapes[i].name+"-sysrw/call")
		b.ReportMetric(float64(shapes[i].bytes)/rounds, shapes[i].name+"-B/call")
		b.ReportMetric(float64(shapes[i].gc.Nanoseconds())/1e3/rounds, shapes[i].name+"-gc-cpu-µs/call")
		if shapes[i].cpu.server >= 0 {
			b.ReportMetric(float64(shapes[i].cpu.server.Microseconds())/rounds, shapes[i].name+"-server-cpu-µs/call")
		}
	}
	floors.report(b, med[0])
}

// heapAllocs is the number of heap objects this process has allocated so
// far (runtime/metrics, which does not stop the world as
// runtime.ReadMemStats does).
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// runStats counts, so far in this process, the goroutines started, the
// voluntary context switches of its threads (getrusage), and its read and
// write system calls (syscr and syscw of /proc/self/io; 0 where none).
type runStats struct {
	goroutines, csw, sysrw uint64
	bytes                  uint64        // heap bytes allocated
	gc                     time.Duration // the runtime's estimate of its garbage collector's CPU
}

func readRunStats() (r runStats) {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}, {Name: "/gc/heap/allocs:bytes"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	r.goroutines, r.bytes = s[0].Value.Uint64(), s[1].Value.Uint64()
	r.gc = time.Duration(s[2].Value.Float64() * 1e9)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		r.csw = uint64(ru.Nvcsw)
	}
	io, _ := os.ReadFile("/proc/self/io")
	for _, line := range strings.Split(string(io), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && (k == "syscr" || k == "syscw") {
			n, _ := strconv.ParseUint(v, 10, 64)
			r.sysrw += n
		}
	}
	return r
}
