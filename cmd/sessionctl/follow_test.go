package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// lineWriter collects what a follow prints and hands over each complete
// line as it is written.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 100000)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// waitLines returns the next n lines from lines, failing after a generous
// deadline (a follow that stopped printing).
func waitLines(t testing.TB, lines <-chan string, n int, what string) []string {
	t.Helper()
	var out []string
	deadline := time.After(60 * time.Second)
	for len(out) < n {
		select {
		case l := <-lines:
			out = append(out, l)
		case <-deadline:
			t.Fatalf("%s: %d of %d lines after 60s: %q", what, len(out), n, out)
		}
	}
	return out
}

// follower is a follow command running in this process on its own store;
// stop cancels its context, as Ctrl-C does.
type follower struct {
	out    *lineWriter
	errb   *bytes.Buffer
	cancel context.CancelFunc
	code   chan int
}

func (e *testEnv) startFollow(args ...string) *follower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{out: newLineWriter(), errb: &bytes.Buffer{}, cancel: cancel, code: make(chan int, 1)}
	g := &globals{stdin: strings.NewReader(""), stdout: f.out, stderr: f.errb, now: e.clock.Now}
	go func() { f.code <- g.run(ctx, append([]string{"--db", e.db}, args...)) }()
	e.t.Cleanup(cancel)
	return f
}

// stop cancels the follow and returns its exit status.
func (f *follower) stop(t *testing.T) int {
	t.Helper()
	f.cancel()
	select {
	case c := <-f.code:
		return c
	case <-time.After(60 * time.Second):
		t.Fatal("follow did not end after its context was cancelled")
	}
	return -1
}

// followStream is one stream a follow command prints.
type followStream struct {
	name    string
	args    []string                                        // the follow command, without --json or --from
	seqKey  string                                          // the position's name in a JSON line
	first   int64                                           // the first position of the stream
	setup   func(ctx context.Context, st store.Store) error // writes the first two items
	add     func(ctx context.Context, st store.Store, i int) error
	fromArg func(seq int64) []string
}

