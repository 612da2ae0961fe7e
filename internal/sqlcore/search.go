package sqlcore

import (
	"context"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// The search index lives in search_docs (see migrations/00014): one row per
// searchable item, folded in after the content's commit (migration 27,
// search_fold.go). On SQLite search_fts is an FTS5
// trigram index over search_docs.body; on PostgreSQL a GIN index of
// pg_trgm over lower(body) where the extension could be used (migration
// 42), else a GIN index over sessionstore_trigrams(body).

const searchColumns = `d.doc, d.kind, d.session_pk, d.owner, d.session_id, d.app, d.user_id, d.pos, d.ref, d.role, d.at_us, d.body`

// searchRow is a row of searchColumns plus the score.
type searchRow struct {
	doc, sessionPK, pos, atUS                int64
	kind, owner, session, app, user, ref, rl string
	body                                     string
	score                                    float64
	// The event of an event hit (SearchQuery.IncludeEvents).
	evID, evInvocation *string
	evTS               *int64
	evData             []byte
}

func (r *searchRow) scan(rows Rows, events bool) error {
	dest := []any{&r.doc, &r.kind, &r.sessionPK, &r.owner, &r.session, &r.app, &r.user,
		&r.pos, &r.ref, &r.rl, &r.atUS, &r.body}
	if events {
		dest = append(dest, &r.evID, &r.evInvocation, &r.evTS, &r.evData)
	}
	return rows.Scan(append(dest, &r.score)...)
}

// searchEventColumns are the columns of an event hit's event, NULL for
// other hits, joined as e.
const searchEventColumns = `, e.event_id AS ev_id, e.invocation_id AS ev_invocation, e.ts_us AS ev_ts, e.data AS ev_data`

const searchEventJoin = ` LEFT JOIN agent_events AS e ON d.kind = 'event' AND e.session_pk = d.session_pk AND e.seq = d.pos`

// liveEventDocs keeps the index rows of events to those of live agent
// sessions (retired = 0).
const liveEventDocs = ` AND (d.kind <> 'event' OR EXISTS (SELECT 1 FROM agent_sessions AS a WHERE a.pk = d.session_pk AND a.retired = 0))`

// notRemovedConvDocs leaves out the index rows of a conversation that a
// sweep is removing over several transactions (sweep_staged.go): its rows,
// and so its documents, go a batch at a time, but it is gone for every
// read from the first one.
const notRemovedConvDocs = ` AND (d.kind = 'event' OR NOT EXISTS (SELECT 1 FROM sweep_removals AS r WHERE r.kind = 'conversation' AND r.id = d.owner))`

func (s *Store) postgres() bool { return s.d.Name == "postgres" }

// SetTrigramExtension tells the Store that its PostgreSQL search index is
// pg_trgm's (migration 42) rather than sessionstore_trigrams'. Call it
// before the Store is used, with what the backend found at open.
func (s *Store) SetTrigramExtension(on bool) { s.trgm = on }

// likeEscaper escapes a term for a LIKE pattern (backslash, LIKE's
// default escape character, and the two wildcards).
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// trigramMatch returns PostgreSQL's condition that its trigram index
// matches term on document d's body, with the argument to bind to its
// parameter: for pg_trgm's index (over lower(body)), a LIKE of the
// lower-cased term anywhere in the lower-cased body, which is the search's
// check of the term itself (Contains) in the index's terms; for
// sessionstore_trigrams', the containment of the term's trigrams, which
// that check implies.
func (s *Store) trigramMatch(term string) (string, any) {
	if s.trgm {
		return `lower(d.body) LIKE lower(?)`, "%" + likeEscaper.Replace(term) + "%"
	}
	return `sessionstore_trigrams(d.body) @> sessionstore_trigrams(?)`, term
}

// longTermMatch returns PostgreSQL's conditions that document d holds
// term, a term of three characters or more, with their arguments: the
// index's match and the check of the term itself (Contains). pg_trgm's
// match is that check (the same lower-cased text holds the same
// lower-cased term), so it goes alone: checking again would fold the case
// of every candidate's body twice.
func (s *Store) longTermMatch(term string) (string, []any) {
	match, arg := s.trigramMatch(term)
	if s.trgm {
		return match, []any{arg}
	}
	return match + ` AND ` + s.d.Contains("d.body", "?"), []any{arg, term}
}

// splitTerms splits a query's terms into those long enough for the
// index (long) and the others (short), each in the query's order.
func splitTerms(terms []string) (long, short []string) {
	for _, t := range terms {
		if utf8.RuneCountInString(t) >= store.MinIndexedTerm {
			long = append(long, t)
		} else {
			short = append(short, t)
		}
	}
	return long, short
}

// Search runs a search query (see store.Searcher).
func (s *Store) Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	q, err := q.Normalize()
	if err != nil {
		return store.SearchResult{}, err
	}
	stale, err := s.prepareSearch(ctx) // search_fold.go
	if err != nil {
		return store.SearchResult{}, err
	}
	terms := store.SearchTerms(q.Query)
	long, short := splitTerms(terms)
	var res store.SearchResult
	var rows []searchRow
	err = s.readTx(ctx, func(tx Tx) error {
		if s.d.SearchSetup != "" {
			if _, err := tx.Exec(s.d.SearchSetup); err != nil {
				return err
			}
		}
		if s.cfg.SearchTrace != nil {
			tx = tracedTx{Tx: tx, trace: s.cfg.SearchTrace}
		}
		res, rows = store.SearchResult{}, nil
		query, args, err := s.searchSQL(q, long, short, stale, "")
		if err != nil {
			return err
		}
		plan, err := s.planPending(tx, stale, len(long) == 0) // search_pending.go
		if err != nil {
			return err
		}
		res.Pending = plan.left()
		var floor int64
		if len(long) == 0 {
			res.Scanned = true
			// The newest ScanLimit documents, the items not yet folded
			// (numbered after the index's) among them.
			top := plan.maxDoc
			if plan.match {
				top += int64(plan.count)
			}
			floor = top - int64(q.ScanLimit)
			var older int64
			if floor > 0 {
				if err := tx.Scan(`SELECT count(*) FROM (SELECT 1 FROM search_docs WHERE doc <= ? LIMIT 1) AS o`, []any{floor}, &older); err != nil {
					return err
				}
				if plan.match && plan.count > 0 && floor > plan.maxDoc {
					older = 1 // items not yet folded are older than the floor
				}
			}
			res.Partial = older > 0
			args = append([]any{floor}, args...)
		}
		large := false
		if len(long) > 0 && !s.cfg.EagerSearch {
			// A term in many documents: the page without reading every
			// candidate (search_large.go).
			if rows, large, err = s.searchLarge(tx, q, long, short, stale); err != nil {
				return err
			}
		}
		if !large {
			if err := tx.Query(query, args, func(r Rows) error {
				var row searchRow
				if err := row.scan(r, q.IncludeEvents); err != nil {
					return err
				}
				rows = append(rows, row)
				return nil
			}); err != nil {
				return err
			}
		}
		if plan.match && plan.count > 0 {
			pend, err := s.pendingSearch(tx, plan, q, long, short)
			if err != nil {
				return err
			}
			var c store.SearchCursor
			if q.Cursor != "" {
				c, _ = store.DecodeSearchCursor(q.Cursor) // validated by Normalize
			}
			for _, row := range pend {
				if (len(long) == 0 && row.doc <= floor) || (q.Cursor != "" && !afterSearchCursor(row, q.Order, c)) {
					continue
				}
				rows = append(rows, row)
			}
			sortSearchRows(rows, q.Order)
		}
		if len(rows) > q.Limit {
			rows = rows[:q.Limit]
			last := rows[len(rows)-1]
			c := store.SearchCursor{Order: q.Order, Doc: last.doc}
			if q.Order == store.SearchByTime {
				c.AtMicros = last.atUS
			} else {
				c.Score = last.score
			}
			res.Next = c.Encode()
		}
		res.Hits = make([]store.SearchHit, 0, len(rows))
		for _, row := range rows {
			h := store.SearchHit{
				Kind: store.SearchKind(row.kind), SessionID: row.session, App: row.app, User: row.user,
				Seq: row.pos, Ref: row.ref, Role: row.rl, At: rowcodec.FromMicros(row.atUS), Score: row.score,
				Snippet: store.MakeSnippet(row.body, terms, store.SnippetWidth),
			}
			if row.evID != nil && row.evTS != nil {
				inv := ""
				if row.evInvocation != nil {
					inv = *row.evInvocation
				}
				h.Event = &store.AgentEvent{ID: *row.evID, Seq: row.pos, InvocationID: inv,
					Timestamp: rowcodec.FromMicros(*row.evTS), Data: append([]byte(nil), row.evData...)}
				if err := s.openSealedEvent(ctx, tx, row.sessionPK, h.Event); err != nil { // search_sealed.go
					return err
				}
			}
			if q.Window > 0 && (row.kind == string(store.SearchMessage) || row.kind == string(store.SearchEvent)) {
				if h.Window, err = s.searchWindow(tx, plan, row, q.Window); err != nil {
					return err
				}
			}
			res.Hits = append(res.Hits, h)
		}
		return nil
	})
	if err != nil {
		return store.SearchResult{}, err
	}
	return res, nil
}

