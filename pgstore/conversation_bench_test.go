package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// The conversation benchmarks of sqlstore, on PostgreSQL:
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench 'Conversation' -benchtime 2s
//
// The append cost must not grow with the history (compare history=10 with
// history=10000).

// convBenchMessages returns n realistic messages: alternating user text,
// assistant tool calls and tool results of a few hundred bytes (the same
// as sqlstore's).
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

func convBenchStore(b *testing.B, syncCommit string) *pgstore.Store {
	b.Helper()
	st, err := pgstore.Open(context.Background(), newSchema(b)+"&synchronous_commit="+syncCommit)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

func convSeedHistory(b *testing.B, st *pgstore.Store, id string, n int) {
	b.Helper()
	c := store.NewConversation(id)
	c.Messages = convBenchMessages(n)
	if _, err := st.Conversations().Save(context.Background(), c); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkConversationAppend appends one message (one durable transaction)
// to a conversation of 10, 1,000 or 10,000 messages, kept at its length (each
// appended message is removed again outside the timed region).
func BenchmarkConversationAppend(b *testing.B) {
	for _, sync := range []string{"on", "off"} {
		for _, n := range []int{10, 1_000, 10_000} {
			b.Run(fmt.Sprintf("sync=%s/history=%d", sync, n), func(b *testing.B) {
				st := convBenchStore(b, sync)
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

// BenchmarkConversationLoad loads a whole 1,000-message conversation in one
// snapshot.
func BenchmarkConversationLoad(b *testing.B) {
	st := convBenchStore(b, "on")
	convSeedHistory(b, st, "bench", 1_000)
	c := st.Conversations()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		conv, err := c.Load(ctx, "bench")
		if err != nil || len(conv.Messages) != 1_000 {
			b.Fatalf("%d messages, %v", len(conv.Messages), err)
		}
	}
}

// BenchmarkConversationMessagesPage reads the last page of 100 messages of a
// 10,000-message history.
func BenchmarkConversationMessagesPage(b *testing.B) {
	st := convBenchStore(b, "on")
	convSeedHistory(b, st, "bench", 10_000)
	c := st.Conversations()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		page, err := c.LastMessages(ctx, "bench", 100)
		if err != nil || len(page) != 100 || page[99].Seq != 9_999 {
			b.Fatalf("%d messages, %v", len(page), err)
		}
	}
}
