package sqlstore_test

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
)

// BenchmarkFTSOptions weighs FTS5 options for the search index (issue 36's
// levers) on the same documents: runner-reply-like text of ~1 KiB drawn
// from a vocabulary, folded in batches of 64 per transaction as the
// indexer folds (WAL, synchronous=NORMAL), each variant in a file of its
// own. It reports per document the index's bytes (the file after a
// checkpoint, less the same documents' table without an index) and the
// CPU time of the fold (this process's user and system time: the fold is
// one goroutine, so this is less sensitive to the machine's load than the
// wall clock):
//
//   - trigram: the schema's before migration 32 (external content,
//     detail=full): every trigram's positions, so a term of three or more
//     characters is a phrase of trigrams.
//
//   - column: detail=column, no positions, the schema's since migration
//     32: a term can no longer be matched as a phrase (FTS5 refuses phrase
//     queries), so the search ANDs its trigrams and checks the term on the
//     body (sessionstore_contains).
//
//   - none: detail=none, the same with no column either. Refused: on
//     documents of random letters deleted in rounds with merges between
//     (the size budget's), its merges kept ~38% of the index's pages
//     after every document was gone, even after 'optimize', and the
//     conformance test SizeBudgetStopsUnderBudget fails with it. The
//     left-B-after-deleting-all metric shows what each variant keeps
//     after one delete of everything and a full merge (a few pages, for
//     these documents, in every variant).
//
//   - contentless: contentless_delete=1 (SQLite ≥ 3.43), no external
//     content: the index is the same size as trigram; what it saves is the
//     body kept beside it for snippets and for deletes, which the store
//     would then rebuild from the source rows.
//
//   - words: FTS5's unicode61 word tokenizer, detail=column (the issue's
//     "word tokenizer, trigrams only for CJK runs", without the CJK
//     part): a fifth of the column index and a quarter of its fold CPU
//     here, but a term is then found only at the start of a word, where
//     the store promises a substring anywhere (docs/search.md: "kafk"
//     finds "Kafka", and inside "TimeoutError" or a path); refused for
//     that, not for its cost.
//
//     go test ./sqlstore -run '^$' -bench FTSOptions -benchtime 2000x
//
// Each iteration is one document in every variant.
func BenchmarkFTSOptions(b *testing.B) {
	type variant struct {
		name, fts string
		content   bool // the documents table keeps the body
	}
	variants := []variant{
		{"none-index", "", true},
		{"trigram", `CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='doc', tokenize='trigram')`, true},
		{"column", `CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='doc', tokenize='trigram', detail=column)`, true},
		{"none", `CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='doc', tokenize='trigram', detail=none)`, true},
		{"contentless", `CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, tokenize='trigram')`, false},
		{"words", `CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='doc', tokenize='unicode61', detail=column)`, true},
	}
	docs := make([]string, 0, b.N)
	rng := rand.New(rand.NewPCG(1, 2))
	for range b.N {
		docs = append(docs, sqlstore.BenchWords(rng))
	}
	dir := b.TempDir()
	sizes := map[string]float64{}
	for _, v := range variants {
		path := filepath.Join(dir, v.name+".db")
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)&_pragma=synchronous(normal)")
		if err != nil {
			b.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		body := "body TEXT NOT NULL"
		if !v.content {
			body = "len INTEGER NOT NULL"
		}
		for _, q := range []string{`CREATE TABLE docs (doc INTEGER PRIMARY KEY, ` + body + `)`, v.fts} {
			if q == "" {
				continue
			}
			if _, err := db.Exec(q); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
		}
		cpu0 := sqlstore.BenchCPU()
		for i := 0; i < len(docs); i += 64 {
			tx, err := db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			for j := i; j < min(i+64, len(docs)); j++ {
				val := any(docs[j])
				if !v.content {
					val = len(docs[j])
				}
				if _, err := tx.Exec(`INSERT INTO docs (doc, `+strings.Fields(body)[0]+`) VALUES (?, ?)`, j+1, val); err != nil {
					b.Fatal(err)
				}
				if v.fts != "" {
					if _, err := tx.Exec(`INSERT INTO fts (rowid, body) VALUES (?, ?)`, j+1, docs[j]); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		cpu := sqlstore.BenchCPU() - cpu0
		if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			b.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		sizes[v.name] = float64(fi.Size())
		if v.fts != "" {
			b.ReportMetric(float64(ftsLeftAfterDeletes(b, db, docs, v.content)), v.name+"-left-B-after-deleting-all")
		}
		db.Close()
		n := float64(len(docs))
		b.ReportMetric(float64(cpu.Microseconds())/n, v.name+"-cpu-µs/doc")
		if v.name != "none-index" {
			base := sizes["none-index"]
			if !v.content {
				base = 0 // its table holds no body: the whole file is what it costs
			}
			b.ReportMetric((sizes[v.name]-base)/n, v.name+"-index-B/doc")
		}
	}
}

// ftsLeftAfterDeletes deletes every document from the index (as the
// store's fold does, in batches of 64), merges its segments fully (as the
// size budget's compaction does) and returns the bytes of index pages
// left: a few pages where a merge drops what was deleted.
func ftsLeftAfterDeletes(b *testing.B, db *sql.DB, docs []string, content bool) int64 {
	for i := 0; i < len(docs); i += 64 {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for j := i; j < min(i+64, len(docs)); j++ {
			q, args := `INSERT INTO fts (fts, rowid, body) VALUES ('delete', ?, ?)`, []any{j + 1, docs[j]}
			if !content {
				q, args = `DELETE FROM fts WHERE rowid = ?`, []any{j + 1}
			}
			if _, err := tx.Exec(q, args...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for n := -64; ; n = 64 { // one connection: total_changes counts this merge
		var before, after int64
		if err := db.QueryRow(`SELECT total_changes()`).Scan(&before); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO fts (fts, rank) VALUES ('merge', ?)`, n); err != nil {
			b.Fatal(err)
		}
		if err := db.QueryRow(`SELECT total_changes()`).Scan(&after); err != nil {
			b.Fatal(err)
		}
		if after-before < 2 {
			break
		}
	}
	var left int64
	if err := db.QueryRow(`SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'fts_data'`).Scan(&left); err != nil {
		b.Fatal(err)
	}
	return left
}
