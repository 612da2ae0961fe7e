package sqlcore

import (
	"errors"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/store"
)

// A search of a term found in many documents. The index finds the
// documents that hold all of a term's trigrams (the candidates: on a
// common word, most of the index); the search's own query then reads each
// candidate's row, checks the term on its body, applies the filters and
// scores it before it sorts and keeps a page. Measured on 10,000 and
// 50,000 documents of ~1 KiB (BenchmarkSearchCommonTerm), FTS5's bm25()
// was most of that time and the body check and the row reads most of the
// rest; the match alone was a few milliseconds. So, once the index has
// largeSearchMin candidates or more:
//
//   - newest first, when the match holds enough candidates
//     (timeWalkFrom), the search walks the tenant's documents newest
//     first on the index by time (migration 36) and tests each against
//     the match's rowids, the filters and the body, until it has the page
//     and one more hit (timeWalkSQL); otherwise it reads only the
//     candidates' times (and the columns of the filters, but not the
//     body), sorts them in Go, and checks the bodies and the other filters
//     in that order, a batch at a time, until it has the page and one more
//     hit (candidatesByTime). Either way it then scores those hits alone.
//     The same hits in the same order, with the same scores: each is the
//     search's own conditions on documents in the final order, and the
//     score is the same expression over the same index in the same
//     transaction.
//   - by rank on SQLite, every candidate's score is needed (the index has
//     no positions, migration 32, so a document's frequency of a trigram
//     is only in its body): the search's own query runs, scoring with the
//     dialect's Rank (search_rank.go), which gives bm25()'s value without
//     its second reading of the body.
//   - on PostgreSQL the search's own query runs as it is (postgresLarge).
//
// postgresLarge: PostgreSQL's search is its own query, whatever the
// number of candidates. Ranked, ts_rank needs every candidate's tsvector.
// Newest first, the same steps as SQLite's work (LargeTermPages passes
// with them). They were turned off (c88f222) because once ANALYZE had
// run the planner answered the candidates' keys with a sequential scan
// computing sessionstore_trigrams of every row (18 s on 3,000
// documents). Since migration 37 gives the function its cost, every
// statement of theirs keeps the trigram index after ANALYZE
// (TestSearchPlansAfterAnalyze with them turned on), but they were not
// faster than the search's own query, which the same step made faster
// too: on 10,000 documents after ANALYZE (BenchmarkSearchCommonTerm,
// load 3.5-4.4, directional) 68 against 63 ms for the common term, 37
// against 13 ms filtered to one session, 12 against 40 ms for messages
// only, and 15 against 2 ms for a rare term (the count of candidates
// that chooses the path). They stay off.
//
// Below largeSearchMin candidates the search's own query is as cheap, and
// the extra statements would cost more than they save.
const largeSearchMin = 1000

// largeSearchBatch is the first batch of candidates a search newest first
// checks; each next batch is twice as large (up to largeSearchBatchMax),
// so that a filter that rejects most candidates costs few statements.
const (
	largeSearchBatch    = 64
	largeSearchBatchMax = 4096
)

