package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchAgentBranches benchmarks fork, forked reads and the summary read
// of agent sessions, on sessions of 10,000 events of about 1 KiB, each
// with a one-key session-state delta:
//
//   - CreateSession/baseline: create a session with one state key (what
//     a fork costs at least: one durable commit).
//   - Fork/at=end: fork a 10,000-event session at its last event (the
//     fork copies the current session state).
//   - Fork/at=middle: fork it at event 5,000 (the state at the fork point
//     is folded from the deltas of the events before it).
//   - ForkedRead: read all 10,000 events of a plain session and of a fork
//     of the same length (5,000 inherited, 5,000 its own), alternately in
//     one loop; it reports each read's time and their ratio (fork/plain).
//   - SummaryTail: read "latest summary + what follows" of a session of
//     10,000 events with a compaction record covering 1..9,900, and its
//     last 100 events, alternately; it reports the ratio (summary/last100).
func BenchAgentBranches(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	const n = 10_000
	st := e.open(b)
	defer closeBench(b, st)
	ctx := context.Background()
	as := st.AgentSessions()
	keys := benchAgentSessions(b, st, map[string]int{"plain": n, "parent": n})
	plain, parent := keys["plain"], keys["parent"]
	// The baseline of a fork's cost: creating a session with one state
	// key, in the same database (one durable commit, a few statements).
	b.Run("CreateSession/baseline", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: store.SessionKey{App: "bench", User: "u", Session: fmt.Sprintf("new-%d", i)},
				State: benchDelta(i)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Fork/at=end", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			f, err := as.Fork(ctx, store.ForkRequest{Key: parent, At: n, Session: fmt.Sprintf("end-%d", i)})
			if err != nil {
				b.Fatal(err)
			}
			if f.EventCount != n || len(f.State.Session) != 1 {
				b.Fatalf("fork %+v", f)
			}
		}
	})
	b.Run("Fork/at=middle", func(b *testing.B) {
		// The events were appended concurrently: the state at the fork
		// point is the delta of the event that landed there ("ev-K" set
		// turn to K).
		page, err := as.ListEvents(ctx, store.ListEventsRequest{Key: parent, Cursor: store.EventCursor(n/2 - 1), Limit: 1})
		if err != nil || len(page.Items) != 1 {
			b.Fatalf("event %d: %v", n/2, err)
		}
		want := strings.TrimPrefix(page.Items[0].ID, "ev-")
		i := 0
		for b.Loop() {
			i++
			f, err := as.Fork(ctx, store.ForkRequest{Key: parent, At: n / 2, Session: fmt.Sprintf("mid-%d", i)})
			if err != nil {
				b.Fatal(err)
			}
			if f.EventCount != n/2 || string(f.State.Session["turn"]) != want {
				b.Fatalf("fork %+v", f.State.Session)
			}
		}
	})
	if o.WritesOnly {
		return
	}
	fork := store.SessionKey{App: "bench", User: "u", Session: "fork"}
	if _, err := as.Fork(ctx, store.ForkRequest{Key: parent, At: n / 2, Session: fork.Session}); err != nil {
		b.Fatal(err)
	}
	benchSeed(b, 1, n/2, func(ctx context.Context, i int) error {
		_, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: fork, Event: benchEvent(n + i), Delta: benchDelta(i)})
		return err
	})
	// alternate times a and b in turns and reports both and b/a.
	alternate := func(b *testing.B, aName, bName string, fa, fb func() error) {
		var ta, tb time.Duration
		for b.Loop() {
			t0 := time.Now()
			if err := fa(); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := fb(); err != nil {
				b.Fatal(err)
			}
			ta, tb = ta+t1.Sub(t0), tb+time.Since(t1)
		}
		b.ReportMetric(float64(ta.Nanoseconds())/float64(b.N), aName+"-ns/read")
		b.ReportMetric(float64(tb.Nanoseconds())/float64(b.N), bName+"-ns/read")
		b.ReportMetric(float64(tb)/float64(ta), bName+"/"+aName)
	}
	// read checks the number of events read and the first one's position
	// (the seeding appends concurrently: ids are not in log order), or
	// its id when firstID is set.
	read := func(req store.GetAgentSessionRequest, want int, first int64, firstID string) func() error {
		req.IncludeEvents = true
		return func() error {
			s, err := as.GetSession(ctx, req)
			if err != nil {
				return err
			}
			if len(s.Events) != want || (firstID == "" && s.Events[0].Seq != first) || (firstID != "" && s.Events[0].ID != firstID) {
				return fmt.Errorf("read %d events from #%d %s, want %d from #%d %s", len(s.Events), s.Events[0].Seq, s.Events[0].ID, want, first, firstID)
			}
			return nil
		}
	}
	b.Run("ForkedRead/events=10000", func(b *testing.B) {
		alternate(b, "plain", "fork", read(store.GetAgentSessionRequest{Key: plain}, n, 1, ""),
			read(store.GetAgentSessionRequest{Key: fork}, n, 1, ""))
	})
	if _, err := as.Compact(ctx, store.CompactRequest{Key: plain, Range: store.CompactionRange{From: 1, To: n - 100},
		Summary: store.AgentEvent{ID: "summary", Data: benchEventData}}); err != nil {
		b.Fatal(err)
	}
	b.Run("SummaryTail/events=10000/summary=9900", func(b *testing.B) {
		// The last 100 of the 10,001 (the record included), against the
		// record and the 100 events after the range it covers.
		alternate(b, "last100", "summary", read(store.GetAgentSessionRequest{Key: plain, Recent: 100}, 100, n-98, ""),
			read(store.GetAgentSessionRequest{Key: plain, FromLatestSummary: true}, 101, 0, "summary"))
	})
}