// searchSQL returns the query of a search and its arguments. Without long
// terms the query's first parameter (added by the caller) is the doc floor
// of the scan. With stale (a store that could not fold), the documents
// of the queued keys are left out (pendingKeysFilter). With a rank
// parameter (rankArg, SQLite only) a hit's score is the dialect's Rank,
// bm25() where Rank leaves the hit to it.
func (s *Store) searchSQL(q store.SearchQuery, long, short []string, stale bool, rank string) (string, []any, error) {
	var b strings.Builder
	var args []any
	score := "0.0"
	// The page is chosen on (doc, at_us, score) only, so that the sort
	// over every match carries no text; the page's rows are read after.
	const keys = `d.doc AS doc, d.at_us AS at_us`
	cols, join := searchColumns, ""
	if q.IncludeEvents {
		cols += searchEventColumns
		join = searchEventJoin
	}
	switch {
	case len(long) > 0 && !s.postgres():
		score = "-bm25(search_fts)"
		if rank != "" {
			score = `coalesce(` + s.d.Rank("d.body", "?") + `, ` + score + `)`
			args = append(args, rank)
		}
		b.WriteString(`SELECT ` + keys + `, ` + score + ` AS score
FROM search_fts JOIN search_docs AS d ON d.doc = search_fts.rowid
WHERE search_fts MATCH ?`)
		args = append(args, ftsMatch(long))
	case len(long) > 0:
		var rank []string
		for range long {
			rank = append(rank, `plainto_tsquery('simple', ?)`)
		}
		score = `ts_rank(to_tsvector('simple', d.body), ` + strings.Join(rank, " || ") + `)::float8`
		for _, t := range long {
			args = append(args, t)
		}
		b.WriteString(`SELECT ` + keys + `, ` + score + ` AS score
FROM search_docs AS d WHERE TRUE`)
		for _, t := range long {
			cond, targs := s.longTermMatch(t)
			b.WriteString(` AND ` + cond)
			args = append(args, targs...)
		}
	default:
		b.WriteString(`SELECT ` + keys + `, ` + score + ` AS score
FROM search_docs AS d WHERE d.doc > ?`)
	}
	var err error
	if args, err = s.searchFilters(&b, args, q, short); err != nil {
		return "", nil, err
	}
	if len(long) > 0 && !s.postgres() {
		// The index knows which documents hold each trigram, not where
		// (migration 32): keep those that hold the terms themselves.
		for _, t := range long {
			b.WriteString(` AND ` + s.d.Contains("d.body", "?"))
			args = append(args, t)
		}
	}
	if stale {
		b.WriteString(s.pendingKeysFilter())
	}
	inner := b.String()
	var out strings.Builder
	out.WriteString(`SELECT ` + cols + `, h.score FROM (SELECT * FROM (` + inner + `) AS h`)
	if q.Cursor != "" {
		c, _ := store.DecodeSearchCursor(q.Cursor) // validated by Normalize
		if q.Order == store.SearchByTime {
			out.WriteString(` WHERE (h.at_us < ? OR (h.at_us = ? AND h.doc < ?))`)
			args = append(args, c.AtMicros, c.AtMicros, c.Doc)
		} else {
			out.WriteString(` WHERE (h.score < ? OR (h.score = ? AND h.doc < ?))`)
			args = append(args, c.Score, c.Score, c.Doc)
		}
	}
	order := ` ORDER BY h.score DESC, h.doc DESC`
	if q.Order == store.SearchByTime {
		order = ` ORDER BY h.at_us DESC, h.doc DESC`
	}
	out.WriteString(order + ` LIMIT ?) AS h JOIN search_docs AS d ON d.doc = h.doc` + join + order)
	args = append(args, q.Limit+1)
	return out.String(), args, nil
}

