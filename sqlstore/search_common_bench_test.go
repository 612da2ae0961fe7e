package sqlstore_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// commonTermSizes are the corpus sizes of BenchmarkSearchCommonTerm.
var commonTermSizes = flag.String("commonterm.sizes", "10000,50000",
	"BenchmarkSearchCommonTerm: comma-separated corpus sizes (documents)")

// BenchmarkSearchCommonTerm measures the first page (Limit 20) of a search
// on corpora of -commonterm.sizes documents of ~1 KiB
// (storetest.BuildCommonTermCorpus: agent events in 40 sessions, their
// times out of their document order, one in every 50 a conversation
// message), with the sub-benchmarks of storetest.BenchSearchCommonTerm
// (a common term, a rare one, the common one filtered to one session and
// to messages; ranked and newest first), on the store as it is (lazy) and
// on one that reads every candidate of the index first (eager: the search
// before it stopped early, a test-only option), in one run. The split
// sub-benchmarks time the parts of the index's query of the common term
// on their own: the FTS5 match (count), the match with bm25(), with the
// join to search_docs, and with the body check. The corpora are built once
// and kept in os.TempDir (sessionstore-commonterm-N-v2.db):
//
//	go test ./sqlstore -run '^$' -bench SearchCommonTerm -benchtime 20x -timeout 30m
func BenchmarkSearchCommonTerm(b *testing.B) {
	ctx := context.Background()
	for _, f := range strings.Split(*commonTermSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			b.Fatalf("-commonterm.sizes: %q (sizes of 1000 or more)", *commonTermSizes)
		}
		path := commonTermCorpus(b, n)
		b.Run("docs="+strconv.Itoa(n), func(b *testing.B) {
			for _, v := range []struct {
				name string
				opts []sqlstore.Option
			}{{"lazy", nil}, {"eager", []sqlstore.Option{sqlstore.WithEagerSearch()}}} {
				b.Run(v.name, func(b *testing.B) {
					st, err := sqlstore.Open(ctx, path, append(v.opts, sqlstore.WithBackgroundIndexer(false))...)
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					storetest.BenchSearchCommonTerm(b, st)
				})
			}
			raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			const terms = `'"ses" AND "ess" AND "ssi" AND "sio" AND "ion"'`
			const match = `FROM search_fts JOIN search_docs AS d ON d.doc = search_fts.rowid WHERE search_fts MATCH ` + terms
			// LIMIT keeps SQLite from flattening bm25() into the count.
			for _, sc := range []struct{ name, query string }{
				{"match", `SELECT count(*), 0 FROM search_fts WHERE search_fts MATCH ` + terms},
				{"match+bm25", `SELECT count(*), sum(s) FROM (SELECT bm25(search_fts) AS s FROM search_fts WHERE search_fts MATCH ` + terms + ` LIMIT 1000000000)`},
				{"match+join", `SELECT count(*), max(d.at_us) ` + match},
				{"match+join+contains", `SELECT count(*), max(d.at_us) ` + match + ` AND sessionstore_contains(d.body, 'session')`},
				{"match+join+contains+bm25", `SELECT count(*), sum(s) FROM (SELECT bm25(search_fts) AS s ` + match + ` AND sessionstore_contains(d.body, 'session') LIMIT 1000000000)`},
			} {
				b.Run("split/"+sc.name, func(b *testing.B) {
					for b.Loop() {
						var n int64
						if err := raw.QueryRow(sc.query).Scan(&n, new(any)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// commonTermCorpus returns the path of BenchmarkSearchCommonTerm's corpus
// of n documents, building and folding it when it is not in os.TempDir.
func commonTermCorpus(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sessionstore-commonterm-%d-v2.db", n))
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
	if err := storetest.BuildCommonTermCorpus(ctx, st, n); err != nil {
		b.Fatal(err)
	}
	// A search folds every queued item first.
	if _, err := st.Search(ctx, store.SearchQuery{Query: "xylophone"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	keepCorpus(b, tmp, path, start)
	return path
}
