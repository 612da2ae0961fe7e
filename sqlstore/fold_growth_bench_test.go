package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// foldGrowthSizes are the index sizes (documents already indexed) at
// which BenchmarkFoldGrowth measures a fold.
var foldGrowthSizes = flag.String("foldgrowth.sizes", "1000,10000,50000",
	"BenchmarkFoldGrowth: comma-separated index sizes (documents already indexed) to measure at")

// foldGrowthVariants selects BenchmarkFoldGrowth's variants by name
// (comma-separated; empty runs them all).
var foldGrowthVariants = flag.String("foldgrowth.variants", "",
	"BenchmarkFoldGrowth: comma-separated variant names to run (empty: all)")

// BenchmarkFoldGrowth measures what the background indexer's fold costs
// per document as the search index grows, and what a search costs on the
// index it leaves, under FTS5's merge settings, so that a setting is
// judged on both sides. For each variant a store (synchronous=NORMAL, no
// background indexer, no checkpointer) gets the variant's settings in its
// FTS5 table's %_config, then for each size S of -foldgrowth.sizes:
//
//   - grows the index to S documents: agent events appended by 8
//     concurrent writers on sessions of their own (group commit; not
//     measured), and folded by the store's indexer (sqlcore.StartIndexer,
//     the real fold path) with the variant's settings, 2,000 at a time, so
//     that the index has the segments that setting leaves; the folds'
//     CPU and pages (idle merges included) over the whole growth since the
//     previous size are grow-cpu-µs/doc and grow-pages/doc: the cost
//     amortized over every merge the growth needed, which the next figures
//     (one window of b.N documents) can catch or miss;
//   - appends b.N more events (not measured), empties the write-ahead log,
//     and folds them with the indexer: fold-cpu-µs/doc is this process's
//     user and system time over the fold (one goroutine; far less
//     sensitive to the machine's load than the wall clock), fold-pages/doc
//     the pages the fold put in the log (WAL frames: every page every
//     fold transaction wrote, merged segments included; does not depend
//     on the load);
//   - for the deferred variants, runs the merge work their indexer would
//     do when idle ('merge' commands of 64 pages, one transaction each,
//     until one does nothing) and reports it apart (merge-cpu-µs/doc,
//     merge-pages/doc) and summed with the fold's (total-cpu-µs/doc,
//     total-pages/doc);
//   - reports the index's segments and pages after that, and the median
//     latency of Search (default limit, ranked) over 9 runs of a rare
//     term (rare-µs: "xylophone", in one document of every 1,000) and a
//     common one (common-µs: "session", in most documents), in runs of
//     100 documents or more.
//
// The documents are ~1 KiB model answers of words and numbers drawn at
// random (variedEventJSON: about a thousand distinct trigrams each). The
// variants: FTS5's defaults (automerge=4, crisismerge=16: the schema's
// before migration 35), automerge=8 (with crisismerge 16: the schema's
// since migration 35; and with 32), automerge=16 (with crisismerge 16,
// where a level's sixteenth segment merges the whole level in one
// transaction, and with 64), the indexer's batch of 256 instead of 64
// (the schema's settings), and two deferred ones: automerge=0 with the
// idle merges (the merging moved out of the fold), and automerge=0 alone
// (only FTS5's crisis merges, at 16 segments of a level, bound the
// segments). fold-max-txn-pages and grow-max-txn-pages are the largest
// transaction's pages: how long one fold can hold the writer.
//
// One command (the sizes and variants can be narrowed with the flags):
//
//	go test ./sqlstore -run '^$' -bench FoldGrowth -benchtime 2000x -timeout 60m
func BenchmarkFoldGrowth(b *testing.B) {
	type variant struct {
		name     string
		settings map[string]int // FTS5 configuration options
		batch    int            // the indexer's batch; DefaultIndexerBatch when 0
		idle     bool           // run the idle merges after each fold
	}
	variants := []variant{
		{name: "automerge=4", settings: map[string]int{"automerge": 4, "crisismerge": 16}},
		{name: "automerge=8", settings: map[string]int{"automerge": 8, "crisismerge": 16}},
		{name: "automerge=8+crisismerge=32", settings: map[string]int{"automerge": 8, "crisismerge": 32}},
		{name: "automerge=16", settings: map[string]int{"automerge": 16, "crisismerge": 16}},
		{name: "automerge=16+crisismerge=64", settings: map[string]int{"automerge": 16, "crisismerge": 64}},
		{name: "batch=256", batch: 256},
		{name: "deferred+idle-merge", settings: map[string]int{"automerge": 0, "crisismerge": 16}, idle: true},
		{name: "deferred-crisis-only", settings: map[string]int{"automerge": 0, "crisismerge": 16}},
	}
	var sizes []int
	for _, f := range strings.Split(*foldGrowthSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			b.Fatalf("-foldgrowth.sizes: %q", *foldGrowthSizes)
		}
		sizes = append(sizes, n)
	}
	var only []string
	if *foldGrowthVariants != "" {
		only = strings.Split(*foldGrowthVariants, ",")
	}
	for _, v := range variants {
		if only != nil && !slices.Contains(only, v.name) {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			path := filepath.Join(b.TempDir(), "g.db")
			st, err := Open(ctx, path, WithSynchronous(SyncNormal), WithBackgroundIndexer(false), WithoutCheckpointer())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			raw, err := sql.Open("sqlite", path)
			if err != nil {
				b.Fatal(err)
			}
			defer raw.Close()
			raw.SetMaxOpenConns(1)
			for k, n := range v.settings {
				if err := st.write(ctx, func(tx *wtx) error {
					_, err := tx.exec(`INSERT INTO search_fts (search_fts, rank) VALUES (?, ?)`, k, n)
					return err
				}); err != nil {
					b.Fatal(err)
				}
			}
			g := &foldGrowth{st: st, path: path, raw: raw, batch: v.batch, idle: v.idle,
				rng: rand.New(rand.NewPCG(7, 8))}
			for _, size := range sizes {
				// Grow the index to size documents, in steps that keep
				// the log small (once: the sub-benchmark's body runs
				// more than once).
				var growCPU time.Duration
				growPages, growMax, grown := 0, 0, 0
				for g.docs < size {
					n := min(2000, size-g.docs)
					g.append(b, n)
					g.truncateLog(b)
					cpu0 := benchCPU()
					g.fold(b, n)
					growCPU += benchCPU() - cpu0
					f, m := g.frames(b)
					growPages += f
					growMax = max(growMax, m)
					grown += n
					g.truncateLog(b)
				}
				b.Run("indexed="+strconv.Itoa(size), func(b *testing.B) {
					indexed := g.docs
					g.append(b, b.N)
					g.truncateLog(b)
					b.ResetTimer()
					cpu0 := benchCPU()
					g.foldOnly(b, b.N)
					foldCPU := benchCPU() - cpu0
					foldPages, foldMax := g.frames(b)
					var mergeCPU time.Duration
					var mergePages int
					if g.idle {
						g.truncateLog(b)
						cpu0 = benchCPU()
						g.idleMerge(b)
						mergeCPU = benchCPU() - cpu0
						mergePages, _ = g.frames(b)
					}
					b.StopTimer()
					g.truncateLog(b)
					n := float64(b.N)
					b.ReportMetric(float64(indexed), "indexed-docs")
					if grown > 0 {
						b.ReportMetric(float64(growCPU.Microseconds())/float64(grown), "grow-cpu-µs/doc")
						b.ReportMetric(float64(growPages)/float64(grown), "grow-pages/doc")
						b.ReportMetric(float64(growMax), "grow-max-txn-pages")
					}
					b.ReportMetric(float64(foldCPU.Microseconds())/n, "fold-cpu-µs/doc")
					b.ReportMetric(float64(foldPages)/n, "fold-pages/doc")
					b.ReportMetric(float64(foldMax), "fold-max-txn-pages")
					if g.idle {
						b.ReportMetric(float64(mergeCPU.Microseconds())/n, "merge-cpu-µs/doc")
						b.ReportMetric(float64(mergePages)/n, "merge-pages/doc")
						b.ReportMetric(float64((foldCPU+mergeCPU).Microseconds())/n, "total-cpu-µs/doc")
						b.ReportMetric(float64(foldPages+mergePages)/n, "total-pages/doc")
					}
					segs, pages := g.structure(b)
					b.ReportMetric(float64(segs), "segments")
					b.ReportMetric(float64(pages), "index-pages")
					if b.N >= 100 { // not in the benchmark's first run, of one document
						b.ReportMetric(g.searchMedian(b, "xylophone"), "rare-µs")
						b.ReportMetric(g.searchMedian(b, "session"), "common-µs")
					}
				})
			}
		})
	}
}