// searchFilters writes the conditions of search q on document d but for
// its long terms (each backend's index matches those its way): the
// store's tenant, the short terms, live items only, the kinds and the
// other filters. It returns args with theirs appended.
// The conditions on the document's columns come first, the body's last:
// SQLite tests them in that order, and a filter that rejects a document
// spares the reading of its body.
func (s *Store) searchFilters(b *strings.Builder, args []any, q store.SearchQuery, short []string) ([]any, error) {
	args, err := s.searchColumnFilters(b, args, q)
	if err != nil {
		return nil, err
	}
	// Only live agent sessions' events are found: the events a rewind
	// superseded and those of a deleted session that its forks still read
	// are kept in retired rows (lineage, migration 12), not in a session.
	b.WriteString(liveEventDocs)
	b.WriteString(notRemovedConvDocs)
	for _, t := range short {
		b.WriteString(` AND ` + s.d.Contains("d.body", "?"))
		args = append(args, t)
	}
	return args, nil
}

// searchColumnFilters writes the conditions of searchFilters that read
// document d's own columns but its body: the store's tenant, the kinds
// and the other filters.
func (s *Store) searchColumnFilters(b *strings.Builder, args []any, q store.SearchQuery) ([]any, error) {
	// The store's tenant's documents only (migrations 17 and 18 give
	// every document its session's or conversation's tenant).
	b.WriteString(` AND d.tenant = ?`)
	args = append(args, s.tenant)
	kinds := searchKinds(q)
	if len(kinds) > 0 {
		arg, err := s.d.ListArg(kinds)
		if err != nil {
			return nil, err
		}
		b.WriteString(` AND ` + s.d.InList("d.kind"))
		args = append(args, arg)
	}
	for _, f := range []struct{ col, v string }{{"d.app", q.App}, {"d.user_id", q.User}, {"d.session_id", q.Session}} {
		if f.v != "" {
			b.WriteString(` AND ` + f.col + ` = ?`)
			args = append(args, f.v)
		}
	}
	if !q.Since.IsZero() {
		b.WriteString(` AND d.at_us >= ?`)
		args = append(args, ceilMicros(q.Since))
	}
	if !q.Until.IsZero() {
		b.WriteString(` AND d.at_us < ?`)
		args = append(args, ceilMicros(q.Until))
	}
	return args, nil
}

