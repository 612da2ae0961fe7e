package sqlcore

import (
	"errors"
	"math"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// A search of a term found in many documents. The index finds the
// documents that hold all of a term's trigrams (the candidates: on a
// common word, most of the index); the search's own query then reads each
// candidate's row, checks the term on its body, applies the filters and
// scores it before it sorts and keeps a page. Measured on 10,000 and
// 50,000 documents of ~1 KiB (BenchmarkSearchCommonTerm), FTS5's bm25()
// was most of that time and the body check and the row reads most of the
// rest; the match alone was a few milliseconds. So, on SQLite:
//
//   - newest first, the search reads the match's document numbers until
//     it has enough to choose its way (searchByTime): with fewer than
//     largeSearchMin it has them all, and reads those documents in one
//     query; when the match holds enough candidates (timeWalkFrom), it
//     walks the tenant's documents newest first on the index by time
//     (migration 36) and tests each against the match's rowids, the
//     filters and the body, until it has the page and one more hit
//     (timeWalkSQL); otherwise it reads only the candidates' times (and
//     the columns of the filters, but not the body), sorts them in Go,
//     and checks the bodies and the other filters in that order, a batch
//     at a time, until it has the page and one more hit
//     (candidatesByTime). Each way then scores those hits alone
//     (scorePage). The same hits in the same order, with the same
//     scores: each is the search's own conditions on documents in the
//     final order, and the score is bm25()'s over the same index in the
//     same transaction.
//   - by rank, every candidate's score is needed (the index has no
//     positions, migration 32, so a document's frequency of a trigram is
//     only in its body). The match's document numbers are read first, up
//     to rankFewMax: none, and the search ends there (without the
//     index's statistics); fewer, and those documents are read by their
//     numbers and scored in Go (rankFew); otherwise the search's own
//     query runs, scoring with the dialect's Rank (search_rank.go), which
//     gives bm25()'s value without its second reading of the body.
//
// A term in few documents runs the match once either way: its cost is
// the match, bm25()'s statistics and its few rows. (A separate count of
// the candidates, which chose the way before, ran the match a second
// time and made such a search up to twice as slow.)
//
// postgresLarge: PostgreSQL's search is its own query, whatever the
// number of candidates (searchLarge returns at once: no count, no second
// match). Ranked, ts_rank needs every candidate's tsvector. Newest first,
// SQLite's steps of reading the candidates' keys and checking them a
// batch at a time (candidateKeysSQL and checkBatchSQL keep PostgreSQL's
// form) were turned off (c88f222) because once ANALYZE had run the
// planner answered the candidates' keys with a sequential scan computing
// sessionstore_trigrams of every row (18 s on 3,000 documents). Since
// migration 37 gives the function its cost, every statement of theirs
// keeps the trigram index after ANALYZE, but they were not faster than
// the search's own query, which the same step made faster too: on 10,000
// documents after ANALYZE (BenchmarkSearchCommonTerm, load 3.5-4.4,
// directional) 68 against 63 ms for the common term, 37 against 13 ms
// filtered to one session, 12 against 40 ms for messages only, and 15
// against 2 ms for a rare term. They stay off.

// largeSearchMin is the number of the match's candidates from which a
// search newest first checks them in the order of their times (or walks
// the index by time); below it, it reads them all in one query.
const largeSearchMin = 1000

// rankFewMax is the number of the match's candidates below which a
// search by rank reads them by their numbers and scores them in Go
// (rankFew) rather than run the match again in its own query. Per
// candidate the two cost about the same (a row read, a body scored); the
// second match costs its fixed part again (a seek of each trigram in each
// segment of the index), which is most of a search of a term in few
// documents, while reading every candidate's number first costs a row
// handed to Go each, which a term in many documents pays for nothing.
const rankFewMax = 128

// rankFewWhole is the number of candidates up to which rankFew reads
// them whole in one statement rather than their keys and bodies first
// and then the page's rows (a second statement, and the page's rows read
// twice).
const rankFewWhole = 64

// largeSearchBatch is the first batch of candidates a search newest first
// checks; each next batch is twice as large (up to largeSearchBatchMax),
// so that a filter that rejects most candidates costs few statements.
const (
	largeSearchBatch    = 64
	largeSearchBatchMax = 4096
)

// searchLarge returns the first q.Limit+1 hits of the index for search q
// (long terms, the cursor applied, the items not yet folded left to the
// caller), and true, when it has a faster way than searchSQL's query to
// them; otherwise false, and the caller runs that query. Each way runs
// the index's match of the terms (all of their trigrams) once but for the
// walk by time (two passes, the first one stopped at timeWalkFrom's
// number; see searchByTime), and scores with the index's statistics
// (ftsBM25: each phrase's document count, which bm25() reads too).
func (s *Store) searchLarge(tx Tx, q store.SearchQuery, long, short []string, stale bool) ([]searchRow, bool, error) {
	if s.postgres() {
		return nil, false, nil // see postgresLarge
	}
	switch q.Order {
	case store.SearchByRank:
		if s.d.Rank == nil || !asciiTerms(long) {
			return nil, false, nil
		}
		// The match's documents first, up to rankFewMax (matchDocs):
		// none, and the search has no hit in the index (nor reads its
		// statistics); fewer, and they are every candidate (rankFew).
		most := rankFewMax
		if s.cfg.LargeSearchMin > 0 {
			most = s.cfg.LargeSearchMin
		}
		docs, err := s.matchDocs(tx, long, most)
		if err != nil {
			return nil, false, err
		}
		if len(docs) == 0 {
			return nil, true, nil
		}
		if len(docs) < most {
			rows, err := s.rankFew(tx, q, long, short, stale, docs)
			return rows, true, err
		}
		// Every candidate's score is needed: searchSQL's query, scoring
		// with the dialect's Rank (search_rank.go) from the index's
		// statistics, whatever the number of candidates: on a few it
		// spares bm25()'s reading of each hit's body as it does on many.
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
		if err := tx.Query(query, args, scanSearchRows(&rows, q.IncludeEvents)); err != nil {
			return nil, false, err
		}
		return rows, true, nil
	case store.SearchByTime:
		rows, err := s.searchByTime(tx, q, long, short, stale)
		if err != nil {
			return nil, false, err
		}
		return rows, true, s.scorePage(tx, long, rows)
	}
	return nil, false, nil
}

// rankFew returns the first q.Limit+1 hits of search q by rank among
// docs, every candidate of the index's match (a term in few documents),
// without running the match again: the candidates that pass the search's
// other conditions are read by their numbers, scored as searchSQL scores
// them (scorePage), sorted and cut after the cursor. With no more
// candidates than twice the page or rankFewWhole, their rows are read
// whole in one statement (checkBatchSQL); with more, their keys and
// bodies only, and then the page's rows.
func (s *Store) rankFew(tx Tx, q store.SearchQuery, long, short []string, stale bool, docs []int64) ([]searchRow, error) {
	if len(docs) <= max(2*(q.Limit+1), rankFewWhole) {
		all := q
		all.Cursor = "" // a cursor of scores: applied below
		query, args, err := s.checkBatchSQL(all, long, short, stale, docs, len(docs), true)
		if err != nil {
			return nil, err
		}
		var rows []searchRow
		if err := tx.Query(query, args, scanSearchRows(&rows, q.IncludeEvents)); err != nil {
			return nil, err
		}
		if err := s.scorePage(tx, long, rows); err != nil {
			return nil, err
		}
		return rankPage(rows, q), nil
	}
	list, err := s.d.ListArg(docs)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(`SELECT d.doc, d.at_us, d.body FROM search_docs AS d NOT INDEXED WHERE ` + s.d.InList("d.doc"))
	args, err := s.docConditions(&b, []any{list}, q, long, short, stale)
	if err != nil {
		return nil, err
	}
	var hits []searchRow
	if err := tx.Query(b.String(), args, func(r Rows) error {
		var h searchRow
		if err := r.Scan(&h.doc, &h.atUS, &h.body); err != nil {
			return err
		}
		hits = append(hits, h)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := s.scorePage(tx, long, hits); err != nil {
		return nil, err
	}
	hits = rankPage(hits, q)
	if len(hits) == 0 {
		return nil, nil
	}
	// The page's rows, in the order of their scores.
	page := make([]int64, len(hits))
	for i, h := range hits {
		page[i] = h.doc
	}
	all := q
	all.Cursor = "" // the page is past it
	query, args, err := s.checkBatchSQL(all, long, short, stale, page, len(page), true)
	if err != nil {
		return nil, err
	}
	var read []searchRow
	if err := tx.Query(query, args, scanSearchRows(&read, q.IncludeEvents)); err != nil {
		return nil, err
	}
	byDoc := make(map[int64]searchRow, len(read))
	for _, r := range read {
		byDoc[r.doc] = r
	}
	rows := make([]searchRow, 0, len(hits))
	for _, h := range hits {
		r, ok := byDoc[h.doc]
		if !ok {
			continue // not possible in one snapshot: the same conditions
		}
		r.score = h.score
		rows = append(rows, r)
	}
	return rows, nil
}

// rankPage returns the first q.Limit+1 of rows (scored) by rank after
// q's cursor.
func rankPage(rows []searchRow, q store.SearchQuery) []searchRow {
	if q.Cursor != "" {
		c, _ := store.DecodeSearchCursor(q.Cursor) // validated by Normalize
		rows = slices.DeleteFunc(rows, func(r searchRow) bool { return !afterSearchCursor(r, store.SearchByRank, c) })
	}
	sortSearchRows(rows, store.SearchByRank)
	return rows[:min(len(rows), q.Limit+1)]
}

// scanSearchRows returns a Query callback that appends each row of
// searchColumns (with the events' when events) and a score to rows.
func scanSearchRows(rows *[]searchRow, events bool) func(r Rows) error {
	return func(r Rows) error {
		var row searchRow
		if err := row.scan(r, events); err != nil {
			return err
		}
		*rows = append(*rows, row)
		return nil
	}
}

// searchByTime returns the first q.Limit+1 hits of search q newest first
// (SQLite), their scores left at 0. The match's document numbers are read
// first, up to the number of them that chooses the way (matchDocs), in
// the same statement that counts them:
//
//   - fewer than largeSearchMin: a term in few documents. Those
//     documents are all of the candidates; one query reads them
//     (checkBatchSQL, with the cursor), with no second match.
//   - timeWalkFrom's number or more: the walk by time (timeWalkSQL).
//   - otherwise the candidates' keys, read from the documents found
//     (candidatesByTime), again with no second match.
func (s *Store) searchByTime(tx Tx, q store.SearchQuery, long, short []string, stale bool) ([]searchRow, error) {
	most := largeSearchMin
	if s.cfg.LargeSearchMin > 0 {
		most = s.cfg.LargeSearchMin
	}
	// The index of documents by time is walked when the match holds
	// enough of them (timeWalkFrom).
	walkFrom := 0
	var err error
	switch {
	case s.cfg.SearchTimeWalk > 0:
		walkFrom = 1
	case s.cfg.SearchTimeWalk == 0:
		if walkFrom, err = s.timeWalkFrom(tx, q.Limit); err != nil {
			return nil, err
		}
	}
	docs, err := s.matchDocs(tx, long, max(most, walkFrom))
	if err != nil {
		return nil, err
	}
	n := len(docs) // every candidate when n < max(most, walkFrom)
	var rows []searchRow
	switch {
	case n < most:
		if n == 0 {
			return nil, nil
		}
		query, args, err := s.checkBatchSQL(q, long, short, stale, docs, q.Limit+1, true)
		if err != nil {
			return nil, err
		}
		if err := tx.Query(query, args, scanSearchRows(&rows, q.IncludeEvents)); err != nil {
			return nil, err
		}
	case walkFrom > 0 && n >= walkFrom:
		// The tenant's documents newest first, each tested against the
		// match, until the page and one more hit.
		query, args, err := s.timeWalkSQL(q, long, short, stale)
		if err != nil {
			return nil, err
		}
		if err := tx.Query(query, args, scanSearchRows(&rows, q.IncludeEvents)); err != nil {
			return nil, err
		}
	default:
		if n >= max(most, walkFrom) {
			docs = nil // not all of them: the keys from the match
		}
		if rows, err = s.candidatesByTime(tx, q, long, short, stale, docs); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// errEnoughDocs stops matchDocs's reading of the match.
var errEnoughDocs = errors.New("sqlcore: enough documents")

// matchDocs returns the documents the index finds for long terms (all of
// their trigrams), in the index's order, stopping at most (SQLite): all
// of them when it returns fewer. Rows are read until most rather than
// cut by a LIMIT, so that the statement's text and plan hold for every
// most.
func (s *Store) matchDocs(tx Tx, long []string, most int) ([]int64, error) {
	var docs []int64
	err := tx.Query(`SELECT rowid FROM search_fts WHERE search_fts MATCH ?`, []any{ftsMatch(long)}, func(r Rows) error {
		var doc int64
		if err := r.Scan(&doc); err != nil {
			return err
		}
		docs = append(docs, doc)
		if len(docs) >= most {
			return errEnoughDocs
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnoughDocs) {
		return nil, err
	}
	return docs, nil
}

// scorePage sets the score of each of rows (hits of the index for long
// terms, SQLite) as searchSQL scores them: from the index's statistics
// (ftsBM25) and each body, in Go (RankScore), for the bodies and terms of
// ASCII characters; with bm25() (scoresSQL) for the others.
func (s *Store) scorePage(tx Tx, long []string, rows []searchRow) error {
	if len(rows) == 0 {
		return nil
	}
	var left []int64
	if s.d.Rank != nil && asciiTerms(long) {
		bm, err := s.ftsBM25(tx, long)
		if err != nil {
			return err
		}
		arg, ok := rankArg(bm)
		for i := range rows {
			if ok {
				if v, ok := RankScore(rows[i].body, arg); ok {
					rows[i].score = v
					continue
				}
			}
			left = append(left, rows[i].doc)
		}
	} else {
		for _, r := range rows {
			left = append(left, r.doc)
		}
	}
	if len(left) == 0 {
		return nil
	}
	// The others' scores, from the same index in the same transaction.
	query, args, err := s.scoresSQL(long, left)
	if err != nil {
		return err
	}
	scores := make(map[int64]float64, len(left))
	if err := tx.Query(query, args, func(r Rows) error {
		var doc int64
		var score float64
		if err := r.Scan(&doc, &score); err != nil {
			return err
		}
		scores[doc] = score
		return nil
	}); err != nil {
		return err
	}
	for i := range rows {
		if v, ok := scores[rows[i].doc]; ok {
			rows[i].score = v
		}
	}
	return nil
}

// asciiTerms reports whether every term is of ASCII characters, those
// whose trigrams the dialect's Rank scores (rankArg).
func asciiTerms(terms []string) bool {
	for _, t := range terms {
		for i := 0; i < len(t); i++ {
			if t[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}

// candidatesByTime returns the first q.Limit+1 hits of search q newest
// first from the match's candidates (docs when not nil: every one of
// them): their keys read and sorted, then checked a batch at a time in
// that order.
func (s *Store) candidatesByTime(tx Tx, q store.SearchQuery, long, short []string, stale bool, docs []int64) ([]searchRow, error) {
	// The candidates' keys, in the search's order.
	type key struct{ doc, at int64 }
	var keys []key
	query, args, err := s.candidateKeysSQL(q, long, docs)
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
		part := make([]int64, 0, batch)
		for _, k := range keys[start:min(start+batch, len(keys))] {
			part = append(part, k.doc)
		}
		query, args, err := s.checkBatchSQL(q, long, short, stale, part, q.Limit+1-len(rows), false)
		if err != nil {
			return nil, err
		}
		if err := tx.Query(query, args, scanSearchRows(&rows, q.IncludeEvents)); err != nil {
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
// for search q: its conditions (docConditions) and the order, limited to
// limit rows. It returns args with theirs appended.
func (s *Store) timeOrderedHits(b *strings.Builder, args []any, q store.SearchQuery, long, short []string, stale bool, limit int) ([]any, error) {
	args, err := s.docConditions(b, args, q, long, short, stale)
	if err != nil {
		return nil, err
	}
	b.WriteString(` ORDER BY d.at_us DESC, d.doc DESC LIMIT ?`)
	return append(args, limit), nil
}

// docConditions writes the conditions of search q on a document d after
// the index's match: its filters, each long term checked on the body, and
// the documents of queued keys left out when stale. It returns args with
// theirs appended.
func (s *Store) docConditions(b *strings.Builder, args []any, q store.SearchQuery, long, short []string, stale bool) ([]any, error) {
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
	return args, nil
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

// candidateKeysSQL returns the query of the documents (doc, at_us) that
// the index finds for search q's long terms (docs when not nil: every one
// of them, so the match is not run again) and that pass its conditions on
// the documents' columns (searchColumnFilters) and its cursor (newest
// first), without reading their bodies.
func (s *Store) candidateKeysSQL(q store.SearchQuery, long []string, docs []int64) (string, []any, error) {
	var b strings.Builder
	var args []any
	if docs != nil {
		list, err := s.d.ListArg(docs)
		if err != nil {
			return "", nil, err
		}
		b.WriteString(`SELECT d.doc, d.at_us FROM search_docs AS d WHERE ` + s.d.InList("d.doc"))
		args = append(args, list)
	} else if s.postgres() {
		b.WriteString(`SELECT d.doc, d.at_us FROM search_docs AS d WHERE TRUE`)
		for _, t := range long {
			match, arg := s.trigramMatch(t)
			b.WriteString(` AND ` + match)
			args = append(args, arg)
		}
	} else {
		b.WriteString(`SELECT d.doc, d.at_us FROM search_fts JOIN search_docs AS d ON d.doc = search_fts.rowid WHERE search_fts MATCH ?`)
		args = append(args, ftsMatch(long))
	}
	args, err := s.searchColumnFilters(&b, args, q)
	if err != nil {
		return "", nil, err
	}
	args = afterTimeCursor(&b, args, q.Cursor)
	return b.String(), args, nil
}

// afterTimeCursor appends to b the condition of a newest-first cursor on
// the documents d (those after it in the order at_us DESC, doc DESC), and
// its arguments to args; nothing without a cursor.
func afterTimeCursor(b *strings.Builder, args []any, cursor string) []any {
	if cursor == "" {
		return args
	}
	c, _ := store.DecodeSearchCursor(cursor) // validated by Normalize
	b.WriteString(` AND (d.at_us < ? OR (d.at_us = ? AND d.doc < ?))`)
	return append(args, c.AtMicros, c.AtMicros, c.Doc)
}

// checkBatchSQL returns the query of the rows of search q (newest first,
// at most limit) among documents docs: searchSQL's conditions but the
// index's match (docs are the index's candidates), the score left at 0
// (scoresSQL's). Each document is read by its number (NOT INDEXED,
// SQLite: else the planner walks the tenant's documents by time, testing
// each against the list, to spare a sort of a few rows; on a batch of
// old documents that walk read every newer entry of the index first,
// TestSearchCheckBatchPlan). With all (docs are every candidate of a
// term in few documents, in no order), the cursor is applied too;
// without, docs are a batch of keys already past the cursor.
func (s *Store) checkBatchSQL(q store.SearchQuery, long, short []string, stale bool, docs []int64, limit int, all bool) (string, []any, error) {
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
	from := `search_docs AS d`
	if !s.postgres() {
		from += ` NOT INDEXED`
	}
	b.WriteString(`SELECT ` + cols + `, 0.0 AS score FROM ` + from + join + ` WHERE ` + s.d.InList("d.doc"))
	args := []any{list}
	if all {
		args = afterTimeCursor(&b, args, q.Cursor)
	}
	args, err = s.timeOrderedHits(&b, args, q, long, short, stale, limit)
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
	long, short := splitTerms(store.SearchTerms(q.Query))
	if len(long) == 0 || s.postgres() {
		return "", nil, errors.New("sqlcore: no walk of the index by time for this search")
	}
	return s.timeWalkSQL(q, long, short, true)
}

// SearchCheckBatchSQL returns the query (and its arguments) with which a
// search q newest first checks a batch of the match's candidates docs,
// already sorted newest first (candidatesByTime's checkBatchSQL), on
// SQLite, for the backend's query plan tests; q is normalized first, and
// its terms must include one long enough for the index.
func (s *Store) SearchCheckBatchSQL(q store.SearchQuery, docs []int64) (string, []any, error) {
	q, err := q.Normalize()
	if err != nil {
		return "", nil, err
	}
	long, short := splitTerms(store.SearchTerms(q.Query))
	if len(long) == 0 || s.postgres() {
		return "", nil, errors.New("sqlcore: no batch of candidates for this search")
	}
	return s.checkBatchSQL(q, long, short, true, docs, q.Limit+1, false)
}
