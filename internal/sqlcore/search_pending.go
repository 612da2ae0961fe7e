package sqlcore

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/store"
)

// A store that cannot fold (read-only, or a read under ReadSnapshot)
// still answers Search and History exactly: it reads the index without
// the documents of the items not yet folded (pendingKeysFilter), and
// matches those items directly from their content, their documents built
// by the fold's own expressions (docSources), with the index's filters,
// matching, ranking and order. Each such item gets a document number
// after the index's last one (its place among the items not yet folded,
// in the order the fold would take them), so cursors and ties work as
// for indexed items.
//
// The cost is bounded: when more than pendingMatchMax items wait (a bulk
// import, a stopped indexer), they are left out instead and counted in
// store.SearchResult.Pending.

// pendingMatchMax is the largest number of items not yet folded that a
// store that cannot fold matches directly: one fold batch of a search
// (DefaultFoldBatch), the work a store that can write does before its
// search, here without writing.
const pendingMatchMax = DefaultFoldBatch

// pendingKeysCTE is the common table expression pk: the keys a fold
// would write (the queue's distinct keys and, on SQLite, the events after
// the mark), each numbered n from 1 in the order a fold takes them (the
// queue's order, then the events'). On PostgreSQL, the store's tenant's
// keys only (its one parameter).
func (s *Store) pendingKeysCTE() string {
	if s.postgres() {
		return `pk AS (SELECT kind, session_pk, owner, pos, ref, row_number() OVER (ORDER BY min(id)) AS n
		FROM search_pending WHERE tenant = ? GROUP BY kind, session_pk, owner, pos, ref)`
	}
	return `pk AS (SELECT kind, session_pk, owner, pos, ref, row_number() OVER (ORDER BY min(g), min(o)) AS n FROM (
		SELECT kind, session_pk, owner, pos, ref, 0 AS g, id AS o FROM search_pending
		UNION ALL
		SELECT 'event', session_pk, '', seq, '', 1, id FROM agent_events
		WHERE id > (SELECT events_mark FROM search_state) AND ` + plainSQL("data") + `
	) AS u GROUP BY kind, session_pk, owner, pos, ref)`
}

// pendingKeysArgs are the arguments of pendingKeysCTE.
func (s *Store) pendingKeysArgs() []any {
	if s.postgres() {
		return []any{s.tenant}
	}
	return nil
}

// pendingDocsSQL returns the WITH clause of a read of the documents of
// the keys not yet folded, as the fold would write them, in a table pd
// with the columns of search_docs (n in place of doc, tenant included)
// and, for events, the event's (ev_id, ev_invocation, ev_ts, ev_data;
// NULL for other kinds). kinds keeps those kinds only (nil: every kind;
// at least one kind of store.SearchKinds otherwise).
// Its arguments are pendingKeysArgs.
func (s *Store) pendingDocsSQL(kinds []string) string {
	var b strings.Builder
	b.WriteString(`WITH ` + s.pendingKeysCTE() + `, pd AS (`)
	names := strings.Split(docCols, ", ")
	first := true
	for _, src := range s.docSources() {
		if kinds != nil && !slices.Contains(kinds, src.kind) {
			continue
		}
		if !first {
			b.WriteString(` UNION ALL `)
		}
		first = false
		b.WriteString(`SELECT p.n AS n, '` + src.kind + `' AS kind`)
		for i, c := range src.cols {
			b.WriteString(`, ` + c + ` AS ` + names[i])
		}
		if src.kind == string(store.SearchEvent) {
			b.WriteString(`, c.event_id AS ev_id, c.invocation_id AS ev_invocation, c.ts_us AS ev_ts, c.data AS ev_data`)
		} else {
			b.WriteString(`, CAST(NULL AS TEXT) AS ev_id, CAST(NULL AS TEXT) AS ev_invocation, CAST(NULL AS BIGINT) AS ev_ts, CAST(NULL AS TEXT) AS ev_data`)
		}
		b.WriteString(` FROM (SELECT * FROM pk WHERE pk.kind = '` + src.kind + `') AS p ` + src.from)
	}
	b.WriteString(`) `)
	return b.String()
}

// anyKind reports whether kinds holds a kind of item.
func anyKind(kinds []string) bool {
	for _, k := range store.SearchKinds() {
		if slices.Contains(kinds, string(k)) {
			return true
		}
	}
	return false
}

// pendingKeyCount returns the number of keys not yet folded (pk's rows).
func (s *Store) pendingKeyCount(tx Tx) (int, error) {
	var n int
	err := tx.Scan(`WITH `+s.pendingKeysCTE()+` SELECT count(*) FROM pk`, s.pendingKeysArgs(), &n)
	return n, err
}

// pendingPlan is what a read of a store that cannot fold does with the
// items not yet folded.
type pendingPlan struct {
	// stale: the store could not fold; the index is read without the
	// documents of the keys not yet folded (pendingKeysFilter).
	stale bool
	// match: those items are matched directly (their number is at most
	// pendingMatchMax); else they are left out, and count says how many.
	match bool
	count int
	// maxDoc is the index's last document number: the items not yet
	// folded are numbered after it (maxDoc + n).
	maxDoc int64
}