// searchLarge returns the first q.Limit+1 hits of the index for search q
// (long terms, the cursor applied, the items not yet folded left to the
// caller), and true, when the index has largeSearchMin candidates or
// more and the search can stop early or score faster; otherwise false,
// and the caller runs searchSQL's query.
func (s *Store) searchLarge(tx Tx, q store.SearchQuery, long, short []string, stale bool) ([]searchRow, bool, error) {
	if s.postgres() {
		return nil, false, nil // see postgresLarge
	}
	rankByGo := q.Order == store.SearchByRank && s.d.Rank != nil
	if q.Order != store.SearchByTime && !rankByGo {
		return nil, false, nil
	}
	most := largeSearchMin
	if s.cfg.LargeSearchMin > 0 {
		most = s.cfg.LargeSearchMin
	}
	// Newest first, the index of documents by time is walked when the
	// match holds enough of them (timeWalkFrom).
	walkFrom := 0
	var err error
	if q.Order == store.SearchByTime {
		switch {
		case s.cfg.SearchTimeWalk > 0:
			walkFrom = 1
		case s.cfg.SearchTimeWalk == 0:
			if walkFrom, err = s.timeWalkFrom(tx, q.Limit); err != nil {
				return nil, false, err
			}
		}
	}
	n, err := s.countCandidates(tx, long, max(most, walkFrom))
	if err != nil || n < most {
		return nil, false, err
	}
	scan := func(rows *[]searchRow) func(r Rows) error {
		return func(r Rows) error {
			var row searchRow
			if err := row.scan(r, q.IncludeEvents); err != nil {
				return err
			}
			*rows = append(*rows, row)
			return nil
		}
	}
	if rankByGo {
		bm, err := s.ftsBM25(tx, long)
		if err != nil {
			return nil, false, err
		}
		arg, ok := rankArg(bm)
		if !ok {
			return nil, false, nil
		}
		query, args, err := s.searchSQL(q, long, short, stale, arg)
		if err != nil {
			return nil, false, err
		}
		var rows []searchRow
		if err := tx.Query(query, args, scan(&rows)); err != nil {
			return nil, false, err
		}
		return rows, true, nil
	}

	var rows []searchRow
	if walkFrom > 0 && n >= walkFrom {
		// The tenant's documents newest first, each tested against the
		// match, until the page and one more hit.
		query, args, err := s.timeWalkSQL(q, long, short, stale)
		if err != nil {
			return nil, false, err
		}
		if err := tx.Query(query, args, scan(&rows)); err != nil {
			return nil, false, err
		}
	} else if rows, err = s.candidatesByTime(tx, q, long, short, stale, scan); err != nil {
		return nil, false, err
	}
	if len(rows) == 0 {
		return rows, true, nil
	}
	// The hits' scores, from the same index in the same transaction.
	docs := make([]int64, len(rows))
	for i, r := range rows {
		docs[i] = r.doc
	}
	query, args, err := s.scoresSQL(long, docs)
	if err != nil {
		return nil, false, err
	}
	scores := make(map[int64]float64, len(rows))
	if err := tx.Query(query, args, func(r Rows) error {
		var doc int64
		var score float64
		if err := r.Scan(&doc, &score); err != nil {
			return err
		}
		scores[doc] = score
		return nil
	}); err != nil {
		return nil, false, err
	}
	for i := range rows {
		rows[i].score = scores[rows[i].doc]
	}
	return rows, true, nil
}

