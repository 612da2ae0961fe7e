package sqlstore_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// oldTermDocs is the corpus size of BenchmarkSearchOldTerm.
var oldTermDocs = flag.Int("oldterm.docs", 20000, "BenchmarkSearchOldTerm: corpus size (documents)")

// BenchmarkSearchOldTerm measures the first page (Limit 20) of a search
// newest first of a term in several percent of the documents, all of
// them among the oldest (quokka: one in every 4 of the first 30%, 1,500
// of 20,000 documents, more than largeSearchMin): the case in which
// walking the documents by time meets every newer entry before the first
// hit, and in which the candidates' path checks batches of old ones. Each
// way of the search is a sub-benchmark: the store's choice (choice),
// always the walk by time (walk), the candidates read, sorted and
// checked a batch at a time (candidates), with the ranked search beside
// them. The corpus (conversation messages of ~300 bytes, appended 500
// at a time) is built once and kept in os.TempDir
// (sessionstore-oldterm-N-v2.db):
//
//	go test ./sqlstore -run '^$' -bench SearchOldTerm -benchtime 20x
func BenchmarkSearchOldTerm(b *testing.B) {
	ctx := context.Background()
	path := oldTermCorpus(b, *oldTermDocs)
	for _, v := range []struct {
		name string
		mode int
	}{{"choice", 0}, {"walk", 1}, {"candidates", -1}} {
		b.Run(v.name, func(b *testing.B) {
			st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false), sqlstore.WithSearchTimeWalk(v.mode))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			orders := []store.SearchOrder{store.SearchByTime}
			if v.mode == 0 {
				orders = append(orders, store.SearchByRank)
			}
			for _, o := range orders {
				b.Run(string(o), func(b *testing.B) {
					q := store.SearchQuery{Query: "quokka", Order: o, Limit: 20}
					hits := 0
					for b.Loop() {
						r, err := st.Search(ctx, q)
						if err != nil {
							b.Fatal(err)
						}
						hits = len(r.Hits)
					}
					if hits != 20 {
						b.Fatalf("%d hits, want 20", hits)
					}
				})
			}
		})
	}
}

// oldTermCorpus returns the path of BenchmarkSearchOldTerm's corpus of n
// documents, building and folding it when it is not in os.TempDir.
func oldTermCorpus(b *testing.B, n int) string {
	b.Helper()
	if n < 1000 {
		b.Fatalf("-oldterm.docs %d: 1000 or more", n)
	}
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sessionstore-oldterm-%d-v2.db", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	b.Logf("building the corpus of %d documents in %s (once)", n, path)
	start := time.Now()
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm", "-writer.lock"} {
		os.Remove(tmp + suffix)
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, tmp, sqlstore.WithSynchronous(sqlstore.SyncOff), sqlstore.WithBackgroundIndexer(false))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	words := strings.Fields(`the a model reply about task at hand we looked into broker queue partition consumer
		lag offset retry budget session agent tool call search index write fold commit page cache`)
	const batch = 500
	for c := 0; c*batch < n; c++ {
		id := fmt.Sprintf("conv-%03d", c)
		if _, err := st.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
			b.Fatal(err)
		}
		var msgs []store.Message
		for i := c * batch; i < min(n, (c+1)*batch); i++ {
			var sb strings.Builder
			for sb.Len() < 300 {
				sb.WriteString(words[rng.IntN(len(words))] + " ")
			}
			if i < n*3/10 && i%4 == 0 {
				sb.WriteString("quokka")
			}
			msgs = append(msgs, store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{store.TextBlock(sb.String())}})
		}
		if _, err := st.Conversations().AppendMessages(ctx, id, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := st.Search(ctx, store.SearchQuery{Query: "xylophone"}); err != nil { // folds
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	keepCorpus(b, tmp, path, start)
	return path
}
