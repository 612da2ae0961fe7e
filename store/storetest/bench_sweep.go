package storetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// SweepBenchRowsEnv sets the rows BenchSweep deletes (default 1,000,000).
const SweepBenchRowsEnv = "SESSIONSTORE_SWEEP_BENCH_ROWS"

// BenchSweep measures what a sweep costs the store's other writers: the
// latency of governed Use calls made one after another while nothing else
// runs (idle), and while a sweep deletes the rows of SweepBenchRowsEnv
// (1,000,000 by default: conversations of 100 messages each), in one run,
// idle phases before and after the sweep. It reports the p50 and p99 of
// both, their ratio, and the sweep's throughput in rows per second. Run it
// once per round (-benchtime 1x): each round builds the whole data set.
func BenchSweep(b *testing.B, h Harness, o BenchOptions, sweep store.SweepOptions) {
	rows := 1_000_000
	if v, err := strconv.Atoi(os.Getenv(SweepBenchRowsEnv)); err == nil && v > 0 {
		rows = v
	}
	const perConv = 100 // the conversation row and 99 messages
	benchSweep(b, h, o, sweep, max(rows/perConv, 1), perConv, shortSweepText)
}

// BenchSweepLarge is BenchSweep over 500 conversations of 200 messages of
// 1 KiB of varied text each (issue 37: a conversation larger than a
// batch, so that a batch bounded in sessions held the writer for a whole
// conversation). Besides the percentiles it reports the longest Use
// during the sweep and how many waited 100 ms or more; the goal is a p99
// during the sweep of at most twice the idle p99 plus 5 ms, and none at
// 100 ms.
func BenchSweepLarge(b *testing.B, h Harness, o BenchOptions, sweep store.SweepOptions) {
	convs := 500
	if v, err := strconv.Atoi(os.Getenv(SweepBenchConvsEnv)); err == nil && v > 0 {
		convs = v
	}
	benchSweep(b, h, o, sweep, convs, 201, variedSweepText)
}

// SweepBenchConvsEnv sets the conversations BenchSweepLarge removes
// (default 500).
const SweepBenchConvsEnv = "SESSIONSTORE_SWEEP_BENCH_CONVS"

const shortSweepText = "a message of a conversation that a sweep will remove, long enough to be realistic ...."

// variedSweepText is 1 KiB of words that differ from message to message
// (the search index then holds as many entries as real text gives it).
var variedSweepText = func() string {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<10; i++ {
		fmt.Fprintf(&sb, "w%x%c%c ", i*7919, 'a'+i%26, 'a'+(i*3)%26)
	}
	return sb.String()[:1<<10]
}()

func benchSweep(b *testing.B, h Harness, o BenchOptions, sweep store.SweepOptions, convs, perConv int, text string) {
	for range b.N {
		e := benchEnv{h: h, o: o}
		st := e.open(b)
		ctx := context.Background()
		b.StopTimer()
		fillForSweep(b, st, convs, perConv-1, text)
		gov, err := st.Governance().Create(ctx, store.CreateRequest{AgentID: "bench", AuthorizedTools: []string{"*"},
			TimeLimit: 24 * time.Hour, CallBudget: 1 << 40, Sensitivity: store.SensitivityInternal})
		if err != nil {
			b.Fatal(err)
		}
		use := func() time.Duration {
			t0 := time.Now()
			if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: gov.ID, Tools: []string{"t"}}); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		}
		idleFor := func(n int) []time.Duration {
			out := make([]time.Duration, n)
			for i := range out {
				out[i] = use()
			}
			return out
		}
		b.StartTimer()
		idle := idleFor(1000)
		opts := sweep
		opts.Policies = []store.Policy{{Kind: store.PolicyConversationsIdle, MaxAge: time.Millisecond}}
		time.Sleep(2 * time.Millisecond) // the rows become due (real clock)
		var rep store.SweepReport
		var sweepErr error
		var wg sync.WaitGroup
		done := make(chan struct{})
		t0 := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			rep, sweepErr = st.Retention().Sweep(ctx, opts)
		}()
		var during []time.Duration
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
				during = append(during, use())
			}
		}
		wg.Wait()
		took := time.Since(t0)
		if sweepErr != nil {
			b.Fatal(sweepErr)
		}
		idle = append(idle, idleFor(1000)...)
		b.StopTimer()
		k, _ := rep.Kind(store.PolicyConversationsIdle)
		if k.Sessions != int64(convs) || k.Rows != int64(convs*perConv) {
			b.Fatalf("the sweep removed %d sessions, %d rows; want %d, %d", k.Sessions, k.Rows, convs, convs*perConv)
		}
		slices.Sort(idle)
		slices.Sort(during)
		p := func(d []time.Duration, q int) float64 {
			if len(d) == 0 {
				return 0
			}
			return float64(d[min(len(d)*q/100, len(d)-1)].Nanoseconds()) / 1e3
		}
		b.ReportMetric(p(idle, 50), "idle-p50-µs")
		b.ReportMetric(p(idle, 99), "idle-p99-µs")
		b.ReportMetric(p(during, 50), "sweep-p50-µs")
		b.ReportMetric(p(during, 99), "sweep-p99-µs")
		b.ReportMetric(p(during, 99)/max(p(idle, 99), 1e-3), "p99-ratio")
		long := 0
		for _, d := range during {
			if d >= 100*time.Millisecond {
				long++
			}
		}
		if len(during) > 0 {
			b.ReportMetric(float64(during[len(during)-1].Nanoseconds())/1e3, "sweep-max-µs")
		}
		b.ReportMetric(float64(long), "waits>=100ms")
		b.ReportMetric(float64(len(during)), "uses-during")
		b.ReportMetric(float64(k.Rows)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(rep.Batches), "batches")
		st.Close()
	}
}

// fillForSweep saves n conversations of msgs messages each, from several
// goroutines (their commits share transactions).
func fillForSweep(b *testing.B, st store.Store, n, msgs int, text string) {
	ctx := context.Background()
	batch := make([]store.Message, msgs)
	for i := range batch {
		batch[i] = store.UserMessage(fmt.Sprintf("%d %s", i, text))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("sweep-%07d", i)
				if _, err := st.Conversations().Save(ctx, store.Conversation{ID: id}); err != nil {
					errs <- err
					return
				}
				if _, err := st.Conversations().AppendMessages(ctx, id, batch...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
