package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// Run with:
//
//	go test ./sqlstore -run '^$' -bench 'Conversation' -benchtime 2s -count 3
//
// The append benchmarks report ns/op at three history lengths; the cost must
// not grow with the history (compare history=10 with history=10000).

// convBenchMessages returns n realistic messages: alternating user text,
// assistant tool calls and tool results of a few hundred bytes.
func convBenchMessages(n int) []store.Message {
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

func convBenchStore(b *testing.B, opts ...Option) *Store {
	b.Helper()
	st, err := Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// convSeedHistory stores a conversation with n messages.
func convSeedHistory(b *testing.B, st *Store, id string, n int) {
	b.Helper()
	c := store.NewConversation(id)
	c.Messages = convBenchMessages(n)
	if _, err := st.Conversations().Save(context.Background(), c); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkConversationAppend appends one message (one durable transaction)
// to a conversation that already holds 10, 1,000 or 10,000 messages. The
// history is kept at its length: each appended message is removed again,
// outside the timed region.
func BenchmarkConversationAppend(b *testing.B) {
	for _, sync := range []Synchronous{SyncFull, SyncOff} {
		for _, n := range []int{10, 1_000, 10_000} {
			b.Run(fmt.Sprintf("sync=%s/history=%d", strings.ToLower(string(sync)), n), func(b *testing.B) {
				st := convBenchStore(b, WithSynchronous(sync))
				convSeedHistory(b, st, "bench", n)
				c := st.Conversations()
				ctx := context.Background()
				msg := convBenchMessages(2)[1]
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := c.AppendMessages(ctx, "bench", msg); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if _, err := c.PopMessage(ctx, "bench"); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

// BenchmarkConversationLoad loads a whole 1,000-message conversation
// (row, messages and cost records in one read transaction).
func BenchmarkConversationLoad(b *testing.B) {
	st := convBenchStore(b)
	convSeedHistory(b, st, "bench", 1_000)
	c := st.Conversations()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		conv, err := c.Load(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if len(conv.Messages) != 1_000 {
			b.Fatalf("%d messages", len(conv.Messages))
		}
	}
}

// BenchmarkConversationMessagesPage reads the last page of 100 messages of
// a 10,000-message history, by position and by backward cursor.
func BenchmarkConversationMessagesPage(b *testing.B) {
	st := convBenchStore(b)
	convSeedHistory(b, st, "bench", 10_000)
	c := st.Conversations()
	ctx := context.Background()
	b.Run("from=9900", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			page, err := c.Messages(ctx, "bench", 9_900, 100)
			if err != nil || len(page) != 100 {
				b.Fatalf("%d messages, %v", len(page), err)
			}
		}
	})
	b.Run("last=100", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			page, err := c.LastMessages(ctx, "bench", 100)
			if err != nil || len(page) != 100 || page[99].Seq != 9_999 {
				b.Fatalf("%d messages, %v", len(page), err)
			}
		}
	})
}

// BenchmarkConversationSaveWhole rewrites a whole conversation, as the
// file-based seed did for every change: the cost an append avoids.
func BenchmarkConversationSaveWhole(b *testing.B) {
	for _, n := range []int{10, 1_000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			st := convBenchStore(b)
			c := store.NewConversation("bench")
			c.Messages = convBenchMessages(n)
			ctx := context.Background()
			b.ReportAllocs()
			for range b.N {
				if _, err := st.Conversations().Save(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
