package storetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchFeed measures the change feed: how long a committed message takes
// to reach a feed (Store.Feed().Messages) that is waiting for it, when the
// commit is made through the same store, through another store on the
// same database (another pool, the path between processes except for the
// process boundary), and by another OS process whose feed prints each
// message as it is delivered (what `sessionctl messages --follow` will
// do). One message is appended and awaited at a time. It reports, besides
// ns/op (append plus delivery), the time from the append's return (the
// commit acknowledged) to the delivery: p50 and p99 in µs
// (ack-to-delivery-p50-µs, 0 when the delivery came first), and the p50
// from the start of the append call (call-to-delivery-p50-µs).
func BenchFeed(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h: h, o: o}
	b.Run("SameStore", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		benchFeedInProcess(b, st, st)
	})
	b.Run("OtherStore", func(b *testing.B) {
		loc := h.NewLocation(b)
		watcher, writer := e.openAt(b, loc), e.openAt(b, loc)
		defer closeBench(b, watcher)
		defer closeBench(b, writer)
		benchFeedInProcess(b, watcher, writer)
	})
	b.Run("OtherProcess", func(b *testing.B) {
		loc := h.NewLocation(b)
		writer := e.openAt(b, loc)
		defer closeBench(b, writer)
		benchFeedOtherProcess(b, loc, writer)
	})
}

// openAt opens a store on loc with the benchmark's durability.
func (e benchEnv) openAt(b *testing.B, loc string) store.Store {
	b.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		err error
	)
	if e.h.OpenWith != nil {
		st, err = e.h.OpenWith(ctx, loc, time.Now, Options{Durability: e.o.Durability})
	} else {
		st, err = e.h.Open(ctx, loc, time.Now)
	}
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	return st
}

type feedDelivery struct {
	seq int64
	at  time.Time
}

// feedLatencies collects the latencies of one run.
type feedLatencies struct{ ack, call []time.Duration }

func (l *feedLatencies) add(call, ack, delivered time.Time) {
	l.ack = append(l.ack, max(0, delivered.Sub(ack)))
	l.call = append(l.call, delivered.Sub(call))
}

func (l *feedLatencies) report(b *testing.B) {
	if len(l.ack) == 0 {
		return
	}
	slices.Sort(l.ack)
	slices.Sort(l.call)
	b.ReportMetric(float64(l.ack[len(l.ack)/2].Nanoseconds())/1e3, "ack-to-delivery-p50-µs")
	b.ReportMetric(float64(l.ack[len(l.ack)*99/100].Nanoseconds())/1e3, "ack-to-delivery-p99-µs")
	b.ReportMetric(float64(l.call[len(l.call)/2].Nanoseconds())/1e3, "call-to-delivery-p50-µs")
}

// benchFeedAwait appends one message through writer and waits for its
// delivery by next.
func benchFeedAwait(b *testing.B, writer store.Store, id string, next func() (feedDelivery, error), lat *feedLatencies) {
	ctx := context.Background()
	t0 := time.Now()
	res, err := writer.Conversations().AppendMessages(ctx, id, store.UserMessage("follow me"))
	t1 := time.Now()
	if err != nil {
		b.Fatal(err)
	}
	d, err := next()
	if err != nil {
		b.Fatal(err)
	}
	if d.seq != res.FirstSeq {
		b.Fatalf("delivered seq %d, appended %d", d.seq, res.FirstSeq)
	}
	if lat != nil {
		lat.add(t0, t1, d.at)
	}
}

const feedBenchWarmup = 5

func benchFeedInProcess(b *testing.B, watcher, writer store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const id = "feed-bench"
	if _, err := writer.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
		b.Fatal(err)
	}
	deliveries := make(chan feedDelivery, 64)
	ended := make(chan error, 1)
	go func() {
		for batch, err := range watcher.Feed().Messages(ctx, store.MessageFeed{ID: id}) {
			if err != nil {
				ended <- err
				return
			}
			at := time.Now()
			for _, m := range batch.Items {
				deliveries <- feedDelivery{seq: m.Seq, at: at}
			}
		}
	}()
	next := func() (feedDelivery, error) {
		select {
		case d := <-deliveries:
			return d, nil
		case err := <-ended:
			return feedDelivery{}, fmt.Errorf("feed ended: %w", err)
		case <-time.After(crossStoreTimeout):
			return feedDelivery{}, fmt.Errorf("no delivery within %v", crossStoreTimeout)
		}
	}
	for range feedBenchWarmup {
		benchFeedAwait(b, writer, id, next, nil)
	}
	var lat feedLatencies
	for b.Loop() {
		benchFeedAwait(b, writer, id, next, &lat)
	}
	lat.report(b)
}

func benchFeedOtherProcess(b *testing.B, loc string, writer store.Store) {
	ctx := context.Background()
	const id = "feed-bench"
	if _, err := writer.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
		b.Fatal(err)
	}
	cmd, out := spawnHelper(b, loc, "feed-echo", id, "9223372036854775807")
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() (feedDelivery, error) {
		select {
		case l, ok := <-lines:
			if !ok {
				return feedDelivery{}, fmt.Errorf("the watching process stopped")
			}
			var seq, ns int64
			if _, err := fmt.Sscan(l, &seq, &ns); err != nil {
				return feedDelivery{}, fmt.Errorf("watcher printed %q", l)
			}
			return feedDelivery{seq: seq, at: time.Unix(0, ns)}, nil
		case <-time.After(crossStoreTimeout):
			return feedDelivery{}, fmt.Errorf("no delivery within %v", crossStoreTimeout)
		}
	}
	for range feedBenchWarmup {
		benchFeedAwait(b, writer, id, next, nil)
	}
	var lat feedLatencies
	for b.Loop() {
		benchFeedAwait(b, writer, id, next, &lat)
	}
	lat.report(b)
}

// spawnHelper starts the test binary as helper role on loc (see
// RunHelperProcess); its stderr goes to tb's log.
func spawnHelper(tb testing.TB, loc, role string, args ...string) (*exec.Cmd, io.Reader) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(),
		envRole+"="+role,
		envLoc+"="+loc,
		envArgs+"="+strings.Join(args, "\x1f"),
	)
	cmd.Stderr = tbWriter{tb: tb, prefix: role + ": "}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start helper process: %v", err)
	}
	return cmd, stdout
}

type tbWriter struct {
	tb     testing.TB
	prefix string
}

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Logf("%s%s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
