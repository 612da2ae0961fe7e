package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// The benchmark suite. Like the tests, the benchmarks use only the store
// interfaces, so that two backends' numbers measure the same calls on the
// same data. Every store is opened through Harness.OpenWith (Harness.Open
// when it has none) with the real clock, on a fresh location; set-up
// (histories, sessions, events) is outside the timed region, every call's
// error is checked, and every benchmark checks that the call it names did
// what it should (the page has 100 items, the append landed at the end).

// BenchOptions configures Bench.
type BenchOptions struct {
	// Durability is passed to Harness.OpenWith as Options.Durability for
	// every store the benchmarks open; empty keeps the backend's default.
	Durability string
	// WritesOnly runs only the benchmarks that commit writes, the ones
	// whose cost depends on the durability setting. A backend that runs
	// Bench at several durability settings sets it on all runs but the
	// default one, so that reads are measured once.
	WritesOnly bool
}

// Bench runs the whole benchmark suite: governance, conversations, agent
// sessions, runtime turns, the change feed, and spend limits with the
// audit trail, as sub-benchmarks (see BenchGovernance, BenchConversations,
// BenchAgentSessions, BenchRuntime, BenchFeed and BenchSpend). A backend runs
// it from one benchmark, once per durability setting it wants measured:
//
//	func BenchmarkStore(b *testing.B) {
//		b.Run("sync=FULL", func(b *testing.B) {
//			storetest.Bench(b, harness, storetest.BenchOptions{Durability: "FULL"})
//		})
//		b.Run("sync=NORMAL", func(b *testing.B) {
//			storetest.Bench(b, harness, storetest.BenchOptions{Durability: "NORMAL", WritesOnly: true})
//		})
//	}
func Bench(b *testing.B, h Harness, o BenchOptions) {
	b.Run("Governance", func(b *testing.B) { BenchGovernance(b, h, o) })
	b.Run("Conversations", func(b *testing.B) { BenchConversations(b, h, o) })
	b.Run("AgentSessions", func(b *testing.B) { BenchAgentSessions(b, h, o) })
	b.Run("AgentBranches", func(b *testing.B) { BenchAgentBranches(b, h, o) })
	b.Run("ConversationBranches", func(b *testing.B) { BenchConversationBranches(b, h, o) })
	b.Run("Runtime", func(b *testing.B) { BenchRuntime(b, h, o) })
	b.Run("Feed", func(b *testing.B) { BenchFeed(b, h, o) })
	b.Run("Spend", func(b *testing.B) { BenchSpend(b, h, o) })
}

// benchEnv opens the stores of one run of the suite.
type benchEnv struct {
	h Harness
	o BenchOptions
}

// open opens a store on a fresh location. The caller closes it (defer
// closeBench), so that a benchmark function that the testing package calls
// once per round does not keep the stores of earlier rounds open.
func (e benchEnv) open(b *testing.B) store.Store {
	b.Helper()
	ctx := context.Background()
	loc := e.h.NewLocation(b)
	var (
		st  store.Store
		err error
	)
	switch {
	case e.h.OpenWith != nil:
		st, err = e.h.OpenWith(ctx, loc, time.Now, Options{Durability: e.o.Durability})
	case e.o.Durability == "":
		st, err = e.h.Open(ctx, loc, time.Now)
	default:
		b.Fatal("storetest: the harness has no OpenWith; a durability setting needs it")
	}
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	return st
}

// closeBench closes a store opened by open.
func closeBench(b *testing.B, st store.Store) {
	b.Helper()
	if err := st.Close(); err != nil {
		b.Errorf("close store: %v", err)
	}
}

