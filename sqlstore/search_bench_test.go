package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkSearch measures the search index on a corpus of
// SESSIONSTORE_SEARCH_BENCH_N messages (default 1,000,000) in 1,000-message
// conversations, plus a user with 1,000 agent sessions of 10 events each
// and 100 other users. The corpus is built once and kept in os.TempDir
// (sessionstore-searchbench-N-v2.db), so later runs start at once:
//
//	go test ./sqlstore -run '^$' -bench Search -benchtime 400x -timeout 60m
//
// Query reports p50 and p99 latency of one-term and two-term queries
// (ranked and newest first, 20 hits with snippets); History the latency of
// a user's last 100 events across 1,000 sessions; IndexSize the index's
// share of the database file; Append the cost of an append with the index
// against one with the index turned off (WithSearchIndex(false)),
// alternating in one process, at synchronous=FULL and OFF.
func BenchmarkSearch(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SESSIONSTORE_SEARCH_BENCH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1000 {
			b.Fatalf("SESSIONSTORE_SEARCH_BENCH_N=%q: want a number of at least 1000", s)
		}
		n = v
	}
	ctx := context.Background()
	path := searchCorpus(b, n)
	st, err := sqlstore.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	words := benchVocabulary()

	// Words of middle frequency (ranks 100 to 5000: each in about 2% to
	// 0.05% of the messages), one or two per query, ranked or newest first.
	for _, qc := range []struct {
		name  string
		terms int
		order store.SearchOrder
	}{{"Query/1term/rank", 1, store.SearchByRank}, {"Query/2terms/rank", 2, store.SearchByRank},
		{"Query/1term/time", 1, store.SearchByTime}, {"Query/2terms/time", 2, store.SearchByTime}} {
		b.Run(qc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(7, uint64(qc.terms)))
			var lat []time.Duration
			hits := 0
			for b.Loop() {
				q := store.SearchQuery{Query: words[100+rng.IntN(4900)], Limit: 20, Order: qc.order}
				if qc.terms == 2 {
					q.Query += " " + words[100+rng.IntN(4900)]
				}
				t0 := time.Now()
				r, err := st.Search(ctx, q)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(r.Hits)
			}
			reportLatency(b, lat)
			b.ReportMetric(float64(hits)/float64(len(lat)), "hits/query")
		})
	}
	b.Run("History", func(b *testing.B) {
		var lat []time.Duration
		for b.Loop() {
			t0 := time.Now()
			p, err := st.History(ctx, store.HistoryRequest{App: "bench", User: "bench-user", Limit: 100})
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Items) != 100 {
				b.Fatalf("%d events", len(p.Items))
			}
		}
		reportLatency(b, lat)
	})
	b.Run("IndexSize", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		// One pass over every page of the file, whatever b.N.
		var index, total int64
		if err := db.QueryRow(`SELECT coalesce(sum(CASE WHEN name LIKE 'search\_%' ESCAPE '\' THEN pgsize END), 0), sum(pgsize) FROM dbstat`).Scan(&index, &total); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
		}
		b.ReportMetric(float64(index)/float64(total)*100, "index-%")
		b.ReportMetric(float64(total)/(1<<20), "db-MiB")
	})
	for _, sync := range []sqlstore.Synchronous{sqlstore.SyncFull, sqlstore.SyncOff} {
		b.Run("Append/sync="+string(sync), func(b *testing.B) { benchAppendIndexed(b, sync) })
	}
}

// reportLatency reports the 50th and 99th percentile of lat in ms.
func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// benchAppendIndexed appends one message of about 150 characters to a
// store with the search index (folded in after the commit) and to one
// with the index turned off (WithSearchIndex(false)), in turn, and
// reports both and their ratio.
func benchAppendIndexed(b *testing.B, sync sqlstore.Synchronous) {
	ctx := context.Background()
	open := func(name string, index bool) store.Store {
		path := filepath.Join(b.TempDir(), name+".db")
		st, err := sqlstore.Open(ctx, path, sqlstore.WithSynchronous(sync), sqlstore.WithSearchIndex(index))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := st.Conversations().Save(ctx, store.NewConversation("c")); err != nil {
			b.Fatal(err)
		}
		return st
	}
	with, without := open("with", true), open("without", false)
	defer with.Close()
	defer without.Close()
	words := benchVocabulary()
	rng := rand.New(rand.NewPCG(1, 2))
	var tWith, tWithout time.Duration
	i := 0
	for b.Loop() {
		msg := store.UserMessage(benchSentence(rng, words, 25))
		stores := []store.Store{with, without}
		if i%2 == 1 {
			stores = []store.Store{without, with}
		}
		for _, st := range stores {
			t0 := time.Now()
			if _, err := st.Conversations().AppendMessages(ctx, "c", msg); err != nil {
				b.Fatal(err)
			}
			if st == with {
				tWith += time.Since(t0)
			} else {
				tWithout += time.Since(t0)
			}
		}
		i++
	}
	b.ReportMetric(float64(tWith.Microseconds())/float64(i), "with-µs/append")
	b.ReportMetric(float64(tWithout.Microseconds())/float64(i), "without-µs/append")
	b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
}