// searchKinds returns the kinds a query keeps, nil for all.
func searchKinds(q store.SearchQuery) []string {
	var facetKinds []store.SearchKind
	switch q.Facet {
	case "conversations":
		facetKinds = []store.SearchKind{store.SearchMessage, store.SearchTrace, store.SearchArtifact, store.SearchRun}
	case "agent_sessions":
		facetKinds = []store.SearchKind{store.SearchEvent}
	}
	if q.App != "" || q.User != "" {
		// Only agent events have an app and a user.
		facetKinds = intersectKinds(facetKinds, []store.SearchKind{store.SearchEvent})
	}
	kinds := q.Kinds
	if len(facetKinds) > 0 || q.Facet != "" || q.App != "" || q.User != "" {
		if len(kinds) == 0 {
			kinds = facetKinds
		} else {
			kinds = intersectKinds(kinds, facetKinds)
		}
		if len(kinds) == 0 {
			return []string{"-"} // nothing can match; still a valid list
		}
	}
	var out []string
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return out
}

func intersectKinds(a, b []store.SearchKind) []store.SearchKind {
	if a == nil {
		return b
	}
	var out []store.SearchKind
	for _, k := range a {
		for _, l := range b {
			if k == l {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// ftsMatch returns the FTS5 query of the documents that hold every
// trigram of every term (each term has three characters or more), each
// trigram once: the index has no positions (migration 32), so the caller
// checks that the terms themselves occur (Dialect.Contains). The trigram
// tokenizer folds the query's case as it folded the documents'.
func ftsMatch(terms []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, t := range terms {
		r := []rune(t)
		for i := 0; i+3 <= len(r); i++ {
			tri := string(r[i : i+3])
			if !seen[tri] {
				seen[tri] = true
				parts = append(parts, `"`+strings.ReplaceAll(tri, `"`, `""`)+`"`)
			}
		}
	}
	return strings.Join(parts, " AND ")
}

// searchWindow returns the items around a message or event hit. A read
// whose store could not fold reads the index without the documents of
// the items not yet folded, and those items' documents built from their
// content when it matches them directly (plan).
func (s *Store) searchWindow(tx Tx, plan pendingPlan, row searchRow, n int) ([]store.SearchItem, error) {
	var out []store.SearchItem
	keep := func(r Rows) error {
		var it store.SearchItem
		var at int64
		if err := r.Scan(&it.Seq, &it.Role, &at, &it.Text); err != nil {
			return err
		}
		it.At = rowcodec.FromMicros(at)
		if len(it.Text) > store.MaxWindowText {
			cut := store.MaxWindowText
			for cut > 0 && !utf8.RuneStart(it.Text[cut]) {
				cut--
			}
			it.Text = it.Text[:cut]
		}
		out = append(out, it)
		return nil
	}
	const where = ` WHERE d.kind = ? AND d.session_pk = ? AND d.owner = ? AND d.ref = '' AND d.pos BETWEEN ? AND ?`
	args := []any{row.kind, row.sessionPK, row.owner, row.pos - int64(n), row.pos + int64(n)}
	q := `SELECT d.pos, d.role, d.at_us, d.body FROM search_docs AS d` + where
	if plan.stale {
		q += s.pendingKeysFilter()
	}
	if err := tx.Query(q+` ORDER BY d.pos`, args, keep); err != nil {
		return nil, err
	}
	if plan.match && plan.count > 0 {
		q := s.pendingDocsSQL([]string{row.kind}) + `SELECT d.pos, d.role, d.at_us, d.body FROM pd AS d` + where
		if err := tx.Query(q, append(s.pendingKeysArgs(), args...), keep); err != nil {
			return nil, err
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	}
	return out, nil
}

// History returns a user's events across sessions (see store.Searcher).
func (s *Store) History(ctx context.Context, req store.HistoryRequest) (store.Page[store.HistoryItem], error) {
	req, err := req.Normalize()
	if err != nil {
		return store.Page[store.HistoryItem]{}, err
	}
	stale, err := s.prepareSearch(ctx) // search_fold.go
	if err != nil {
		return store.Page[store.HistoryItem]{}, err
	}
	// The conditions on document d but for the cursor (whose document
	// numbers the items not yet folded get in Go).
	var b strings.Builder
	b.WriteString(` AND d.app = ? AND d.user_id = ? AND d.kind = 'event' AND d.tenant = ?` + liveEventDocs)
	args := []any{req.App, req.User, s.tenant}
	if !req.Since.IsZero() {
		b.WriteString(` AND d.at_us >= ?`)
		args = append(args, ceilMicros(req.Since))
	}
	if !req.Until.IsZero() {
		b.WriteString(` AND d.at_us < ?`)
		args = append(args, ceilMicros(req.Until))
	}
	if len(req.Roles) > 0 {
		arg, err := s.d.ListArg(req.Roles)
		if err != nil {
			return store.Page[store.HistoryItem]{}, err
		}
		b.WriteString(` AND ` + s.d.InList("d.role"))
		args = append(args, arg)
	}
	filters := b.String()
	var c store.SearchCursor
	if req.Cursor != "" {
		c, _ = store.DecodeSearchCursor(req.Cursor) // validated by Normalize
	}
	type item struct {
		it      store.HistoryItem
		doc, at int64
		pk      int64
	}
	var items []item
	scan := func(base int64) func(r Rows) error {
		return func(r Rows) error {
			var x item
			var ts int64
			var data []byte
			if err := r.Scan(&x.doc, &x.it.Key.Session, &x.it.Role, &x.at, &x.it.Event.Seq, &x.it.Event.ID, &x.it.Event.InvocationID, &ts, &data, &x.pk); err != nil {
				return err
			}
			x.doc += base
			x.it.Key.App, x.it.Key.User = req.App, req.User
			x.it.Event.Timestamp = rowcodec.FromMicros(ts)
			x.it.Event.Data = append([]byte(nil), data...)
			items = append(items, x)
			return nil
		}
	}
	err = s.readTx(ctx, func(tx Tx) error {
		items = nil
		plan, err := s.planPending(tx, stale, false) // search_pending.go
		if err != nil {
			return err
		}
		q := `SELECT d.doc, d.session_id, d.role, d.at_us, e.seq, e.event_id, e.invocation_id, e.ts_us, e.data, d.session_pk
FROM search_docs AS d JOIN agent_events AS e ON e.session_pk = d.session_pk AND e.seq = d.pos
WHERE 1 = 1` + filters
		if stale {
			q += s.pendingKeysFilter()
		}
		qargs := append([]any(nil), args...)
		if req.Cursor != "" {
			q += ` AND (d.at_us < ? OR (d.at_us = ? AND d.doc < ?))`
			qargs = append(qargs, c.AtMicros, c.AtMicros, c.Doc)
		}
		q += ` ORDER BY d.at_us DESC, d.doc DESC LIMIT ?`
		qargs = append(qargs, req.Limit+1)
		if err := tx.Query(q, qargs, scan(0)); err != nil {
			return err
		}
		if !plan.match || plan.count == 0 {
			return nil
		}
		// The events not yet folded, their documents built as the fold
		// builds them.
		q = s.pendingDocsSQL([]string{string(store.SearchEvent)}) + `SELECT d.n, d.session_id, d.role, d.at_us, d.pos, d.ev_id, coalesce(d.ev_invocation, ''), d.ev_ts, d.ev_data, d.session_pk
FROM pd AS d WHERE 1 = 1` + filters
		n := len(items)
		if err := tx.Query(q, append(s.pendingKeysArgs(), args...), scan(plan.maxDoc)); err != nil {
			return err
		}
		kept := items[:n]
		for _, x := range items[n:] {
			if req.Cursor == "" || x.at < c.AtMicros || (x.at == c.AtMicros && x.doc < c.Doc) {
				kept = append(kept, x)
			}
		}
		items = kept
		sort.SliceStable(items, func(i, j int) bool {
			if items[i].at != items[j].at {
				return items[i].at > items[j].at
			}
			return items[i].doc > items[j].doc
		})
		return nil
	})
	if err != nil {
		return store.Page[store.HistoryItem]{}, err
	}
	var page store.Page[store.HistoryItem]
	if len(items) > req.Limit {
		items = items[:req.Limit]
		last := items[len(items)-1]
		page.Next = store.SearchCursor{Order: store.SearchByTime, AtMicros: last.at, Doc: last.doc}.Encode()
	}
	pks := make([]int64, len(items))
	for i, x := range items {
		page.Items = append(page.Items, x.it)
		pks[i] = x.pk
	}
	for i := range page.Items { // search_sealed.go: indexed by the opt-in
		if err := s.openSealedEvent(ctx, nil, pks[i], &page.Items[i].Event); err != nil {
			return store.Page[store.HistoryItem]{}, err
		}
	}
	if page.Items == nil {
		page.Items = []store.HistoryItem{}
	}
	return page, nil
}

// ceilMicros is the first microsecond at or after t: the index keeps
// times in microseconds (search_docs.at_us), so at_us >= ceilMicros(t)
// selects exactly the items at or after t.
func ceilMicros(t time.Time) int64 {
	us := rowcodec.ToMicros(t)
	if !rowcodec.FromMicros(us).Equal(t) {
		us++
	}
	return us
}

// tracedTx is a search's read transaction with Config.SearchTrace: the
// hook sees each statement that reads rows before it runs.
type tracedTx struct {
	Tx
	trace func(tx Tx, query string, args []any) error
}

func (t tracedTx) Scan(query string, args []any, dest ...any) error {
	if err := t.trace(t.Tx, query, args); err != nil {
		return err
	}
	return t.Tx.Scan(query, args, dest...)
}

func (t tracedTx) Query(query string, args []any, fn func(Rows) error) error {
	if err := t.trace(t.Tx, query, args); err != nil {
		return err
	}
	return t.Tx.Query(query, args, fn)
}
