package sqlstore_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// commonTermSizes are the corpus sizes of BenchmarkSearchCommonTerm.
var commonTermSizes = flag.String("commonterm.sizes", "10000,50000",
	"BenchmarkSearchCommonTerm: comma-separated corpus sizes (documents)")

// BenchmarkSearchCommonTerm measures the first page (Limit 20) of a search
// on corpora of -commonterm.sizes documents of ~1 KiB (runner replies of
// words and numbers, sqlstore.BenchWords): agent events in 40 sessions,
// their times out of their document order, and one in every 50 a
// conversation message. Terms: "session" (in most documents), "xylophone"
// (one in every 1,000), and "session" filtered to one session of 40
// (filtered: the filter rejects most of the index's candidates) and to
// messages only (messages: the kind filter rejects 98%), each ranked and
// newest first. The split sub-benchmarks time the parts of the index's
// query on their own: the FTS5 match (count), the match with bm25(), with
// the join to search_docs, and with the body check. The corpora are built
// once and kept in os.TempDir (sessionstore-commonterm-N-v1.db):
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
			st, err := sqlstore.Open(ctx, path, sqlstore.WithBackgroundIndexer(false))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			queries := []struct {
				name string
				q    store.SearchQuery
			}{
				{"common", store.SearchQuery{Query: "session"}},
				{"rare", store.SearchQuery{Query: "xylophone"}},
				{"filtered", store.SearchQuery{Query: "session", Session: "s-07"}},
				{"messages", store.SearchQuery{Query: "session", Kinds: []store.SearchKind{store.SearchMessage}}},
			}
			for _, qc := range queries {
				for _, o := range []store.SearchOrder{store.SearchByRank, store.SearchByTime} {
					b.Run(qc.name+"/"+string(o), func(b *testing.B) {
						q := qc.q
						q.Limit, q.Order = 20, o
						hits := 0
						for b.Loop() {
							r, err := st.Search(ctx, q)
							if err != nil {
								b.Fatal(err)
							}
							hits = len(r.Hits)
						}
						if hits == 0 {
							b.Fatalf("no hit of %+v", q)
						}
					})
				}
			}
			raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			const match = `FROM search_fts JOIN search_docs AS d ON d.doc = search_fts.rowid WHERE search_fts MATCH '"ses" AND "ess" AND "ssi" AND "sio" AND "ion"'`
			for _, sc := range []struct{ name, query string }{
				{"match", `SELECT count(*), 0 FROM search_fts WHERE search_fts MATCH '"ses" AND "ess" AND "ssi" AND "sio" AND "ion"'`},
				{"match+bm25", `SELECT count(*), sum(s) FROM (SELECT bm25(search_fts) AS s FROM search_fts WHERE search_fts MATCH '"ses" AND "ess" AND "ssi" AND "sio" AND "ion"' LIMIT 1000000000)`},
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
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sessionstore-commonterm-%d-v1.db", n))
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
	if err := buildCommonTermCorpus(ctx, st, n); err != nil {
		b.Fatal(err)
	}
	// A search folds every queued item first.
	if _, err := st.Search(ctx, store.SearchQuery{Query: "xylophone"}); err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+tmp)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		b.Fatal(err)
	}
	db.Close()
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-writer.lock"} {
		os.Remove(tmp + suffix)
	}
	b.Logf("built in %v", time.Since(start).Round(time.Second))
	return path
}

// buildCommonTermCorpus writes n items of ~1 KiB to st: one in every 50
// a message of one of 10 conversations, the others events of 40 agent
// sessions (s-00 to s-39, users u0 to u3 of app "bench") at times a
// second apart but for a random shift of up to an hour either way (so
// that the newest items are not the last ones indexed); one item in every
// 1,000 holds "xylophone".
func buildCommonTermCorpus(ctx context.Context, st *sqlstore.Store, n int) error {
	rng := rand.New(rand.NewPCG(11, 12))
	as := st.AgentSessions()
	keys := make([]store.SessionKey, 40)
	for i := range keys {
		keys[i] = store.SessionKey{App: "bench", User: "u" + strconv.Itoa(i%4), Session: fmt.Sprintf("s-%02d", i)}
		if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: keys[i]}); err != nil {
			return err
		}
	}
	for c := range 10 {
		if _, err := st.Conversations().Save(ctx, store.NewConversation(fmt.Sprintf("conv-%02d", c))); err != nil {
			return err
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		text := sqlstore.BenchWords(rng)
		if i%1000 == 7 {
			text += " xylophone"
		}
		if i%50 == 3 {
			msg := store.Message{Role: store.RoleAssistant, Content: []store.ContentBlock{store.TextBlock(text)}}
			if _, err := st.Conversations().AppendMessages(ctx, fmt.Sprintf("conv-%02d", i%10), msg); err != nil {
				return err
			}
			continue
		}
		ts := t0.Add(time.Duration(i)*time.Second + time.Duration(rng.IntN(7200)-3600)*time.Second)
		data := fmt.Sprintf(`{"author":"assistant","content":{"role":"model","parts":[{"text":%s}]}}`, strconv.Quote(text))
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: keys[rng.IntN(len(keys))],
			Event: store.AgentEvent{ID: "e" + strconv.Itoa(i), Timestamp: ts, Data: []byte(data)}}); err != nil {
			return err
		}
	}
	return nil
}