// benchCallers runs fn b.N times in all from exactly callers goroutines
// (b.RunParallel ties the number of goroutines to GOMAXPROCS); caller is
// the goroutine's index, from 0. It reports the throughput as unit/s and
// the median and 99th-percentile latency of one call.
//
// Before the timer starts, every caller makes one warm-up call, all at
// once, so that a backend's connection pool has opened the connections the
// callers need (opening one is not the cost of a call). The benchmark
// function runs once per round of the testing package's b.N ramp, set-up
// included; keep the set-up small.
func benchCallers(b *testing.B, callers int, unit string, fn func(ctx context.Context, caller int) error) {
	b.Helper()
	var next atomic.Int64
	n := int64(b.N)
	lat := make([][]time.Duration, callers)
	var wg sync.WaitGroup
	ctx := context.Background()
	for i := range callers {
		wg.Go(func() {
			if err := fn(ctx, i); err != nil {
				b.Errorf("warm-up: %v", err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range callers {
		wg.Go(func() {
			for next.Add(1) <= n {
				t0 := time.Now()
				if err := fn(ctx, i); err != nil {
					b.Error(err)
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	if len(all) == 0 || b.Failed() {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), unit+"/s")
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// benchSeed runs fn(i) for i in [0, n) from workers goroutines: set-up
// that commits many rows goes faster when the backend can commit several
// writers together. The first error fails b.
func benchSeed(b *testing.B, workers, n int, fn func(ctx context.Context, i int) error) {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	ctx := context.Background()
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(ctx, i); err != nil {
					if failed.CompareAndSwap(false, true) {
						b.Errorf("set-up %d: %v", i, err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		b.FailNow()
	}
}

// perSecond reports b.N divided by the timed duration as unit/s.
func perSecond(b *testing.B, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit+"/s")
	}
}

// ---------------------------------------------------------------------------
// Governance

// benchGovSession is a governed session the benchmarks can spend without
// running out: a budget of 2^50 calls, no rate limit, a day to live.
func benchGovSession(agent string) store.CreateRequest {
	return store.CreateRequest{
		AgentID:         agent,
		AuthorizedTools: []string{"read_file", "list_dir"},
		CallBudget:      1 << 50,
		TimeLimit:       24 * time.Hour,
	}
}

// BenchGovernance benchmarks the governed-session facet:
//
//   - Use/session=shared/callers=N: N goroutines spend one session (one
//     agent), one tool call per Use; the row every call updates is the
//     same, so the calls serialize.
//   - Use/session=per-caller/callers=N: each goroutine spends a session of
//     its own agent, the shape of a fleet; nothing but the database itself
//     is shared.
//   - Get: one session by id, in a database of 10,000.
//   - List/page=100: a keyset page of 100 of 10,000 sessions, from the
//     middle of the id range.
func BenchGovernance(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	for _, callers := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("Use/session=shared/callers=%d", callers), func(b *testing.B) {
			st := e.open(b)
			defer closeBench(b, st)
			gov := st.Governance()
			sess, err := gov.Create(context.Background(), benchGovSession("bench"))
			if err != nil {
				b.Fatal(err)
			}
			req := store.UseRequest{SessionID: sess.ID, AgentID: "bench", Tools: []string{"read_file"}}
			benchCallers(b, callers, "calls", func(ctx context.Context, _ int) error {
				_, err := gov.Use(ctx, req)
				return err
			})
		})
	}
	for _, callers := range []int{8, 32} {
		b.Run(fmt.Sprintf("Use/session=per-caller/callers=%d", callers), func(b *testing.B) {
			st := e.open(b)
			defer closeBench(b, st)
			gov := st.Governance()
			reqs := make([]store.UseRequest, callers)
			for i := range reqs {
				agent := fmt.Sprintf("bench-%d", i)
				sess, err := gov.Create(context.Background(), benchGovSession(agent))
				if err != nil {
					b.Fatal(err)
				}
				reqs[i] = store.UseRequest{SessionID: sess.ID, AgentID: agent, Tools: []string{"read_file"}}
			}
			benchCallers(b, callers, "calls", func(ctx context.Context, caller int) error {
				_, err := gov.Use(ctx, reqs[caller])
				return err
			})
		})
	}
	if o.WritesOnly {
		return
	}
	// The read benchmarks share one database of 10,000 sessions, s-00000
	// to s-09999, created when the first of them runs.
	var fixture struct {
		once sync.Once
		st   store.Store
	}
	defer func() {
		if fixture.st != nil {
			closeBench(b, fixture.st)
		}
	}()
	sessions := func(sb *testing.B) store.Governance {
		fixture.once.Do(func() {
			// The location belongs to the parent: it must outlive
			// this sub-benchmark.
			st := e.open(b)
			defer func() {
				if fixture.st == nil { // set-up failed
					closeBench(sb, st)
				}
			}()
			// Create one, restore 9,999 copies of it in one
			// transaction: the same rows as 10,000 Creates, in a
			// fraction of the set-up time.
			ctx := context.Background()
			req := benchGovSession("bench")
			req.ID = "s-00000"
			first, err := st.Governance().Create(ctx, req)
			if err != nil {
				sb.Fatal(err)
			}
			copies := make([]store.Session, 9_999)
			for i := range copies {
				copies[i] = first
				copies[i].ID = fmt.Sprintf("s-%05d", i+1)
			}
			if n, err := st.Governance().Restore(ctx, store.RestoreRequest{Sessions: copies}); err != nil || n != int64(len(copies)) {
				sb.Fatalf("restore: %d sessions, %v", n, err)
			}
			fixture.st = st
		})
		if fixture.st == nil {
			sb.Fatal("set-up failed (see the first benchmark that needed it)")
		}
		return fixture.st.Governance()
	}
	b.Run("Get", func(b *testing.B) {
		gov := sessions(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			s, err := gov.Get(ctx, "s-05000")
			if err != nil {
				b.Fatal(err)
			}
			if s.ID != "s-05000" {
				b.Fatalf("got session %q", s.ID)
			}
		}
	})
	b.Run("List/page=100", func(b *testing.B) {
		gov := sessions(b)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			p, err := gov.List(ctx, store.ListFilter{After: "s-05000", Limit: 100})
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Items) != 100 || p.Items[0].ID != "s-05001" {
				b.Fatalf("got %d sessions", len(p.Items))
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Conversations

// benchMessages returns n realistic messages: in turn user text, assistant
// tool calls and tool results, of a few hundred bytes each.
func benchMessages(n int) []store.Message {
	msgs := make([]store.Message, n)
	body := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	for i := range msgs {
		switch i % 3 {
		case 0:
			msgs[i] = store.UserMessage(fmt.Sprintf("request %d: %s", i, body))
		case 1:
			msgs[i] = store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{
				store.TextBlock("Running the command."),
				store.ToolUseBlock(fmt.Sprintf("toolu_%d", i), "bash", json.RawMessage(`{"command":"go test ./...","timeout":120000}`)),
			}}
		default:
			msgs[i] = store.Message{Role: store.RoleUser, Content: []store.ContentBlock{
				store.ToolResultBlock(fmt.Sprintf("toolu_%d", i-1), "ok  \tgithub.com/x/y\t0.412s\n"+body, false),
			}}
		}
	}
	return msgs
}

// benchConversation saves a conversation with n messages.
func benchConversation(b *testing.B, st store.Store, id string, n int) {
	b.Helper()
	c := store.NewConversation(id)
	c.Messages = benchMessages(n)
	if _, err := st.Conversations().Save(context.Background(), c); err != nil {
		b.Fatal(err)
	}
}

// BenchConversations benchmarks the conversation facet:
//
//   - Append/history=N: append one message (one durable transaction) to a
//     conversation of N messages. The history stays at N: each appended
//     message is popped again outside the timed region. The cost must not
//     grow with N (appends never rewrite the history).
//   - SaveWhole/history=N: rewrite a whole conversation of N messages, as
//     the file-based seed did on every change: the cost an append avoids.
//   - Load/messages=1000: load a whole conversation of 1,000 messages.
//   - MessagesPage/from=9900 and MessagesPage/last=100: read the last page
//     of 100 messages of a 10,000-message history, by position and from
//     the end.
func BenchConversations(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("Append/history=%d", n), func(b *testing.B) {
			st := e.open(b)
			defer closeBench(b, st)
			benchConversation(b, st, "bench", n)
			c := st.Conversations()
			ctx := context.Background()
			msg := benchMessages(2)[1]
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.AppendMessages(ctx, "bench", msg)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if res.FirstSeq != int64(n) {
					b.Fatalf("appended at %d, want %d", res.FirstSeq, n)
				}
				if _, err := c.PopMessage(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			perSecond(b, "appends")
		})
	}
	for _, n := range []int{10, 1_000} {
		b.Run(fmt.Sprintf("SaveWhole/history=%d", n), func(b *testing.B) {
			st := e.open(b)
			defer closeBench(b, st)
			c := store.NewConversation("bench")
			c.Messages = benchMessages(n)
			conv := st.Conversations()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conv.Save(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
			perSecond(b, "saves")
		})
	}
	if o.WritesOnly {
		return
	}
	b.Run("Load/messages=1000", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		benchConversation(b, st, "bench", 1_000)
		c := st.Conversations()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			conv, err := c.Load(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if len(conv.Messages) != 1_000 {
				b.Fatalf("%d messages", len(conv.Messages))
			}
		}
	})
	b.Run("MessagesPage", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		benchConversation(b, st, "bench", 10_000)
		c := st.Conversations()
		ctx := context.Background()
		b.Run("from=9900", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := c.Messages(ctx, "bench", 9_900, 100)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != 100 || page[0].Seq != 9_900 {
					b.Fatalf("%d messages", len(page))
				}
			}
		})
		b.Run("last=100", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := c.LastMessages(ctx, "bench", 100)
				if err != nil {
					b.Fatal(err)
				}
				if len(page) != 100 || page[99].Seq != 9_999 {
					b.Fatalf("%d messages", len(page))
				}
			}
		})
	})
}

// ---------------------------------------------------------------------------
// Agent sessions

// benchEventData is the JSON of a typical model-response event of about
// 1 KiB: text, usage metadata, the turn-complete flag.
var benchEventData = func() json.RawMessage {
	data, err := json.Marshal(map[string]any{
		"author": "assistant",
		"content": map[string]any{
			"role":  "model",
			"parts": []any{map[string]any{"text": strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20)}},
		},
		"usage_metadata": map[string]any{"prompt_token_count": 120, "candidates_token_count": 60, "total_token_count": 180},
		"turn_complete":  true,
	})
	if err != nil {
		panic(err)
	}
	return data
}()

// benchEvent returns the i-th event of a session: about 1 KiB, with an id
// and an invocation id (four events per invocation), as ADK writes them.
// BenchEventData returns the document of the events the agent-session
// benchmarks append (for a backend's benchmark of the same write without
// the store).
func BenchEventData() json.RawMessage { return benchEventData }

func benchEvent(i int) store.AgentEvent {
	return store.AgentEvent{
		ID:           fmt.Sprintf("ev-%d", i),
		InvocationID: fmt.Sprintf("inv-%d", i/4),
		Data:         benchEventData,
	}
}

// benchDelta is a one-key session-state delta, as a model turn leaves.
func benchDelta(i int) store.ScopedState {
	return store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(fmt.Sprint(i))}}
}

// benchAgentSessions creates the agent sessions of app "bench", user "u",
// named by the keys of events, and appends to each as many events as
// events says (with their state deltas), from 16 goroutines spread over
// the sessions.
func benchAgentSessions(b *testing.B, st store.Store, events map[string]int) map[string]store.SessionKey {
	b.Helper()
	ctx := context.Background()
	keys := make(map[string]store.SessionKey, len(events))
	type job struct {
		key store.SessionKey
		i   int
	}
	var jobs []job
	most := 0
	for id, n := range events {
		key := store.SessionKey{App: "bench", User: "u", Session: id}
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			b.Fatal(err)
		}
		keys[id] = key
		most = max(most, n)
	}
	for i := range most { // round-robin over the sessions
		for id, n := range events {
			if i < n {
				jobs = append(jobs, job{keys[id], i})
			}
		}
	}
	benchSeed(b, 16, len(jobs), func(ctx context.Context, j int) error {
		_, err := st.AgentSessions().AppendEvent(ctx, store.AppendEventRequest{
			Key: jobs[j].key, Event: benchEvent(jobs[j].i), Delta: benchDelta(jobs[j].i),
		})
		return err
	})
	return keys
}