var followStreams = []followStream{
	{
		name: "messages", args: []string{"messages", "c1", "--follow"}, seqKey: "seq", first: 0,
		setup: func(ctx context.Context, st store.Store) error {
			c := store.NewConversation("c1")
			c.Messages = []store.Message{store.UserMessage("first"), store.AssistantMessage("second")}
			_, err := st.Conversations().Save(ctx, c)
			return err
		},
		add: func(ctx context.Context, st store.Store, i int) error {
			_, err := st.Conversations().AppendMessages(ctx, "c1", store.UserMessage(fmt.Sprintf("message %d", i)))
			return err
		},
		fromArg: func(seq int64) []string { return []string{"--from", fmt.Sprint(seq)} },
	},
	{
		name: "traces", args: []string{"traces", "c1", "--follow"}, seqKey: "seq", first: 0,
		setup: func(ctx context.Context, st store.Store) error {
			if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
				return err
			}
			_, err := st.Conversations().AppendTraces(ctx, "c1", traceEvent(0), traceEvent(1))
			return err
		},
		add: func(ctx context.Context, st store.Store, i int) error {
			_, err := st.Conversations().AppendTraces(ctx, "c1", traceEvent(i))
			return err
		},
		fromArg: func(seq int64) []string { return []string{"--from", fmt.Sprint(seq)} },
	},
	{
		name: "runs", args: []string{"runs", "c1", "--follow", "--run", "run-1"}, seqKey: "sequence", first: 0,
		setup: func(ctx context.Context, st store.Store) error {
			if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
				return err
			}
			return st.Conversations().PutRuns(ctx, "c1", store.RunRecord{
				Snapshot: store.RunSnapshot{ID: "run-1", Status: store.RunCompleted, Prompt: "p"},
				Events:   []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"n":0}`)}, {Seq: 1, Event: json.RawMessage(`{"n":1}`)}}})
		},
		add: func(ctx context.Context, st store.Store, i int) error {
			_, err := st.Conversations().AppendRunEvents(ctx, "c1", "run-1", store.RunEvent{Event: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
			return err
		},
		fromArg: func(seq int64) []string { return []string{"--from", fmt.Sprint(seq)} },
	},
	{
		name: "agent_events", args: []string{"agents", "events", "app", "ada", "s1", "--follow"}, seqKey: "seq", first: 1,
		setup: func(ctx context.Context, st store.Store) error {
			k := store.SessionKey{App: "app", User: "ada", Session: "s1"}
			if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: k}); err != nil {
				return err
			}
			for i := range 2 {
				if err := followAgentEvent(ctx, st, i); err != nil {
					return err
				}
			}
			return nil
		},
		add:     followAgentEvent,
		fromArg: func(seq int64) []string { return []string{"--from", fmt.Sprint(seq)} },
	},
}

func traceEvent(i int) store.TraceEvent {
	return store.TraceEvent{Schema: "trace.v1", Kind: store.TraceToolExecution, Name: fmt.Sprintf("tool-%d", i), Success: i%2 == 0, DurationMS: int64(i)}
}

func followAgentEvent(ctx context.Context, st store.Store, i int) error {
	_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{Key: store.SessionKey{App: "app", User: "ada", Session: "s1"},
		Event: store.AgentEvent{ID: fmt.Sprintf("e%d", i), InvocationID: "inv", Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}})
	return err
}

// seqs decodes the positions of JSON lines.
func seqs(t *testing.T, key string, lines []string) []int64 {
	t.Helper()
	var out []int64
	for _, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not one JSON object per line: %q: %v", l, err)
		}
		var n int64
		if err := json.Unmarshal(m[key], &n); err != nil {
			t.Fatalf("line %q has no %s: %v", l, key, err)
		}
		out = append(out, n)
	}
	return out
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestFollow: each follow prints what is stored, then every row a second
// store on the same database commits, once each and in order, as JSON
// lines; it ends with exit 0 when its context is cancelled; started again
// from a position it resumes exactly there; its table form is golden.
func TestFollow(t *testing.T) {
	t.Parallel()
	bothBackends(t, testFollow)
}

func testFollow(t *testing.T, newTestEnv envMaker) {
	for _, s := range followStreams {
		t.Run(s.name, func(t *testing.T) {
			e := newTestEnv(t)
			ctx := context.Background()
			writer := e.openStore()
			defer writer.Close()
			if err := s.setup(ctx, writer); err != nil {
				t.Fatal(err)
			}
			f := e.startFollow(append(s.args, "--json")...)
			got := waitLines(t, f.out.lines, 2, "the stored rows")
			// Appends in bursts while the follow runs, some before it
			// printed the previous ones.
			const added = 25
			for i := 2; i < 2+added; i++ {
				if err := s.add(ctx, writer, i); err != nil {
					t.Fatal(err)
				}
				if i%5 == 0 {
					got = append(got, waitLines(t, f.out.lines, i+1-len(got), "appended rows")...)
				}
			}
			got = append(got, waitLines(t, f.out.lines, 2+added-len(got), "appended rows")...)
			if code := f.stop(t); code != 0 {
				t.Fatalf("follow exited %d after cancel; stderr %q", code, f.errb.String())
			}
			last := s.first + 2 + added - 1
			if want := seqRange(s.first, last); !slices.Equal(seqs(t, s.seqKey, got), want) {
				t.Fatalf("positions %v, want %v", seqs(t, s.seqKey, got), want)
			}
			select {
			case l := <-f.out.lines:
				t.Fatalf("line after the last row: %q", l)
			default:
			}

			// Resume from a position: exactly from there, then new rows.
			f = e.startFollow(append(append(s.args, "--json"), s.fromArg(last-1)...)...)
			resumed := waitLines(t, f.out.lines, 2, "resumed rows")
			if err := s.add(ctx, writer, 2+added); err != nil {
				t.Fatal(err)
			}
			resumed = append(resumed, waitLines(t, f.out.lines, 1, "a row after resuming")...)
			if code := f.stop(t); code != 0 {
				t.Fatalf("resumed follow exited %d; stderr %q", code, f.errb.String())
			}
			if want := seqRange(last-1, last+1); !slices.Equal(seqs(t, s.seqKey, resumed), want) {
				t.Fatalf("resumed at %d: positions %v, want %v", last-1, seqs(t, s.seqKey, resumed), want)
			}

			// The table form: a header, then one line per row.
			f = e.startFollow(append(slices.Clone(s.args), s.fromArg(last-2)...)...)
			lines := waitLines(t, f.out.lines, 4, "table rows")
			if code := f.stop(t); code != 0 {
				t.Fatalf("table follow exited %d; stderr %q", code, f.errb.String())
			}
			golden(t, "follow_"+s.name, e.normalize(strings.Join(lines, "\n")+"\n"))
		})
	}
}

// TestFollowEnds: a follow of a missing object exits 3; a deleted one
// ends the follow with 3; a rewritten history ends it with the feed-reset
// status.
func TestFollowEnds(t *testing.T) {
	t.Parallel()
	bothBackends(t, testFollowEnds)
}

func testFollowEnds(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	if err := followStreams[0].setup(ctx, st); err != nil {
		t.Fatal(err)
	}
	e.run("messages", "nope", "--follow").want(t, exitNotFound)
	e.run("traces", "nope", "--follow").want(t, exitNotFound)
	e.run("runs", "c1", "--follow", "--run", "nope").want(t, exitNotFound)
	e.run("agents", "events", "a", "u", "s", "--follow").want(t, exitNotFound)
	e.run("runs", "c1", "--follow").want(t, exitUsage).oneLineErr(t, "needs --run")
	e.run("messages", "c1", "--follow", "--limit", "3").want(t, exitUsage)

	f := e.startFollow("messages", "c1", "--follow", "--json")
	waitLines(t, f.out.lines, 2, "stored messages")
	if _, err := st.Conversations().PopMessage(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Conversations().AppendMessages(ctx, "c1", store.UserMessage("replaces the popped one")); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-f.code:
		if code != exitFeedReset || !strings.Contains(f.errb.String(), "was rewritten while followed") {
			t.Fatalf("follow of a rewritten history: exit %d, stderr %q", code, f.errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("follow did not notice the rewritten history")
	}

	f = e.startFollow("messages", "c1", "--follow", "--json")
	waitLines(t, f.out.lines, 2, "stored messages")
	if err := st.Conversations().Delete(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-f.code:
		if code != exitNotFound {
			t.Fatalf("follow of a deleted conversation: exit %d, stderr %q", code, f.errb.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("follow did not notice the deleted conversation")
	}
}

// TestFollowOtherProcess: sessionctl messages --follow in another OS
// process prints what this process appends, in order, once each, and
// exits 0 on an interrupt.
func TestFollowOtherProcess(t *testing.T) {
	t.Parallel()
	bothBackends(t, testFollowOtherProcess)
}

func testFollowOtherProcess(t *testing.T, newTestEnv envMaker) {
	e := newTestEnv(t)
	ctx := context.Background()
	st := e.openStore()
	defer st.Close()
	s := followStreams[0]
	if err := s.setup(ctx, st); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, "sessionctl", false, append([]string{"--db", e.db}, append(s.args, "--json")...)...)
	lines := make(chan string, 1000)
	go func() {
		for {
			l, err := h.out.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSuffix(l, "\n")
		}
	}()
	got := waitLines(t, lines, 2, "the stored messages")
	const added = 20
	for i := 2; i < 2+added; i++ {
		if err := s.add(ctx, st, i); err != nil {
			t.Fatal(err)
		}
	}
	got = append(got, waitLines(t, lines, added, "messages appended by another process")...)
	if want := seqRange(0, 2+added-1); !slices.Equal(seqs(t, "seq", got), want) {
		t.Fatalf("positions %v, want %v", seqs(t, "seq", got), want)
	}
	if err := h.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("follow process after an interrupt: %v", err)
	}
}

// BenchmarkFollowLatency measures the latency from commit to print across
// two processes: this process appends one message at a time (the append
// returns once it is committed) and reads the line that "sessionctl
// messages --follow --json", running in another OS process, prints for it.
// It reports the median and the 99th percentile.
//
//	go test ./cmd/sessionctl -run '^$' -bench FollowLatency -benchtime 300x
//	scripts/with-postgres.sh go test ./cmd/sessionctl -run '^$' -bench FollowLatency/postgres -benchtime 300x
func BenchmarkFollowLatency(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchFollowLatency(b, b.TempDir()+"/sessions.db") })
	b.Run("postgres", func(b *testing.B) { benchFollowLatency(b, pgSchemaURL(b)) })
}

func benchFollowLatency(b *testing.B, db string) {
	ctx := context.Background()
	g := &globals{db: db}
	st, err := g.openOrCreate(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Conversations().Save(ctx, store.NewConversation("c1")); err != nil {
		b.Fatal(err)
	}
	h := startHelper(b, "sessionctl", false, "--db", db, "messages", "c1", "--follow", "--json")
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for {
			l, err := h.out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	// A first message proves the follow runs before the clock starts.
	if _, err := st.Conversations().AppendMessages(ctx, "c1", store.UserMessage("warm-up")); err != nil {
		b.Fatal(err)
	}
	waitLines(b, lines, 1, "the warm-up message")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if _, err := st.Conversations().AppendMessages(ctx, "c1", store.UserMessage(fmt.Sprint("m", i))); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		waitLines(b, lines, 1, "a followed message")
		lat = append(lat, time.Since(committed))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	h.cmd.Process.Signal(os.Interrupt)
}