// BenchmarkSearchIndexAppend appends runner events (a 1 KiB text part and
// a session state delta) to three stores in turn, one append each per
// iteration, and reports per store the mean append time and the file's
// bytes per event (database and log, after Close):
//
//   - intx: the index written in the append's transaction, as before
//     migration 27 (its event triggers put back, the queue trigger gone);
//   - deferred: the default, the key queued and folded in by the
//     background indexer; it also reports the lag from an append's
//     acknowledgement to the end of the fold that indexed it (p50, p99);
//   - off: WithSearchIndex(false).
//
// Run on a quiet machine, one command (NORMAL and FULL):
//
//	go test ./sqlstore -run '^$' -bench SearchIndexAppend -benchtime 2000x
func BenchmarkSearchIndexAppend(b *testing.B) {
	for _, level := range []sqlstore.Synchronous{sqlstore.SyncNormal, sqlstore.SyncFull} {
		b.Run("sync="+string(level), func(b *testing.B) { benchSearchIndexAppend(b, level) })
	}
}

func benchSearchIndexAppend(b *testing.B, level sqlstore.Synchronous) {
	ctx := context.Background()
	key := store.SessionKey{App: "a", User: "u", Session: "s"}
	type folded struct {
		at    time.Time
		total int64
	}
	var mu sync.Mutex
	var folds []folded
	var total int64
	hook := func(n int64) {
		mu.Lock()
		total += n
		folds = append(folds, folded{time.Now(), total})
		mu.Unlock()
	}
	type mode struct {
		name string
		path string
		st   *sqlstore.Store
		dur  time.Duration
	}
	modes := []*mode{{name: "intx"}, {name: "deferred"}, {name: "off"}}
	for _, m := range modes {
		m.path = filepath.Join(b.TempDir(), m.name+".db")
		opts := []sqlstore.Option{sqlstore.WithSynchronous(level)}
		switch m.name {
		case "intx":
			st, err := sqlstore.Open(ctx, m.path)
			if err != nil {
				b.Fatal(err)
			}
			st.Close()
			restoreEventTriggers(b, m.path)
			opts = append(opts, sqlstore.WithoutIndexer())
		case "deferred":
			opts = append(opts, sqlstore.WithIndexerHook(0, hook))
		case "off":
			opts = append(opts, sqlstore.WithSearchIndex(false))
		}
		st, err := sqlstore.Open(ctx, m.path, opts...)
		if err != nil {
			b.Fatal(err)
		}
		m.st = st
		if _, err := st.AgentSessions().CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
			b.Fatal(err)
		}
	}
	words := benchVocabulary()
	rng := rand.New(rand.NewPCG(3, 4))
	var acks []time.Time
	i := 0
	for b.Loop() {
		text := benchSentence(rng, words, 150)
		if len(text) > 1024 {
			text = text[:1024]
		}
		data, _ := json.Marshal(map[string]any{"author": "model", "invocationId": fmt.Sprintf("inv-%d", i),
			"content": map[string]any{"role": "model", "parts": []any{map[string]string{"text": text}}}})
		req := store.AppendEventRequest{Key: key, Event: store.AgentEvent{Data: data},
			Delta: store.ScopedState{Session: map[string]json.RawMessage{"turn": json.RawMessage(strconv.Itoa(i))}}}
		for j := range modes {
			m := modes[(i+j)%len(modes)]
			t0 := time.Now()
			if _, err := m.st.AgentSessions().AppendEvent(ctx, req); err != nil {
				b.Fatal(err)
			}
			m.dur += time.Since(t0)
			if m.name == "deferred" {
				acks = append(acks, time.Now())
			}
		}
		i++
	}
	// The lag: the k-th append of the deferred store queued the k-th key
	// (one writer), indexed by the first fold whose running total
	// reaches k.
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		done := total >= int64(len(acks))
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the indexer folded %d of %d appends in a minute", total, len(acks))
		}
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	lag := make([]time.Duration, len(acks))
	f := 0
	for k, at := range acks {
		for folds[f].total < int64(k+1) {
			f++
		}
		lag[k] = folds[f].at.Sub(at)
	}
	mu.Unlock()
	for _, m := range modes {
		m.st.Close()
		var size int64
		for _, p := range []string{m.path, m.path + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				size += fi.Size()
			}
		}
		b.ReportMetric(float64(m.dur.Microseconds())/float64(i), m.name+"-µs/append")
		b.ReportMetric(float64(size)/float64(i), m.name+"-B/event")
	}
	slices.Sort(lag)
	pct := func(p float64) float64 {
		return float64(lag[min(len(lag)-1, int(p*float64(len(lag))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "lag-p50-ms")
	b.ReportMetric(pct(0.99), "lag-p99-ms")
}

// restoreEventTriggers puts the agent-event index triggers of migrations
// 14 and 16 back on the file at path and drops the event queue triggers
// of migrations 27 and 31 (31 dropped the insert one): events are indexed in their append's transaction, as
// before (the intx baseline of BenchmarkSearchIndexAppend).
func restoreEventTriggers(b *testing.B, path string) {
	grab := func(file, name string) string {
		src, err := os.ReadFile(filepath.Join("..", "migrations", file))
		if err != nil {
			b.Fatal(err)
		}
		s := string(src)
		i := strings.Index(s, "CREATE TRIGGER "+name+" ")
		if i < 0 {
			b.Fatalf("%s: no trigger %s", file, name)
		}
		return s[i : i+strings.Index(s[i:], "END;")+4]
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"DROP TRIGGER IF EXISTS search_queue_events_ai", "DROP TRIGGER IF EXISTS search_queue_events_ad", "DROP TRIGGER IF EXISTS search_queue_events_au",
		grab("00016_encryption.sql", "search_events_ai"), grab("00014_search_index.sql", "search_events_ad"),
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
}

// benchVocabulary returns 20,000 made-up words of 4 to 9 random letters,
// most frequent first (see benchSentence).
func benchVocabulary() []string {
	rng := rand.New(rand.NewPCG(42, 42))
	seen := map[string]bool{}
	var out []string
	for len(out) < 20000 {
		w := make([]byte, 4+rng.IntN(6))
		for i := range w {
			w[i] = byte('a' + rng.IntN(26))
		}
		if s := string(w); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// benchSentence returns n words drawn with a Zipf-like distribution: the
// rank is n^u - 1 for a uniform u, which favours the first words.
func benchSentence(rng *rand.Rand, words []string, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		r := min(int(math.Pow(float64(len(words)), rng.Float64()))-1, len(words)-1)
		b.WriteString(words[max(r, 0)])
	}
	return b.String()
}

// searchCorpus returns the path of the benchmark corpus of n messages,
// building it when it is not in os.TempDir yet.
func searchCorpus(b *testing.B, n int) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sessionstore-searchbench-%d-v2.db", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	b.Logf("building the search corpus of %d messages in %s (once)", n, path)
	start := time.Now()
	tmp := path + ".building"
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, tmp, sqlstore.WithSynchronous(sqlstore.SyncOff))
	if err != nil {
		b.Fatal(err)
	}
	words := benchVocabulary()
	cjk := []string{"東京都に住んでいます", "注文の状況を確認してください", "返金は三日以内に処理されます", "天気予报说明天下雨"}
	rng := rand.New(rand.NewPCG(3, 4))
	const perConv, batch = 1000, 500
	for c := 0; c*perConv < n; c++ {
		id := fmt.Sprintf("conv-%06d", c)
		if _, err := st.Conversations().Save(ctx, store.NewConversation(id)); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < perConv && c*perConv+done < n; done += batch {
			msgs := make([]store.Message, 0, batch)
			for j := 0; j < batch && done+j < perConv && c*perConv+done+j < n; j++ {
				s := benchSentence(rng, words, 8+rng.IntN(30))
				if rng.IntN(20) == 0 {
					s += " " + cjk[rng.IntN(len(cjk))]
				}
				role := store.RoleUser
				if j%2 == 1 {
					role = store.RoleAssistant
				}
				msgs = append(msgs, store.Message{Role: role, Content: []store.ContentBlock{store.TextBlock(s)}})
			}
			if _, err := st.Conversations().AppendMessages(ctx, id, msgs...); err != nil {
				b.Fatal(err)
			}
		}
	}
	as := st.AgentSessions()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addUser := func(user string, sessions, events int) {
		for s := range sessions {
			key := store.SessionKey{App: "bench", User: user, Session: fmt.Sprintf("s-%04d", s)}
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
			for range events {
				data := fmt.Sprintf(`{"author":"user","content":{"role":"user","parts":[{"text":%q}]}}`, benchSentence(rng, words, 12))
				ts := t0.Add(time.Duration(rng.IntN(90*24*3600)) * time.Second)
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: store.AgentEvent{Timestamp: ts, Data: []byte(data)}}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	addUser("bench-user", 1000, 10)
	for u := range 100 {
		addUser(fmt.Sprintf("other-%03d", u), 10, 10)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	keepCorpus(b, tmp, path, start)
	return path
}

// keepCorpus moves a benchmark corpus built at tmp (its store closed)
// into place at path: its log written into the file, the file renamed,
// its side files removed; start is when its building began.
func keepCorpus(b *testing.B, tmp, path string, start time.Time) {
	b.Helper()
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
}