// foldGrowth is the state of one variant of BenchmarkFoldGrowth.
type foldGrowth struct {
	st    *Store
	path  string
	raw   *sql.DB
	batch int
	idle  bool
	rng   *rand.Rand
	docs  int // events appended so far (and folded, between steps)
	mu    sync.Mutex
}

// foldGrowthWriters is the number of concurrent writers of append.
const foldGrowthWriters = 8

// append appends n events, one in every 1,000 holding "xylophone", by
// foldGrowthWriters concurrent writers on sessions of their own.
func (g *foldGrowth) append(b *testing.B, n int) {
	b.Helper()
	ctx := context.Background()
	as := g.st.AgentSessions()
	var next atomic.Int64
	next.Store(int64(g.docs))
	end := int64(g.docs + n)
	var wg sync.WaitGroup
	errs := make(chan error, foldGrowthWriters)
	for w := range foldGrowthWriters {
		key := store.SessionKey{App: "a", User: "u", Session: "s" + strconv.Itoa(w)}
		if _, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key}); err != nil {
			if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key}); err != nil {
				b.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= end {
					return
				}
				g.mu.Lock()
				data := variedEventJSON(g.rng, int(i))
				g.mu.Unlock()
				if i%1000 == 7 {
					data = []byte(strings.Replace(string(data), `"}],"role"`, ` xylophone"}],"role"`, 1))
				}
				if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key,
					Event: store.AgentEvent{ID: "e" + strconv.FormatInt(i, 10), Data: data}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	g.docs += n
}