// candidatesByTime returns the first q.Limit+1 hits of search q newest
// first from the match's candidates: their keys read and sorted, then
// checked a batch at a time in that order.
func (s *Store) candidatesByTime(tx Tx, q store.SearchQuery, long, short []string, stale bool, scan func(*[]searchRow) func(Rows) error) ([]searchRow, error) {
	// The candidates' keys, in the search's order.
	type key struct{ doc, at int64 }
	var keys []key
	query, args, err := s.candidateKeysSQL(q, long)
	if err != nil {
		return nil, err
	}
	if err := tx.Query(query, args, func(r Rows) error {
		var k key
		if err := r.Scan(&k.doc, &k.at); err != nil {
			return err
		}
		keys = append(keys, k)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.at != b.at {
			return compareDesc(a.at, b.at)
		}
		return compareDesc(a.doc, b.doc)
	})
	// The candidates' other conditions, a batch at a time in that order.
	var rows []searchRow
	batch := largeSearchBatch
	if s.cfg.LargeSearchMin > 0 {
		batch = s.cfg.LargeSearchMin // tests: a small store crosses batches
	}
	for start := 0; start < len(keys) && len(rows) <= q.Limit; start += batch {
		if start > 0 {
			batch = min(2*batch, largeSearchBatchMax)
		}
		docs := make([]int64, 0, batch)
		for _, k := range keys[start:min(start+batch, len(keys))] {
			docs = append(docs, k.doc)
		}
		query, args, err := s.checkBatchSQL(q, long, short, stale, docs, q.Limit+1-len(rows))
		if err != nil {
			return nil, err
		}
		if err := tx.Query(query, args, scan(&rows)); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// timeWalkStep is how many entries of the index of documents by time
// (migration 36) a walk reads for the cost of reading one candidate's row
// on the candidates' path: an entry is the next one of the same pages
// plus a look-up in the match's rowids; a candidate's row is a seek in
// search_docs and a row handed to Go and sorted.
const timeWalkStep = 8

// timeWalkFrom returns the number of the match's candidates from which a
// search newest first for limit hits walks the index of documents by
// time rather than read and sort every candidate. With the term in n of
// the tenant's N documents spread over time, the walk reads about
// (limit+1)·N/n entries before it has its page; the candidates' path
// reads n rows. The walk is cheaper from n² ≥ (limit+1)·N/timeWalkStep.
// N is taken as the largest doc (every tenant's, documents removed
// included): a bound that errs towards the candidates' path. A filter
// that rejects most documents lengthens the walk, but never past the
// tenant's entries and the candidates' rows (the candidates' path reads
// those rows too).
func (s *Store) timeWalkFrom(tx Tx, limit int) (int, error) {
	var top int64
	if err := tx.Scan(`SELECT coalesce(max(doc), 0) FROM search_docs`, nil, &top); err != nil {
		return 0, err
	}
	return max(1, int(math.Ceil(math.Sqrt(float64(limit+1)*float64(top)/timeWalkStep)))), nil
}

// timeWalkSQL returns the query of the first q.Limit+1 rows of search q
// newest first (SQLite): the tenant's documents walked newest first on
// search_docs_time (migration 36; its entries end with the rowid, so the
// walk is in at_us DESC, doc DESC order with no sort), from the cursor,
// each tested against the match's rowids (which SQLite gathers once in a
// b-tree of its own), then searchSQL's other conditions, the body's
// last; the score is left at 0 (scoresSQL's).
func (s *Store) timeWalkSQL(q store.SearchQuery, long, short []string, stale bool) (string, []any, error) {
	var b strings.Builder
	cols, join := searchColumns, ""
	if q.IncludeEvents {
		cols += searchEventColumns
		join = searchEventJoin
	}
	b.WriteString(`SELECT ` + cols + `, 0.0 AS score FROM search_docs AS d INDEXED BY search_docs_time` + join +
		` WHERE d.doc IN (SELECT rowid FROM search_fts WHERE search_fts MATCH ?)`)
	args := []any{ftsMatch(long)}
	if q.Cursor != "" {
		c, _ := store.DecodeSearchCursor(q.Cursor) // validated by Normalize
		// at_us <= ? bounds the walk; the rest of the cursor is tested on
		// the entries of its own time.
		b.WriteString(` AND d.at_us <= ? AND (d.at_us < ? OR d.doc < ?)`)
		args = append(args, c.AtMicros, c.AtMicros, c.Doc)
	}
	args, err := s.timeOrderedHits(&b, args, q, long, short, stale, q.Limit+1)
	if err != nil {
		return "", nil, err
	}
	return b.String(), args, nil
}

// timeOrderedHits writes the rest of a query of documents d newest first
// for search q: its filters, each long term checked on the body, the
// documents of queued keys left out when stale, and the order, limited
// to limit rows. It returns args with theirs appended.
func (s *Store) timeOrderedHits(b *strings.Builder, args []any, q store.SearchQuery, long, short []string, stale bool, limit int) ([]any, error) {
	args, err := s.searchFilters(b, args, q, short)
	if err != nil {
		return nil, err
	}
	for _, t := range long {
		b.WriteString(` AND ` + s.d.Contains("d.body", "?"))
		args = append(args, t)
	}
	if stale {
		b.WriteString(s.pendingKeysFilter())
	}
	b.WriteString(` ORDER BY d.at_us DESC, d.doc DESC LIMIT ?`)
	return append(args, limit), nil
}

func compareDesc(a, b int64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// countCandidates returns the number of documents the index finds for
// long terms (all of their trigrams), counting up to most.
func (s *Store) countCandidates(tx Tx, long []string, most int) (int, error) {
	var n int
	if s.postgres() {
		var b strings.Builder
		var args []any
		b.WriteString(`SELECT count(*) FROM (SELECT 1 FROM search_docs AS d WHERE TRUE`)
		for _, t := range long {
			b.WriteString(` AND sessionstore_trigrams(d.body) @> sessionstore_trigrams(?)`)
			args = append(args, t)
		}
		b.WriteString(` AND d.tenant = ? LIMIT ?) AS c`)
		args = append(args, s.tenant, most)
		err := tx.Scan(b.String(), args, &n)
		return n, err
	}
	err := tx.Scan(`SELECT count(*) FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH ? LIMIT ?) AS c`,
		[]any{ftsMatch(long), most}, &n)
	return n, err
}

// candidateKeysSQL returns the query of the documents (doc, at_us) that
// the index finds for search q's long terms and that pass its conditions
// on the documents' columns (searchColumnFilters) and its cursor (newest
// first), without reading their bodies.
func (s *Store) candidateKeysSQL(q store.SearchQuery, long []string) (string, []any, error) {
	var b strings.Builder
	var args []any
	if s.postgres() {
		b.WriteString(`SELECT d.doc, d.at_us FROM search_docs AS d WHERE TRUE`)
		for _, t := range long {
			b.WriteString(` AND sessionstore_trigrams(d.body) @> sessionstore_trigrams(?)`)
			args = append(args, t)
		}
	} else {
		b.WriteString(`SELECT d.doc, d.at_us FROM search_fts JOIN search_docs AS d ON d.doc = search_fts.rowid WHERE search_fts MATCH ?`)
		args = append(args, ftsMatch(long))
	}
	args, err := s.searchColumnFilters(&b, args, q)
	if err != nil {
		return "", nil, err
	}
	if q.Cursor != "" {
		c, _ := store.DecodeSearchCursor(q.Cursor) // validated by Normalize
		b.WriteString(` AND (d.at_us < ? OR (d.at_us = ? AND d.doc < ?))`)
		args = append(args, c.AtMicros, c.AtMicros, c.Doc)
	}
	return b.String(), args, nil
}

// checkBatchSQL returns the query of the rows of search q (newest first,
// at most limit) among documents docs: searchSQL's conditions but the
// index's match (docs are the index's candidates) and the cursor (applied
// to docs already), the score left at 0 (scoresSQL's).
func (s *Store) checkBatchSQL(q store.SearchQuery, long, short []string, stale bool, docs []int64, limit int) (string, []any, error) {
	var b strings.Builder
	cols, join := searchColumns, ""
	if q.IncludeEvents {
		cols += searchEventColumns
		join = searchEventJoin
	}
	list, err := s.d.ListArg(docs)
	if err != nil {
		return "", nil, err
	}
	b.WriteString(`SELECT ` + cols + `, 0.0 AS score FROM search_docs AS d` + join + ` WHERE ` + s.d.InList("d.doc"))
	args, err := s.timeOrderedHits(&b, []any{list}, q, long, short, stale, limit)
	if err != nil {
		return "", nil, err
	}
	return b.String(), args, nil
}

// scoresSQL returns the query of (doc, score) of documents docs, each
// found by the index for long terms, scored as searchSQL scores them.
func (s *Store) scoresSQL(long []string, docs []int64) (string, []any, error) {
	list, err := s.d.ListArg(docs)
	if err != nil {
		return "", nil, err
	}
	if s.postgres() {
		var rank []string
		var args []any
		for _, t := range long {
			rank = append(rank, `plainto_tsquery('simple', ?)`)
			args = append(args, t)
		}
		return `SELECT d.doc, ts_rank(to_tsvector('simple', d.body), ` + strings.Join(rank, " || ") + `)::float8 FROM search_docs AS d WHERE ` + s.d.InList("d.doc"),
			append(args, list), nil
	}
	// The unary + keeps the list from FTS5, which would run the match
	// (and bm25()'s statistics) again for each of its rows.
	return `SELECT search_fts.rowid, -bm25(search_fts) FROM search_fts WHERE search_fts MATCH ? AND ` + s.d.InList("+search_fts.rowid"),
		[]any{ftsMatch(long), list}, nil
}

// SearchTimeWalkSQL returns the query (and its arguments) with which a
// search q newest first of a term in many documents walks the index of
// documents by time (timeWalkSQL), on SQLite, for the backend's query
// plan tests; q is normalized first, and its terms must include one long
// enough for the index.
func (s *Store) SearchTimeWalkSQL(q store.SearchQuery) (string, []any, error) {
	q, err := q.Normalize()
	if err != nil {
		return "", nil, err
	}
	var long, short []string
	for _, t := range store.SearchTerms(q.Query) {
		if utf8.RuneCountInString(t) >= store.MinIndexedTerm {
			long = append(long, t)
		} else {
			short = append(short, t)
		}
	}
	if len(long) == 0 || s.postgres() {
		return "", nil, errors.New("sqlcore: no walk of the index by time for this search")
	}
	return s.timeWalkSQL(q, long, short, true)
}
