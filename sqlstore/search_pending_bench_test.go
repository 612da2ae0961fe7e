package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkReadOnlySearchPending measures what a read-only store's search
// pays for the items not yet folded, which it matches directly from their
// content: a store holds 10,000 folded messages of about 1 KiB, then 0,
// 64 or a fold batch (512) more that nobody folded; a read-only store
// searches one word (each is in about 0.7% of the messages), ranked and newest first (20
// hits):
//
//	go test ./sqlstore -run '^$' -bench ReadOnlySearchPending -benchtime 200x
func BenchmarkReadOnlySearchPending(b *testing.B) {
	ctx := context.Background()
	words := benchVocabulary()
	rng := rand.New(rand.NewPCG(3, 4))
	msg := func() store.Message {
		var sb strings.Builder
		for sb.Len() < 1024 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return store.UserMessage(sb.String())
	}
	for _, pending := range []int{0, 64, sqlcore.DefaultFoldBatch} {
		path := sqlstore.FreshDBPath(b, "ropending.db")
		st, err := sqlstore.Open(ctx, path, sqlstore.WithoutIndexer())
		if err != nil {
			b.Fatal(err)
		}
		add := func(conv string, n int) {
			if _, err := st.Conversations().Save(ctx, store.NewConversation(conv)); err != nil {
				b.Fatal(err)
			}
			for n > 0 {
				batch := make([]store.Message, min(n, 500))
				for i := range batch {
					batch[i] = msg()
				}
				if _, err := st.Conversations().AppendMessages(ctx, conv, batch...); err != nil {
					b.Fatal(err)
				}
				n -= len(batch)
			}
		}
		add("folded", 10000)
		if _, err := st.Search(ctx, store.SearchQuery{Query: words[0]}); err != nil { // folds
			b.Fatal(err)
		}
		if pending > 0 {
			add("pending", pending)
		}
		ro, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
		if err != nil {
			b.Fatal(err)
		}
		for _, order := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
			b.Run(fmt.Sprintf("pending=%d/%s", pending, order), func(b *testing.B) {
				qrng := rand.New(rand.NewPCG(5, 6))
				var lat []time.Duration
				for b.Loop() {
					t0 := time.Now()
					r, err := ro.Search(ctx, store.SearchQuery{Query: words[qrng.IntN(len(words))], Order: order})
					lat = append(lat, time.Since(t0))
					if err != nil || r.Pending != 0 {
						b.Fatalf("search: pending %d, %v", r.Pending, err)
					}
				}
				reportLatency(b, lat)
			})
		}
		ro.Close()
		st.Close()
	}
}