// fold folds n appended events with the store's indexer, then runs the
// idle merges when the variant has them.
func (g *foldGrowth) fold(b *testing.B, n int) {
	b.Helper()
	g.foldOnly(b, n)
	if g.idle {
		g.idleMerge(b)
	}
}

// foldOnly starts the store's indexer and stops it once it has folded n
// queue rows.
func (g *foldGrowth) foldOnly(b *testing.B, n int) {
	b.Helper()
	var folded atomic.Int64
	done := make(chan struct{}, 1)
	ix := g.st.core.StartIndexer(sqlcore.IndexerConfig{Batch: g.batch, OnFold: func(k int64) {
		if folded.Add(k) >= int64(n) {
			select {
			case done <- struct{}{}:
			default:
			}
		}
	}})
	defer ix.Stop()
	select {
	case <-done:
	case <-time.After(30 * time.Minute):
		b.Fatalf("folded %d of %d events", folded.Load(), n)
	}
}

// idleMerge runs the merges an indexer that keeps automerge off in its
// folds would run when idle: 'merge' commands of 64 pages, each in a
// transaction of its own, until one does nothing (FTS5 then finds no
// level with usermerge = 4 segments or more).
func (g *foldGrowth) idleMerge(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	for {
		var before, after int64
		if err := g.st.write(ctx, func(tx *wtx) error {
			if err := tx.get(&before, "SELECT total_changes()"); err != nil {
				return err
			}
			if _, err := tx.exec(`INSERT INTO search_fts (search_fts, rank) VALUES ('merge', 64)`); err != nil {
				return err
			}
			return tx.get(&after, "SELECT total_changes()")
		}); err != nil {
			b.Fatal(err)
		}
		if after-before < 2 {
			return
		}
	}
}

// truncateLog copies the log into the file and empties it.
func (g *foldGrowth) truncateLog(b *testing.B) {
	b.Helper()
	var busy, log, done int
	if err := g.raw.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done); err != nil {
		b.Fatal(err)
	}
	if busy != 0 {
		b.Fatal("the log could not be emptied")
	}
}

// frames counts the frames (pages written) of the log's current
// generation, and the most of them one transaction wrote.
func (g *foldGrowth) frames(b *testing.B) (frames, maxTxn int) {
	b.Helper()
	buf, err := os.ReadFile(g.path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	if len(buf) < 32 {
		return 0, 0
	}
	pageSize := int(binary.BigEndian.Uint32(buf[8:12]))
	salt := string(buf[16:24])
	txn := 0
	for off := 32; off+24+pageSize <= len(buf); off += 24 + pageSize {
		if string(buf[off+8:off+16]) != salt {
			break
		}
		frames++
		txn++
		if binary.BigEndian.Uint32(buf[off+4:off+8]) != 0 { // a commit frame
			maxTxn = max(maxTxn, txn)
			txn = 0
		}
	}
	return frames, maxTxn
}

// structure returns the number of segments of the index (from its
// structure record) and the pages of its data.
func (g *foldGrowth) structure(b *testing.B) (segments, pages int) {
	b.Helper()
	var rec []byte
	if err := g.raw.QueryRow(`SELECT block FROM search_fts_data WHERE id = 10`).Scan(&rec); err != nil {
		b.Fatal(err)
	}
	segments, err := fts5Segments(rec)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.raw.QueryRow(`SELECT count(*) FROM dbstat WHERE name = 'search_fts_data'`).Scan(&pages); err != nil {
		b.Fatal(err)
	}
	return segments, pages
}

// searchMedian returns the median wall time, in µs, of 9 searches of
// term.
func (g *foldGrowth) searchMedian(b *testing.B, term string) float64 {
	b.Helper()
	ctx := context.Background()
	var ds []time.Duration
	for range 9 {
		t0 := time.Now()
		res, err := g.st.Search(ctx, store.SearchQuery{Query: term})
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
		if len(res.Hits) == 0 && g.docs > 1000 {
			b.Fatalf("no hit of %q in %d documents", term, g.docs)
		}
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds())
}

// fts5Segments reads the total number of segments from an FTS5 structure
// record: a 4-byte cookie, the optional structure-v2 marker, then the
// number of levels and the number of segments as SQLite varints.
func fts5Segments(rec []byte) (int, error) {
	if len(rec) < 4 {
		return 0, fmt.Errorf("structure record of %d bytes", len(rec))
	}
	i := 4
	if len(rec) >= 8 && string(rec[4:8]) == "\xff\x00\x00\x01" {
		i = 8
	}
	for field := 0; field < 2; field++ {
		var v uint64
		for k := 0; ; k++ {
			if i >= len(rec) || k == 9 {
				return 0, fmt.Errorf("bad varint in the structure record")
			}
			c := rec[i]
			i++
			if k == 8 {
				v = v<<8 | uint64(c)
				break
			}
			v = v<<7 | uint64(c&0x7f)
			if c < 0x80 {
				break
			}
		}
		if field == 1 {
			return int(v), nil
		}
	}
	return 0, nil
}
