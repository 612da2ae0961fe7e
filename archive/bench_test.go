package archive_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/store"
)

// benchStore writes n governed sessions with a spend limit and a settled
// reservation, each with a conversation of 20 messages of ~200 bytes,
// into a fresh SQLite store.
func benchStore(b *testing.B, n int) archive.Store {
	b.Helper()
	st := sqliteBackend.open(b)
	ctx := b.Context()
	text := string(bytes.Repeat([]byte("lorem ipsum "), 16))
	for i := range n {
		id := fmt.Sprintf("s-%05d", i)
		if _, err := st.Governance().Create(ctx, store.CreateRequest{ID: id, AgentID: fmt.Sprintf("agent-%d", i%10),
			AuthorizedTools: []string{"*"}, CallBudget: 100, TimeLimit: time.Hour,
			SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Limit: 1_000_000}}}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: id, RequestID: "r", Amount: store.SpendAmount{InputTokens: 100}}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: id, RequestID: "r", Actual: store.SpendAmount{InputTokens: 80}}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
			b.Fatal(err)
		}
		msgs := make([]store.Message, 20)
		for j := range msgs {
			msgs[j] = store.UserMessage(text)
		}
		if _, err := st.Conversations().AppendMessages(ctx, id, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	return st
}

// BenchmarkExport times a whole export (one snapshot, streamed) of 1,000
// governed sessions with their spend records and audit chains and 1,000
// conversations of 20 messages, through the public API.
//
//	go test ./archive -run '^$' -bench Export -benchtime 5x
func BenchmarkExport(b *testing.B) {
	st := benchStore(b, 1000)
	defer st.Close()
	var size int64
	for b.Loop() {
		w := &countWriter{}
		if _, err := archive.Export(b.Context(), st, w, archive.ExportOptions{}); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/doc")
}

// BenchmarkImport times the import of that document into an empty store
// (one transaction).
func BenchmarkImport(b *testing.B) {
	src := benchStore(b, 1000)
	var doc bytes.Buffer
	if _, err := archive.Export(b.Context(), src, &doc, archive.ExportOptions{}); err != nil {
		b.Fatal(err)
	}
	src.Close()
	for b.Loop() {
		b.StopTimer()
		dst := sqliteBackend.open(b)
		b.StartTimer()
		if _, err := archive.Import(b.Context(), dst, bytes.NewReader(doc.Bytes()), archive.ImportOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		dst.Close()
		b.StartTimer()
	}
}

// countWriter counts and discards.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
