package pgstore_test

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// commonTermSizes are the corpus sizes of BenchmarkSearchCommonTerm.
var commonTermSizes = flag.String("commonterm.sizes", "10000",
	"BenchmarkSearchCommonTerm: comma-separated corpus sizes (documents)")

// BenchmarkSearchCommonTerm is sqlstore's on PostgreSQL: the first page
// of searches of a common term, a rare one and the common one filtered
// (storetest.BenchSearchCommonTerm), ranked and newest first, on a corpus
// of -commonterm.sizes documents of ~1 KiB (storetest.BuildCommonTermCorpus,
// built in a fresh schema for each size: about a minute per 10,000), on
// the store as it is (lazy) and on one that reads every candidate of the
// index first (eager, a test-only option):
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench SearchCommonTerm -benchtime 20x -timeout 30m
func BenchmarkSearchCommonTerm(b *testing.B) {
	ctx := context.Background()
	for _, f := range strings.Split(*commonTermSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			b.Fatalf("-commonterm.sizes: %q (sizes of 1000 or more)", *commonTermSizes)
		}
		b.Run("docs="+strconv.Itoa(n), func(b *testing.B) {
			loc := newSchema(b)
			st, err := pgstore.Open(ctx, loc, pgstore.WithBackgroundIndexer(false))
			if err != nil {
				b.Fatal(err)
			}
			if err := storetest.BuildCommonTermCorpus(ctx, st, n); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := st.Search(ctx, store.SearchQuery{Query: "xylophone"}); err != nil { // folds
				b.Fatal(err)
			}
			b.Logf("the fold of %d documents took %v", n, time.Since(start).Round(time.Millisecond))
			st.Close()
			// The statistics autovacuum would gather on a table this size.
			conn, err := pgx.Connect(ctx, loc)
			if err != nil {
				b.Fatal(err)
			}
			_, err = conn.Exec(ctx, "ANALYZE search_docs")
			conn.Close(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range []struct {
				name string
				opts []pgstore.Option
			}{{"lazy", nil}, {"eager", []pgstore.Option{pgstore.WithEagerSearch()}}} {
				b.Run(v.name, func(b *testing.B) {
					st, err := pgstore.Open(ctx, loc, append(v.opts, pgstore.WithBackgroundIndexer(false))...)
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					storetest.BenchSearchCommonTerm(b, st)
				})
			}
		})
	}
}