// BenchAgentSessions benchmarks the agent-session facet (the storage model
// of ADK's session service), with events of about 1 KiB:
//
//   - AppendEvent/callers=N: append one event with a one-key state delta;
//     each of N goroutines appends to a session of its own. The logs grow
//     by the appended events.
//   - GetSession/events=N: read a session with all of its N events.
//   - GetSession/events=1000/recent=100: read a session with the 100 most
//     recent of its 1,000 events (ADK's NumRecentEvents).
//   - ListSessions/page=100: a page of 100 sessions (with their state) from
//     the middle of a user's 1,000, by cursor.
//
// The GetSession benchmarks share one database: the sessions of 100 and
// 1,000 events and a third of 1,000 events, so that other sessions' events
// are in the same table.
func BenchAgentSessions(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("AppendEvent/callers=%d", callers), func(b *testing.B) {
			st := e.open(b)
			defer closeBench(b, st)
			as := st.AgentSessions()
			keys := make([]store.SessionKey, callers)
			next := make([]int, callers)
			for i := range keys {
				keys[i] = store.SessionKey{App: "bench", User: "u", Session: fmt.Sprintf("s-%d", i)}
				if _, err := as.CreateSession(context.Background(), store.CreateAgentSessionRequest{Key: keys[i]}); err != nil {
					b.Fatal(err)
				}
			}
			benchCallers(b, callers, "events", func(ctx context.Context, caller int) error {
				i := next[caller]
				next[caller]++
				_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: keys[caller], Event: benchEvent(i), Delta: benchDelta(i)})
				return err
			})
		})
	}
	if o.WritesOnly {
		return
	}
	b.Run("GetSession", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		keys := benchAgentSessions(b, st, map[string]int{"small": 100, "large": 1_000, "other": 1_000})
		small, large := keys["small"], keys["large"]
		as := st.AgentSessions()
		ctx := context.Background()
		get := func(b *testing.B, req store.GetAgentSessionRequest, want int) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := as.GetSession(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if len(s.Events) != want {
					b.Fatalf("%d events, want %d", len(s.Events), want)
				}
			}
		}
		b.Run("events=100", func(b *testing.B) {
			get(b, store.GetAgentSessionRequest{Key: small, IncludeEvents: true}, 100)
		})
		b.Run("events=1000", func(b *testing.B) {
			get(b, store.GetAgentSessionRequest{Key: large, IncludeEvents: true}, 1_000)
		})
		b.Run("events=1000/recent=100", func(b *testing.B) {
			get(b, store.GetAgentSessionRequest{Key: large, IncludeEvents: true, Recent: 100}, 100)
		})
	})
	b.Run("ListSessions/page=100", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		as := st.AgentSessions()
		benchSeed(b, 8, 1_000, func(ctx context.Context, i int) error {
			key := store.SessionKey{App: "bench", User: "u", Session: fmt.Sprintf("s-%04d", i)}
			_, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{
				Key:   key,
				State: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage("0")}},
			})
			return err
		})
		// Page 6 of 10: the cursor of the first five pages' last session.
		ctx := context.Background()
		req := store.ListAgentSessionsRequest{App: "bench", User: "u", Limit: 100}
		for range 5 {
			p, err := as.ListSessions(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			req.Cursor = p.Next
		}
		b.ReportAllocs()
		for b.Loop() {
			p, err := as.ListSessions(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Items) != 100 || p.Items[0].Key.Session != "s-0500" {
				b.Fatalf("%d sessions", len(p.Items))
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Runtime

// BenchRuntime benchmarks the runtime facet:
//
//   - TurnBeginCancelEnd: a whole turn life cycle in one store: begin a
//     turn, cancel it, wait for its context, take the cancel cause, end
//     it (four writes).
//
// How fast a cancel reaches a turn of another process depends on the
// backend's delivery (polling, notifications); the backends benchmark that
// themselves.
func BenchRuntime(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	b.Run("TurnBeginCancelEnd", func(b *testing.B) {
		st := e.open(b)
		defer closeBench(b, st)
		rt := st.Runtime()
		ctx := context.Background()
		if _, err := rt.Insert(ctx, store.NewRuntimeSession{ID: "s", AgentAlias: "x", WorkspaceDir: ".", ChatMode: store.ChatModeChat}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			gen, tctx, err := rt.BeginTurn(ctx, "s")
			if err != nil {
				b.Fatal(err)
			}
			if ok, err := rt.Cancel(ctx, "s", store.CauseClientRequest); err != nil || !ok {
				b.Fatalf("cancel: %v, %v", ok, err)
			}
			<-tctx.Done()
			if _, _, err := rt.TakeCancelCause(ctx, "s", gen); err != nil {
				b.Fatal(err)
			}
			if _, err := rt.EndTurn(ctx, "s", gen); err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b, "turns")
	})
}