// planPending decides, in the read's transaction, how a read whose store
// could not fold (stale) treats the items not yet folded.
// It reads the index's last document number when stale or maxDoc asks.
func (s *Store) planPending(tx Tx, stale, maxDoc bool) (pendingPlan, error) {
	p := pendingPlan{stale: stale}
	if stale || maxDoc {
		if err := tx.Scan(`SELECT coalesce(max(doc), 0) FROM search_docs`, nil, &p.maxDoc); err != nil {
			return p, err
		}
	}
	if !stale {
		return p, nil
	}
	n, err := s.pendingKeyCount(tx)
	if err != nil {
		return p, err
	}
	p.count = n
	p.match = n <= pendingMatchMax
	return p, nil
}

// left returns the number of items the read leaves out
// (store.SearchResult.Pending).
func (p pendingPlan) left() int {
	if p.stale && !p.match {
		return p.count
	}
	return 0
}

// pendingSearch returns the items not yet folded that match search q
// (long and short terms as Search splits them), with their document
// numbers and scores, in no particular order. Filters that depend on the
// document number or the score (cursor, scan floor) are the caller's.
func (s *Store) pendingSearch(tx Tx, plan pendingPlan, q store.SearchQuery, long, short []string) ([]searchRow, error) {
	kinds := searchKinds(q) // nil: every kind
	if kinds != nil && !anyKind(kinds) {
		return nil, nil // the filters leave no kind
	}
	var b strings.Builder
	args := s.pendingKeysArgs()
	b.WriteString(s.pendingDocsSQL(kinds))
	score := `0.0`
	if len(long) > 0 && s.postgres() {
		var rank []string
		for _, t := range long {
			rank = append(rank, `plainto_tsquery('simple', ?)`)
			args = append(args, t)
		}
		score = `ts_rank(to_tsvector('simple', d.body), ` + strings.Join(rank, " || ") + `)::float8`
	}
	b.WriteString(`SELECT d.n, d.kind, d.session_pk, d.owner, d.session_id, d.app, d.user_id, d.pos, d.ref, d.role, d.at_us, d.body,
		d.ev_id, d.ev_invocation, d.ev_ts, d.ev_data, ` + score + ` AS score FROM pd AS d WHERE 1 = 1`)
	for _, t := range long {
		// The index's conditions on a term of three characters or more
		// (PostgreSQL: longTermMatch) or the term itself (SQLite's
		// trigram tokenizer folds case as the contains function does, so
		// the term's occurrence implies its trigrams').
		if s.postgres() {
			cond, targs := s.longTermMatch(t)
			b.WriteString(` AND ` + cond)
			args = append(args, targs...)
			continue
		}
		b.WriteString(` AND ` + s.d.Contains("d.body", "?"))
		args = append(args, t)
	}
	args, err := s.searchFilters(&b, args, q, short)
	if err != nil {
		return nil, err
	}
	var rows []searchRow
	if err := tx.Query(b.String(), args, func(r Rows) error {
		var row searchRow
		if err := row.scan(r, true); err != nil {
			return err
		}
		row.doc += plan.maxDoc
		if !q.IncludeEvents {
			row.evID, row.evInvocation, row.evTS, row.evData = nil, nil, nil, nil
		}
		rows = append(rows, row)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(long) > 0 && len(rows) > 0 && !s.postgres() {
		bm, err := s.ftsBM25(tx, long)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			rows[i].score = bm.score(rows[i].body)
		}
	}
	return rows, nil
}

// afterSearchCursor reports whether row comes after cursor c of order o.
func afterSearchCursor(row searchRow, o store.SearchOrder, c store.SearchCursor) bool {
	if o == store.SearchByTime {
		return row.atUS < c.AtMicros || (row.atUS == c.AtMicros && row.doc < c.Doc)
	}
	return row.score < c.Score || (row.score == c.Score && row.doc < c.Doc)
}

// sortSearchRows sorts rows as the search's ORDER BY does (the document
// number last: a total order, so that the sort needs no stability).
func sortSearchRows(rows []searchRow, o store.SearchOrder) {
	slices.SortFunc(rows, func(a, b searchRow) int {
		if o == store.SearchByTime {
			if a.atUS != b.atUS {
				return compareDesc(a.atUS, b.atUS)
			}
		} else if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return compareDesc(a.doc, b.doc)
	})
}

// bm25 holds what FTS5's bm25() reads from the whole index for one query
// (SQLite): the number of documents, their average size in tokens, and
// each phrase's inverse document frequency.
type bm25 struct {
	phrases [][]rune
	idf     []float64
	avgdl   float64
}

// ftsBM25 reads the index's statistics for the FTS5 query of long terms
// (ftsMatch's phrases, in order), as bm25() does for the rows the query
// finds, so that a document not yet folded is scored as an indexed one
// that holds the same text: the row count and the total size from the
// index's averages record (FTS5's record 1 of search_fts_data: varints),
// each phrase's document count from the index, and the logarithm from
// SQLite (ln, the C library's log, as bm25's). The records are read with
// the structure record, which names the index's state (ftsStateSQL); the
// phrases' inverse document frequencies come from the store's cache for
// that state (search_stats.go) or, for those it does not hold, from one
// statement (ftsIDFSQL).
func (s *Store) ftsBM25(tx Tx, long []string) (bm25, error) {
	var bm bm25
	var rec, structure []byte
	if err := tx.Scan(ftsStateSQL, nil, &rec, &structure); err != nil {
		return bm, err
	}
	key := stateKey(rec, structure)
	nRow, n := ftsVarint(rec)
	total, _ := ftsVarint(rec[n:])
	bm.avgdl = 1 // an empty index: no average to compare with
	if nRow > 0 {
		bm.avgdl = float64(total) / float64(nRow)
	}
	seen := map[string]bool{}
	var phrases []string
	for _, t := range long {
		r := []rune(t)
		for i := 0; i+3 <= len(r); i++ {
			tri := string(r[i : i+3])
			if seen[tri] {
				continue
			}
			seen[tri] = true
			phrases = append(phrases, `"`+strings.ReplaceAll(tri, `"`, `""`)+`"`)
			bm.phrases = append(bm.phrases, foldRunes(tri))
		}
	}
	if len(phrases) == 0 {
		return bm, nil
	}
	idf, ok := s.stats.lookup(key, phrases)
	var missing []string
	for i, p := range phrases {
		if !ok[i] {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		list, err := json.Marshal(missing)
		if err != nil {
			return bm, err
		}
		var read []float64
		if err := tx.Query(ftsIDFSQL, []any{string(list), float64(nRow)}, func(r Rows) error {
			var v float64
			if err := r.Scan(&v); err != nil {
				return err
			}
			if v <= 0 || math.IsNaN(v) { // as bm25()
				v = 1e-6
			}
			read = append(read, v)
			return nil
		}); err != nil {
			return bm, err
		}
		if len(read) != len(missing) {
			return bm, fmt.Errorf("sqlcore: %d statistics for %d phrases of the search index", len(read), len(missing))
		}
		s.stats.store(key, missing, read)
		j := 0
		for i := range phrases {
			if !ok[i] {
				idf[i] = read[j]
				j++
			}
		}
	}
	bm.idf = idf
	return bm, nil
}

// ftsIDFSQL is the query of each phrase's inverse document frequency, as
// bm25() computes it, in the order of a JSON array of FTS5 phrases (the
// first parameter), the index's row count the second: each phrase's
// document count once (MATERIALIZED: the formula reads it twice), then
// ln((N - n + 0.5) / (n + 0.5)), 0 where that has no logarithm.
const ftsIDFSQL = `WITH h AS MATERIALIZED (SELECT j.key AS k, (SELECT count(*) FROM search_fts WHERE search_fts MATCH j.value) AS n FROM json_each(?) AS j)
SELECT coalesce(ln((? - h.n + 0.5) / (h.n + 0.5)), 0) FROM h ORDER BY h.k`

// ftsVarint decodes an SQLite varint (FTS5's records use them); 0, 0
// when b holds none.
func ftsVarint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// foldRunes returns s's characters, each in lower case (the trigram
// tokenizer's case folding, as store.ContainsFold's).
func foldRunes(s string) []rune {
	r := make([]rune, 0, len(s))
	for _, c := range s {
		r = append(r, unicode.ToLower(c))
	}
	return r
}

// score is -bm25(search_fts) for a document of text body, with FTS5's
// constants (k1 1.2, b 0.75) and operations in its order: the index keeps
// no positions (detail=column), and a phrase's frequency in a document is
// the number of times its trigram occurs in it; a document's size is its
// number of trigrams. Each product is rounded on its own (float64), as C
// rounds it.
func (bm bm25) score(body string) float64 {
	text := foldRunes(body)
	freq := make([]float64, 0, len(bm.phrases))
	for _, ph := range bm.phrases {
		f := 0.0
		for j := 0; j+3 <= len(text); j++ {
			if text[j] == ph[0] && text[j+1] == ph[1] && text[j+2] == ph[2] {
				f++
			}
		}
		freq = append(freq, f)
	}
	return bm.combine(freq, float64(max(utf8.RuneCountInString(body)-2, 0)))
}

// combine is the score of a document of d trigrams in which phrase i
// occurs freq[i] times, with FTS5's constants (k1 1.2, b 0.75) and
// operations in its order.
func (bm bm25) combine(freq []float64, d float64) float64 {
	const k1, b = 1.2, 0.75
	var sum float64
	for i, f := range freq {
		num := float64(f * (k1 + 1.0))
		den := f + float64(k1*float64(float64(1-b)+float64(float64(b*d)/bm.avgdl)))
		sum += float64(bm.idf[i] * float64(num/den))
	}
	return sum // bm25() is -1.0 * sum
}
