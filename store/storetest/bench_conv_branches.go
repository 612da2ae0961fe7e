package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// BenchConversationBranches benchmarks fork, forked reads and the summary
// read of conversations of 10,000 messages of about 1 KiB:
//
//   - Save/baseline: save a new conversation without messages (what a
//     fork costs at least: one durable commit).
//   - Fork/at=end, Fork/at=middle: fork a 10,000-message conversation at
//     its last message and at message 5,000.
//   - ForkedRead: read all 10,000 messages (Load) of a plain conversation
//     and of a fork of the same length (5,000 inherited, 5,000 its own),
//     alternately in one loop; it reports their ratio (fork/plain).
//   - SummaryTail: read the latest summary and the 100 messages after the
//     range it covers (0..9,899), and the last 100 messages, alternately;
//     it reports their ratio (summary/last100).
func BenchConversationBranches(b *testing.B, h Harness, o BenchOptions) {
	e := benchEnv{h, o}
	const n = 10_000
	st := e.open(b)
	defer closeBench(b, st)
	ctx := context.Background()
	c := st.Conversations()
	body := strings.Repeat("benchmark message text ", 44) // ~1 KiB
	msgs := func(prefix string, from, to int) []store.Message {
		out := make([]store.Message, 0, to-from)
		for i := from; i < to; i++ {
			out = append(out, store.Message{Role: "user", Content: []store.ContentBlock{store.TextBlock(fmt.Sprintf("%s%d %s", prefix, i, body))}})
		}
		return out
	}
	seed := func(id string, from, to int) {
		for i := from; i < to; i += 1000 {
			if _, err := c.AppendMessages(ctx, id, msgs(id, i, min(i+1000, to))...); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, id := range []string{"plain", "parent"} {
		if _, err := c.Save(ctx, store.NewConversation(id)); err != nil {
			b.Fatal(err)
		}
		seed(id, 0, n)
	}
	b.Run("Save/baseline", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := c.Save(ctx, store.NewConversation(fmt.Sprintf("new-%d", i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, at := range []struct {
		name string
		at   int64
	}{{"end", n - 1}, {"middle", n/2 - 1}} {
		b.Run("Fork/at="+at.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				f, err := c.Fork(ctx, store.ConversationForkRequest{ID: "parent", At: at.at, NewID: fmt.Sprintf("%s-%d", at.name, i)})
				if err != nil {
					b.Fatal(err)
				}
				if f.MessageCount != at.at+1 {
					b.Fatalf("fork %+v", f)
				}
			}
		})
	}
	if o.WritesOnly {
		return
	}
	if _, err := c.Fork(ctx, store.ConversationForkRequest{ID: "parent", At: n/2 - 1, NewID: "fork"}); err != nil {
		b.Fatal(err)
	}
	seed("fork", n/2, n)
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
	load := func(id string) func() error {
		return func() error {
			conv, err := c.Load(ctx, id)
			if err != nil {
				return err
			}
			if len(conv.Messages) != n || conv.Messages[n-1].Seq != n-1 {
				return fmt.Errorf("%s: read %d messages", id, len(conv.Messages))
			}
			return nil
		}
	}
	b.Run("ForkedRead/messages=10000", func(b *testing.B) {
		alternate(b, "plain", "fork", load("plain"), load("fork"))
	})
	if _, err := c.Compact(ctx, store.ConversationCompactRequest{ID: "plain", Range: store.CompactionRange{From: 0, To: n - 101},
		Summary: store.Message{Role: "assistant", Content: []store.ContentBlock{store.TextBlock("summary " + body)}}}); err != nil {
		b.Fatal(err)
	}
	b.Run("SummaryTail/messages=10000/summary=9900", func(b *testing.B) {
		last := func() error {
			m, err := c.LastMessages(ctx, "plain", 100)
			if err != nil || len(m) != 100 {
				return fmt.Errorf("last 100: %d, %v", len(m), err)
			}
			return nil
		}
		tail := func() error {
			s, err := c.SummaryTail(ctx, "plain", 100)
			if err != nil || s.Summary == nil || len(s.Messages) != 100 || s.Messages[0].Seq != n-100 {
				return fmt.Errorf("summary tail: %v", err)
			}
			return nil
		}
		alternate(b, "last100", "summary", last, tail)
	})
}
