package sqlcore

import (
	"context"
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// searchSource describes the content table of one kind of searchable item:
// how its rows pair with their search_docs rows, its key (for batches) and
// the column whose no-op update makes its trigger index the row again.
type searchSource struct {
	kind  store.SearchKind
	table string
	// join is the condition pairing content row c with index row d.
	join string
	// key is the content table's key, in the order batches walk it.
	key []string
	// touch is the column a reindex sets to itself.
	touch string
}

var searchSources = []searchSource{
	{store.SearchMessage, "conversation_messages",
		`d.kind = 'message' AND d.session_pk = 0 AND d.owner = c.session_id AND d.pos = c.seq AND d.ref = ''`,
		[]string{"session_id", "seq"}, "content"},
	{store.SearchEvent, "agent_events",
		`d.kind = 'event' AND d.session_pk = c.session_pk AND d.owner = '' AND d.pos = c.seq AND d.ref = ''`,
		[]string{"session_pk", "seq"}, "data"},
	{store.SearchTrace, "conversation_trace_events",
		`d.kind = 'trace' AND d.session_pk = 0 AND d.owner = c.session_id AND d.pos = c.seq AND d.ref = ''`,
		[]string{"session_id", "seq"}, "name"},
	{store.SearchArtifact, "conversation_artifacts",
		`d.kind = 'artifact' AND d.session_pk = 0 AND d.owner = c.session_id AND d.pos = 0 AND d.ref = c.uri`,
		[]string{"session_id", "uri"}, "tool_name"},
	{store.SearchRun, "conversation_runs",
		`d.kind = 'run' AND d.session_pk = 0 AND d.owner = c.session_id AND d.pos = 0 AND d.ref = c.run_id`,
		[]string{"session_id", "run_id"}, "status"},
}

// CheckSearchIndex compares the index with the content, from one snapshot
// (see store.Searcher).
func (s *Store) CheckSearchIndex(ctx context.Context) (store.SearchIndexReport, error) {
	// The queue first (search_fold.go): an item written before the call
	// and not folded yet is neither missing nor an orphan.
	if _, err := s.prepareSearch(ctx); err != nil {
		return store.SearchIndexReport{}, err
	}
	var rep store.SearchIndexReport
	err := s.readTx(ctx, func(tx Tx) error {
		rep = store.SearchIndexReport{IndexOK: true}
		var docs int64
		for _, src := range searchSources {
			k := store.SearchIndexKind{Kind: src.kind}
			// A sealed row is an item when it has a document (the search
			// opt-in wrote one), and never missing (search_sealed.go).
			items, missing := `SELECT count(*) FROM `+src.table, ``
			if sealed := sealedRows[src.kind]; sealed != "" {
				items = `SELECT count(*) FROM ` + src.table + ` AS c WHERE NOT (` + sealed + `) OR EXISTS (SELECT 1 FROM search_docs AS d WHERE ` + src.join + `)`
				missing = ` AND NOT (` + sealed + `)`
			}
			if err := tx.Scan(items, nil, &k.Items); err != nil {
				return err
			}
			if err := tx.Scan(`SELECT count(*) FROM search_docs WHERE kind = ?`, []any{string(src.kind)}, &k.Indexed); err != nil {
				return err
			}
			if err := tx.Scan(`SELECT count(*) FROM `+src.table+` AS c WHERE NOT EXISTS (SELECT 1 FROM search_docs AS d WHERE `+src.join+`)`+missing, nil, &k.Missing); err != nil {
				return err
			}
			if err := tx.Scan(`SELECT count(*) FROM search_docs AS d WHERE d.kind = ? AND NOT EXISTS (SELECT 1 FROM `+src.table+` AS c WHERE `+src.join+`)`, []any{string(src.kind)}, &k.Orphans); err != nil {
				return err
			}
			docs += k.Indexed
			rep.Kinds = append(rep.Kinds, k)
		}
		var all int64
		if err := tx.Scan(`SELECT count(*) FROM search_docs`, nil, &all); err != nil {
			return err
		}
		if all != docs {
			rep.IndexOK = false
			rep.IndexDetail = "index rows of unknown kinds"
		}
		if !s.postgres() {
			// Every row of search_docs has one entry in the FTS index.
			var fts int64
			if err := tx.Scan(`SELECT count(*) FROM search_fts_docsize`, nil, &fts); err != nil {
				return err
			}
			if fts != all {
				rep.IndexOK = false
				rep.IndexDetail = "the full-text index does not hold every index row"
			}
		}
		return nil
	})
	return rep, err
}

// Reindex rebuilds the index from the content in batches (see
// store.Searcher): every content row is updated to itself, which makes its
// trigger queue its key (migration 27), index rows without content are
// removed, and the queue is folded in (search_fold.go). On SQLite, when the FTS5 index does not hold exactly the rows
// of search_docs, it is rebuilt first (in one transaction).
func (s *Store) Reindex(ctx context.Context, req store.ReindexRequest) (store.ReindexResult, error) {
	if req.Batch < 0 {
		return store.ReindexResult{}, store.Invalid("batch", "negative")
	}
	if req.Batch == 0 {
		req.Batch = 1000
	}
	var res store.ReindexResult
	if _, err := s.prepareSearch(ctx); err != nil { // search_fold.go
		return res, err
	}
	if !s.postgres() {
		rep, err := s.CheckSearchIndex(ctx)
		if err != nil {
			return res, err
		}
		if !rep.IndexOK {
			if err := s.write(ctx, func(tx Tx) error {
				if _, err := tx.Exec(`INSERT INTO search_fts (search_fts) VALUES ('rebuild')`); err != nil {
					return err
				}
				// A rebuild starts the structure record's write counter
				// again; setting automerge to its value moves the
				// record's cookie, so that the index's state after the
				// rebuild is named by bytes no state before it had
				// (search_stats.go).
				var merge int64
				if err := tx.Scan(`SELECT coalesce((SELECT v FROM search_fts_config WHERE k = 'automerge'), 4)`, nil, &merge); err != nil {
					return err
				}
				_, err := tx.Exec(`INSERT INTO search_fts (search_fts, rank) VALUES ('automerge', ?)`, merge)
				return err
			}); err != nil {
				return res, err
			}
			s.stats.clear()
			res.Batches++
		}
	}
	for _, src := range searchSources {
		keys := strings.Join(src.key, ", ")
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(src.key)), ", ")
		first := `SELECT ` + keys + ` FROM ` + src.table + ` ORDER BY ` + keys + ` LIMIT 1`
		next := `SELECT ` + keys + ` FROM ` + src.table + ` WHERE (` + keys + `) > (` + marks + `) ORDER BY ` + keys + ` LIMIT 1 OFFSET ?`
		last := `SELECT ` + keys + ` FROM ` + src.table + ` ORDER BY ` + strings.Join(src.key, " DESC, ") + ` DESC LIMIT 1`
		update := `UPDATE ` + src.table + ` SET ` + src.touch + ` = ` + src.touch +
			` WHERE (` + keys + `) >= (` + marks + `) AND (` + keys + `) <= (` + marks + `)`
		count := `SELECT count(*) FROM ` + src.table + ` WHERE (` + keys + `) >= (` + marks + `) AND (` + keys + `) <= (` + marks + `)`
		var from []any
		for {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			var n int64
			done := false
			err := s.write(ctx, func(tx Tx) error {
				n, done = 0, false
				lo := make([]any, len(src.key))
				hi := make([]any, len(src.key))
				ptrs := func(v []any) []any {
					p := make([]any, len(v))
					for i := range v {
						p[i] = &v[i]
					}
					return p
				}
				var err error
				if from == nil {
					err = tx.Scan(first, nil, ptrs(lo)...)
				} else {
					err = tx.Scan(next, append(append([]any{}, from...), 0), ptrs(lo)...)
				}
				if isNoRows(err) {
					done = true
					return nil
				}
				if err != nil {
					return err
				}
				if req.Batch == 1 {
					copy(hi, lo)
				} else {
					err = tx.Scan(next, append(append([]any{}, lo...), req.Batch-2), ptrs(hi)...)
				}
				if isNoRows(err) {
					err = tx.Scan(last, nil, ptrs(hi)...)
				}
				if err != nil {
					return err
				}
				args := append(append([]any{}, lo...), hi...)
				if err := tx.Scan(count, args, &n); err != nil {
					return err
				}
				if _, err := tx.Exec(update, args...); err != nil {
					return err
				}
				from = hi
				return nil
			})
			if err != nil {
				return res, err
			}
			if done {
				break
			}
			res.Items += n
			res.Batches++
			if req.Progress != nil {
				req.Progress(res.Items)
			}
		}
		orphans := `DELETE FROM search_docs WHERE doc IN (SELECT d.doc FROM search_docs AS d WHERE d.kind = ? AND NOT EXISTS (SELECT 1 FROM ` +
			src.table + ` AS c WHERE ` + src.join + `) LIMIT ?)`
		for {
			var n int64
			err := s.write(ctx, func(tx Tx) error {
				r, err := tx.Exec(orphans, string(src.kind), req.Batch)
				if err != nil {
					return err
				}
				n, err = r.RowsAffected()
				return err
			})
			if err != nil {
				return res, err
			}
			if n == 0 {
				break
			}
			res.Orphans += n
			res.Batches++
		}
	}
	// Every key queued above (and before) is folded in, in batches.
	folded, err := s.foldSearch(ctx, 0, req.Batch, "", 0)
	if err != nil {
		return res, err
	}
	res.Batches += (folded + int64(req.Batch) - 1) / int64(req.Batch)
	// A fold leaves the documents of sealed content alone; the opt-in's
	// missing ones (a store without the opt-in wrote the rows) are
	// written here.
	if err := s.reindexSealedEvents(ctx, req.Batch, &res); err != nil { // search_sealed.go
		return res, err
	}
	if err := s.reindexSealedMessages(ctx, req.Batch, &res); err != nil { // search_sealed.go
		return res, err
	}
	return res, nil
}
