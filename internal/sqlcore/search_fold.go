package sqlcore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// The search index is folded in after the content's commit (migration 27).
//
// A write of searchable content (a message, an agent event, a trace event,
// an artifact, a run) queues the item's key in search_pending, by trigger,
// in the content's transaction; nothing else of the index is written on
// the write path. foldSearch folds the queue into search_docs (and so the
// full-text index) in batches: each batch is one write transaction that
// reads up to n queue rows, deletes the documents of their keys, writes
// them again from the content as it is now (a key whose content is gone
// keeps no document), and deletes exactly the queue rows it read. A key
// has one document (search_docs_key is unique), a document is built from
// the content, never from the queue, and a queue row goes only with the
// transaction that rebuilt its key: nothing is indexed twice, nothing is
// skipped, whatever crashes when.
//
// Who folds: the store's background indexer (StartIndexer: one at a time
// across the processes sharing the database, under the "search_index"
// row of sweep_lease), every Search and History first (the queue rows
// committed before the call, so a just-acknowledged item is found and a
// deleted one is not), CheckSearchIndex and Reindex. Folders never run two
// at a time: SQLite has one writer, and on PostgreSQL each fold batch
// takes a transaction advisory lock first. A queue row carries its
// content's tenant: on PostgreSQL a store whose role is subject to
// row-level security folds only the keys of its tenant (whose content and
// documents it sees), and leaves the others queued for a store that sees
// them (the library's own role, the tables' owner, sees every row).
//
// A fold batch writes only derived data, so it commits lazily where the
// backend can (LazyWriter): without waiting for the disk. A power failure
// may undo it, whole, with the deletion of its queue rows, so its keys
// are folded again. The document of an agent event is computed by the
// backend's Go functions where it has them (Dialect.EventDocFuncs,
// internal/searchtext), else by the SQL's JSON functions, with the same
// bytes.
//
// Sealed (encrypted) messages and events are not queued on insert; their
// documents are the write path's when the store opts in
// (search_sealed.go). A fold leaves the document of a key whose content is
// sealed alone.

// lockClassSearchFold is the Dialect.LockKeySQL class of fold batches.
const lockClassSearchFold int32 = 0x53524348 // "SRCH"

// DefaultFoldBatch is the number of queue rows a fold batch of a search
// (or a check, or a reindex) reads.
const DefaultFoldBatch = 512

// DefaultIndexerBatch is the number of queue rows a batch of the
// background indexer reads: smaller than a search's, because a fold batch
// holds the one writer (SQLite), and the writes queued behind it (or
// committed with it, group commit) wait for it.
const DefaultIndexerBatch = 64

const (
	foldPendingSQL = `SELECT id, kind FROM search_pending WHERE id <= ? ORDER BY id LIMIT ?`
	foldMaxSQL     = `SELECT coalesce(max(id), 0) FROM search_pending`
	foldLeaseSQL   = `INSERT INTO sweep_lease (name, holder, expires_at_ms) VALUES ('search_index', ?1, ?2)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
		WHERE sweep_lease.holder = excluded.holder OR sweep_lease.expires_at_ms <= ?3
		RETURNING holder`
	foldLeaseDropSQL = `DELETE FROM sweep_lease WHERE name = 'search_index' AND holder = ?`
	foldLeaseReadSQL = `SELECT holder, expires_at_ms FROM sweep_lease WHERE name = 'search_index'`
	// foldLeaseOtherSQL counts a live lease of another holder: an indexer
	// that sees one does not try to fold (no write transaction).
	foldLeaseOtherSQL = `SELECT count(*) FROM sweep_lease WHERE name = 'search_index' AND holder <> ? AND expires_at_ms > ?`
	searchStateSQL    = `SELECT enabled FROM search_state`
)

// The events after the mark (SQLite, migration 31): an inserted agent
// event queues nothing; the folder queues the keys of the events whose id
// is after search_state.events_mark, and moves the mark, in its own
// transaction (queueTail). An event's rowid grows with every insert and
// the file has one writer, so those are exactly the events not yet
// queued; a delete of the events at the top brings the mark down to the
// highest id left (the trigger search_events_mark_ad), so that an id given
// again is after it. PostgreSQL queues by trigger (a sequence's values
// commit out of order).
const (
	// tailProbeSQL tells whether events wait after the mark (and the
	// index is on).
	tailProbeSQL = `SELECT EXISTS (SELECT 1 FROM agent_events WHERE id > (SELECT events_mark FROM search_state))
		AND (SELECT enabled FROM search_state) = 1`
	tailStateSQL = `SELECT events_mark, enabled FROM search_state`
	// tailEndSQL returns the number and the highest id of the first ?2
	// events after the mark ?1.
	tailEndSQL   = `SELECT count(*), coalesce(max(id), 0) FROM (SELECT id FROM agent_events WHERE id > ?1 ORDER BY id LIMIT ?2) AS t`
	tailQueueSQL = `INSERT INTO search_pending (kind, session_pk, owner, pos, ref)
		SELECT 'event', session_pk, '', seq, '' FROM agent_events
		WHERE id > ?1 AND id <= ?2 AND substr(data, 1, 7) <> 'ssenc1:' ORDER BY id`
	tailMarkSQL = `UPDATE search_state SET events_mark = ?`
	// tailMarkTopSQL puts the mark at the last event (SetSearchIndex).
	tailMarkTopSQL = `UPDATE search_state SET events_mark = (SELECT coalesce(max(id), 0) FROM agent_events)`
	// tailQueueMax is the number of events a transaction of queueAllTail
	// takes into the queue.
	tailQueueMax = 8 * DefaultFoldBatch
)

// queueTail queues, in tx, the keys of up to n events after the mark
// (SQLite; nothing on PostgreSQL, nor when the index is off) and moves
// the mark past them. It returns the number of events it passed (sealed
// ones are passed and not queued: their documents are the write path's).
func (s *Store) queueTail(tx Tx, n int) (int, error) {
	if s.postgres() {
		return 0, nil
	}
	var mark int64
	var on bool
	if err := tx.Scan(tailStateSQL, nil, &mark, &on); err != nil {
		return 0, err
	}
	if !on {
		return 0, nil
	}
	var count int
	var end int64
	if err := tx.Scan(tailEndSQL, []any{mark, n}, &count, &end); err != nil {
		return 0, err
	}
	if count == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(tailQueueSQL, mark, end); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(tailMarkSQL, end); err != nil {
		return 0, err
	}
	return count, nil
}

// tailWaiting tells whether events wait after the mark (SQLite).
func (s *Store) tailWaiting(ctx context.Context) (bool, error) {
	if s.postgres() {
		return false, nil
	}
	var waiting bool
	err := s.db.Scan(ctx, tailProbeSQL, nil, &waiting)
	return waiting, err
}

// queueAllTail queues the keys of the events after the mark, up to limit
// events (every one when limit is 0), in transactions of tailQueueMax
// events (SQLite).
func (s *Store) queueAllTail(ctx context.Context, limit int) error {
	waiting, err := s.tailWaiting(ctx)
	if err != nil || !waiting {
		return err
	}
	done := 0
	for limit == 0 || done < limit {
		n := tailQueueMax
		if limit > 0 {
			n = min(n, limit-done)
		}
		var got int
		if err := s.writeDerived(ctx, func(tx Tx) error {
			var err error
			got, err = s.queueTail(tx, n)
			return err
		}); err != nil {
			return err
		}
		done += got
		if got < n {
			return nil
		}
	}
	return nil
}

// plainJSON is the SQLite expression of JSON text expr with the escapes of
// "<", ">" and "&" that encoding/json writes read as the characters, so a
// tool input stored before the store wrote them plain (jsontext) is found
// and shown by its text. PostgreSQL's jsonb renders them plain already.
func plainJSON(expr string) string {
	return `replace(replace(replace(` + expr + `, '\u003c', '<'), '\u003e', '>'), '\u0026', '&')`
}

// EventRoleSQL is the SQLite expression of the role of the search
// document of an agent event whose stored JSON is col: its author, else
// its content's role, else the empty string.
func EventRoleSQL(col string) string {
	return `CASE WHEN json_valid(` + col + `) THEN coalesce(json_extract(` + col + `, '$.author'), json_extract(` + col + `, '$.content.role'), '') ELSE '' END`
}

// EventTextSQL is the SQLite expression of the text of the search
// document of an agent event whose stored JSON is col (see migration 14):
// of each object of its content's parts, in order, the text, the function
// call's name and arguments and the function response's name, those
// present joined by a space, and the non-empty ones joined by a space.
func EventTextSQL(col string) string {
	return `coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(x.value, '$.text'),
                    json_extract(x.value, '$.functionCall.name'),
                    ` + plainJSON(`json_extract(x.value, '$.functionCall.args')`) + `,
                    json_extract(x.value, '$.functionResponse.name')), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(` + col + `) THEN ` + col + ` ELSE '{}' END, '$.content.parts') AS x
                  WHERE x.type = 'object'), '')`
}

// EventRoleFunc and EventTextFunc are the names of the SQL functions of
// one argument, an agent event's stored JSON, that a Dialect with
// EventDocFuncs has (SQLite: Go functions the backend registers, see
// internal/searchtext): the role and the text of the event's search
// document as EventRoleSQL and EventTextSQL compute them, or NULL where
// those expressions must decide.
const (
	EventRoleFunc = "sessionstore_event_doc_role"
	EventTextFunc = "sessionstore_event_doc_text"
)

// foldPendingKey joins queue row p with index row d.
const foldPendingKey = `p.kind = d.kind AND p.session_pk = d.session_pk AND p.owner = d.owner AND p.pos = d.pos AND p.ref = d.ref`

// foldStmt is a statement of a fold batch: one that writes the documents
// of a kind of item (kind), or one that every batch runs (kind "").
type foldStmt struct {
	kind string
	sql  string
}

// sealedSQL is the condition that column col holds sealed content (its
// prefix), plainSQL that it does not; substr is spelled alike by both
// backends.
func sealedSQL(col string) string { return `substr(` + col + `, 1, 7) = 'ssenc1:'` }

func plainSQL(col string) string { return `substr(` + col + `, 1, 7) <> 'ssenc1:'` }

// unsealedKey is the condition, on queue row p, that its content is not
// sealed: a sealed item's document is the write path's, and current
// (search_sealed.go), so neither a fold nor a read that cannot fold
// touches it.
var unsealedKey = `NOT (p.kind = 'message' AND EXISTS (SELECT 1 FROM conversation_messages AS c WHERE c.session_id = p.owner AND c.seq = p.pos AND ` + sealedSQL("c.content") + `))
	AND NOT (p.kind = 'event' AND EXISTS (SELECT 1 FROM agent_events AS c WHERE c.session_pk = p.session_pk AND c.seq = p.pos AND ` + sealedSQL("c.data") + `))`

// docCols are the columns of search_docs a document is written with,
// in the order of docSource.cols.
const docCols = `session_pk, owner, pos, ref, session_id, app, user_id, role, at_us, body, tenant`

// docSource is how the document of one kind of item is built from its
// content: the fold writes it (foldStatements), and a store that cannot
// fold reads it directly for the items not yet folded (search_pending.go).
type docSource struct {
	kind string
	// cols are the expressions of docCols, over content row c (and, for
	// events, agent session row s).
	cols []string
	// from joins the content to key row p (columns session_pk, owner,
	// pos, ref) and keeps the rows whose document the fold writes.
	from string
}

// docSources returns how each kind's documents are built. A key whose
// content is gone, or sealed, has no row (sealed content's document is
// the write path's, search_sealed.go).
func (s *Store) docSources() []docSource {
	eventRole := EventRoleSQL("c.data")
	eventText := EventTextSQL("c.data")
	if s.d.EventDocFuncs {
		// The backend's Go functions compute the document of the events
		// whose JSON they are sure about, the SQL that of the others.
		eventRole = `coalesce(` + EventRoleFunc + `(c.data), ` + eventRole + `)`
		eventText = `coalesce(` + EventTextFunc + `(c.data), ` + eventText + `)`
	}
	messageText := `coalesce((SELECT group_concat(nullif(concat_ws(' ',
                    json_extract(b.value, '$.text'),
                    json_extract(b.value, '$.name'),
                    ` + plainJSON(`json_extract(b.value, '$.input')`) + `,
                    CASE json_type(b.value, '$.content')
                        WHEN 'text' THEN json_extract(b.value, '$.content')
                        WHEN 'array' THEN (SELECT group_concat(json_extract(y.value, '$.text'), ' ')
                                           FROM json_each(b.value, '$.content') AS y WHERE y.type = 'object')
                    END), ''), ' ')
                  FROM json_each(CASE WHEN json_valid(c.content) THEN c.content ELSE '[]' END) AS b
                  WHERE b.type = 'object'), '')`
	if s.postgres() {
		eventRole = `sessionstore_event_role(c.data)`
		eventText = `sessionstore_event_text(c.data)`
		messageText = `sessionstore_message_text(c.content)`
	}
	return []docSource{
		{"message", []string{`0`, `c.session_id`, `c.seq`, `''`, `c.session_id`, `''`, `''`, `c.role`, `c.created_at_ms * 1000`, messageText, `c.tenant`},
			`JOIN conversation_messages AS c ON c.session_id = p.owner AND c.seq = p.pos WHERE ` + plainSQL("c.content")},
		{"event", []string{`c.session_pk`, `''`, `c.seq`, `''`, `s.session_id`, `s.app`, `s.user_id`, eventRole, `c.ts_us`, eventText, `s.tenant`},
			`JOIN agent_events AS c ON c.session_pk = p.session_pk AND c.seq = p.pos
			JOIN agent_sessions AS s ON s.pk = c.session_pk WHERE ` + plainSQL("c.data")},
		{"trace", []string{`0`, `c.session_id`, `c.seq`, `''`, `c.session_id`, `''`, `''`, `c.kind`, `c.created_at_ms * 1000`, `concat_ws(' ', c.kind, c.name)`, `c.tenant`},
			`JOIN conversation_trace_events AS c ON c.session_id = p.owner AND c.seq = p.pos`},
		{"artifact", []string{`0`, `c.session_id`, `0`, `c.uri`, `c.session_id`, `''`, `''`, `c.tool_name`, `c.updated_at_ms * 1000`, `concat_ws(' ', c.uri, c.artifact_id, c.tool_name)`, `c.tenant`},
			`JOIN conversation_artifacts AS c ON c.session_id = p.owner AND c.uri = p.ref`},
		{"run", []string{`0`, `c.session_id`, `0`, `c.run_id`, `c.session_id`, `''`, `''`, `c.status`, `c.created_at_ms * 1000`, `c.run_id`, `c.tenant`},
			`JOIN conversation_runs AS c ON c.session_id = p.owner AND c.run_id = p.ref`},
	}
}

// foldStatements returns the statements of a fold batch, in order; every
// parameter of each is the list of the batch's queue ids. A batch runs
// the statement of a kind only when it holds a queue row of that kind.
func (s *Store) foldStatements() []foldStmt {
	in := s.d.InList("p.id")
	keys := func(kind string) string {
		return `(SELECT DISTINCT p.session_pk, p.owner, p.pos, p.ref FROM search_pending AS p WHERE p.kind = '` + kind + `' AND ` + in + `) AS p`
	}
	stmts := []foldStmt{
		// The documents of the batch's keys, but for those of sealed
		// content (the write path's, search_sealed.go).
		{"", `DELETE FROM search_docs WHERE doc IN (SELECT d.doc FROM search_pending AS p JOIN search_docs AS d ON ` + foldPendingKey + `
			WHERE ` + in + ` AND ` + unsealedKey + `)`},
	}
	for _, src := range s.docSources() {
		stmts = append(stmts, foldStmt{src.kind, `INSERT INTO search_docs (kind, ` + docCols + `)
			SELECT '` + src.kind + `', ` + strings.Join(src.cols, ", ") + `
			FROM ` + keys(src.kind) + ` ` + src.from})
	}
	return append(stmts, foldStmt{"", `DELETE FROM search_pending WHERE ` + s.d.InList("id")})
}

// errFoldLeaseHeld: another holder holds the indexer's lease.
var errFoldLeaseHeld = errors.New("search index lease held")

// foldSearch folds the queue rows with id <= upto (every row when upto
// is 0, and then each batch first queues the events after the mark,
// queueTail) in batches of batch rows, each in a write transaction of its
// own; with holder set, each batch first takes (or renews) the indexer's
// lease for ttl, and a batch that finds it held by another returns
// errFoldLeaseHeld. It returns the number of queue rows folded.
func (s *Store) foldSearch(ctx context.Context, upto int64, batch int, holder string, ttl time.Duration) (int64, error) {
	if batch <= 0 {
		batch = DefaultFoldBatch
	}
	unbounded := upto <= 0
	if unbounded {
		upto = 1<<63 - 1
	}
	stmts := s.foldStatements()
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		err := s.writeDerived(ctx, func(tx Tx) error {
			n = 0
			if s.d.LockKeySQL != "" {
				if _, err := tx.Exec(s.d.LockKeySQL, lockClassSearchFold, "fold"); err != nil {
					return err
				}
			}
			if holder != "" {
				// The lease is renewed once half of it has run: until
				// then nobody else can take it, and a batch writes no
				// lease row (one page less in its commit).
				now := rowcodec.ToMillis(s.cfg.Clock())
				var cur string
				var until int64
				err := tx.Scan(foldLeaseReadSQL, nil, &cur, &until)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return err
				}
				if err != nil || cur != holder || until-now <= ttl.Milliseconds()/2 {
					var got string
					err := tx.Scan(foldLeaseSQL, []any{holder, now + ttl.Milliseconds(), now}, &got)
					if errors.Is(err, sql.ErrNoRows) {
						return errFoldLeaseHeld
					}
					if err != nil {
						return err
					}
				}
			}
			if unbounded {
				// The events appended since the last batch join the
				// queue in this transaction (SQLite).
				if _, err := s.queueTail(tx, batch); err != nil {
					return err
				}
			}
			var ids []int64
			kinds := map[string]bool{}
			if err := tx.Query(foldPendingSQL, []any{upto, batch}, func(r Rows) error {
				var id int64
				var kind string
				if err := r.Scan(&id, &kind); err != nil {
					return err
				}
				ids = append(ids, id)
				kinds[kind] = true
				return nil
			}); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			arg, err := s.d.ListArg(ids)
			if err != nil {
				return err
			}
			for _, st := range stmts {
				if st.kind != "" && !kinds[st.kind] {
					continue // no queue row of its kind in the batch
				}
				q := st.sql
				// Every parameter of a fold statement is the id list.
				args := make([]any, strings.Count(q, "?"))
				for i := range args {
					args[i] = arg
				}
				if _, err := tx.Exec(q, args...); err != nil {
					return err
				}
			}
			n = len(ids)
			return nil
		})
		if err != nil {
			return total, err
		}
		total += int64(n)
		if n < batch {
			return total, nil
		}
	}
}

// closeFoldLimit bounds what FoldOnClose folds: a larger queue (a bulk
// import with the index folded by nobody) is left to the next store.
const closeFoldLimit = 8 * DefaultFoldBatch

// FoldOnClose folds what is queued, up to closeFoldLimit keys, when the
// store closes (the backends call it after stopping the indexer), so that
// a store that wrote and closed leaves its items indexed and the next
// store opened on the database finds nothing to fold. Failures are
// logged, not returned: the queue stays for the next store.
func (s *Store) FoldOnClose(ctx context.Context) {
	if err := s.queueAllTail(ctx, closeFoldLimit); err != nil {
		s.log.Warn("search indexing at close failed", "err", err)
		return
	}
	var upto int64
	if err := s.db.Scan(ctx, foldMaxSQL, nil, &upto); err != nil || upto == 0 {
		return
	}
	var total int64
	for total < closeFoldLimit {
		n, err := s.foldSearch(ctx, upto, DefaultFoldBatch, "", 0)
		if err != nil {
			s.log.Warn("search indexing at close failed", "err", err)
			return
		}
		total += n
		if n < DefaultFoldBatch {
			return
		}
	}
}

// prepareSearch returns store.ErrSearchDisabled when the index is off,
// and otherwise folds every queue row committed before the call (Search,
// History, CheckSearchIndex), so that the index holds every item
// acknowledged before it and none deleted before it: one read when the
// queue is empty. A store that cannot write (read-only, a snapshot)
// cannot fold: prepareSearch then returns stale true, and the caller
// reads the index without the documents of the keys still queued
// (pendingKeysFilter) and matches those items directly from their
// content, or, when too many wait, leaves them out and tells how many
// (search_pending.go).
func (s *Store) prepareSearch(ctx context.Context) (stale bool, err error) {
	var on bool
	var upto int64
	if err := s.db.Scan(ctx, `SELECT (`+searchStateSQL+`), (`+foldMaxSQL+`)`, nil, &on, &upto); err != nil {
		return false, err
	}
	if !on {
		return false, store.ErrSearchDisabled
	}
	// The events appended after the mark join the queue first (SQLite).
	if err := s.queueAllTail(ctx, 0); err != nil {
		if errors.Is(err, store.ErrReadOnly) || errors.Is(err, store.ErrSnapshotWrite) {
			return true, nil
		}
		return false, err
	}
	if err := s.db.Scan(ctx, foldMaxSQL, nil, &upto); err != nil {
		return false, err
	}
	if upto == 0 {
		return false, nil
	}
	_, err = s.foldSearch(ctx, upto, DefaultFoldBatch, "", 0)
	if errors.Is(err, store.ErrReadOnly) || errors.Is(err, store.ErrSnapshotWrite) {
		return true, nil
	}
	return false, err
}

// pendingKeysFilter is the condition, on index row d, that leaves out
// the documents a fold would rewrite or delete: those of a key in the
// queue (but a key whose content is sealed: its document is the write
// path's, and current) and, on SQLite, those of an event after the mark
// (queueTail would queue it). A store that cannot fold reads the index
// with it, so that it never returns a deleted or a changed item's stale
// document. Row-value NOT IN: the backends build the set once.
func (s *Store) pendingKeysFilter() string {
	f := ` AND (d.kind, d.session_pk, d.owner, d.pos, d.ref) NOT IN (SELECT p.kind, p.session_pk, p.owner, p.pos, p.ref FROM search_pending AS p
		WHERE ` + unsealedKey + `)`
	if !s.postgres() {
		f += ` AND (d.kind <> 'event' OR (d.session_pk, d.pos) NOT IN (SELECT c.session_pk, c.seq FROM agent_events AS c
		WHERE c.id > (SELECT events_mark FROM search_state) AND ` + plainSQL("c.data") + `))`
	}
	return f
}

// SetSearchIndex turns the search index of the whole database on or off
// (the backends' WithSearchIndex option). Off, the content triggers queue
// nothing, the queue and the index are emptied, and Search and History
// return store.ErrSearchDisabled; the writes then pay nothing for search.
// On again, every stored item is queued (one transaction) and folded in
// by the indexer, or by the first search. A no-op when the index already
// is as asked.
func (s *Store) SetSearchIndex(ctx context.Context, on bool) error {
	return s.write(ctx, func(tx Tx) error {
		var cur bool
		if err := tx.Scan(searchStateSQL, nil, &cur); err != nil {
			return err
		}
		if cur == on {
			return nil
		}
		if _, err := tx.Exec(`UPDATE search_state SET enabled = ?`, on); err != nil {
			return err
		}
		if !s.postgres() {
			// Every event is queued below (on) or none is (off).
			if _, err := tx.Exec(tailMarkTopSQL); err != nil {
				return err
			}
		}
		if !on {
			for _, q := range []string{`DELETE FROM search_pending`, `DELETE FROM search_docs`} {
				if _, err := tx.Exec(q); err != nil {
					return err
				}
			}
			return nil
		}
		for _, src := range searchSources {
			cols := `(kind, session_pk, owner, pos, ref, tenant)`
			var sel string
			switch src.kind {
			case store.SearchEvent:
				sel = `SELECT 'event', c.session_pk, '', c.seq, '', c.tenant FROM agent_events AS c`
			case store.SearchArtifact:
				sel = `SELECT 'artifact', 0, c.session_id, 0, c.uri, c.tenant FROM conversation_artifacts AS c`
			case store.SearchRun:
				sel = `SELECT 'run', 0, c.session_id, 0, c.run_id, c.tenant FROM conversation_runs AS c`
			default:
				sel = `SELECT '` + string(src.kind) + `', 0, c.session_id, c.seq, '', c.tenant FROM ` + src.table + ` AS c`
			}
			if _, err := tx.Exec(`INSERT INTO search_pending ` + cols + ` ` + sel); err != nil {
				return err
			}
		}
		return nil
	})
}

// IndexerConfig configures the background indexer (StartIndexer).
type IndexerConfig struct {
	// Interval is how often the indexer looks at the queue when nothing
	// woke it (Indexer.Wake); DefaultIndexerInterval when zero.
	Interval time.Duration
	// Batch is the number of queue rows per fold transaction;
	// DefaultIndexerBatch when zero.
	Batch int
	// LeaseTTL is how long the indexer's lease lasts without renewal;
	// max(10 × Interval, 10 s) when zero.
	LeaseTTL time.Duration
	// OnFold, when set, is called after each round that folded
	// something, with the number of queue rows it folded (tests and
	// benchmarks).
	OnFold func(n int64)
}

// DefaultIndexerInterval is the background indexer's default interval.
const DefaultIndexerInterval = 50 * time.Millisecond

// Indexer is a running background indexer.
type Indexer struct {
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	once   sync.Once
}

// OpenIndexer is what a backend's Open does for search: it applies the
// WithSearchIndex setting when one was given (nil leaves the database's)
// and, when run, starts the background indexer (nil otherwise).
func (s *Store) OpenIndexer(ctx context.Context, setting *bool, run bool, cfg IndexerConfig) (*Indexer, error) {
	if setting != nil {
		if err := s.SetSearchIndex(ctx, *setting); err != nil {
			return nil, err
		}
	}
	if !run {
		return nil, nil
	}
	return s.StartIndexer(cfg), nil
}

// StartIndexer starts folding the search queue in the background until
// Stop: every cfg.Interval (less often while the queue stays empty), or at
// once after Wake, it folds what is queued
// while it holds the indexer's lease (one indexer at a time across the
// processes sharing the database; the others wait for the lease to run
// out). It logs failures through the store's logger and is otherwise
// silent.
func (s *Store) StartIndexer(cfg IndexerConfig) *Indexer {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultIndexerInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultIndexerBatch
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = max(10*cfg.Interval, 10*time.Second)
	}
	b := make([]byte, 6)
	rand.Read(b)
	holder := "indexer-" + hex.EncodeToString(b)
	ctx, cancel := context.WithCancel(context.Background())
	ix := &Indexer{cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go func() {
		defer close(ix.done)
		// An idle indexer looks less often: the wait doubles after each
		// look that found the queue empty, up to 10 × Interval, and is
		// back to Interval after a fold.
		wait := cfg.Interval
		t := time.NewTimer(wait)
		defer t.Stop()
		leased := false
		for {
			var upto, other int64
			err := s.db.Scan(ctx, foldMaxSQL, nil, &upto)
			if err == nil && upto == 0 {
				var waiting bool
				if waiting, err = s.tailWaiting(ctx); waiting {
					upto = 1
				}
			}
			wait = min(2*wait, 10*cfg.Interval)
			if err == nil && upto > 0 {
				err = s.db.Scan(ctx, foldLeaseOtherSQL, []any{holder, rowcodec.ToMillis(s.cfg.Clock())}, &other)
			}
			if err == nil && upto > 0 && other == 0 {
				var n int64
				n, err = s.foldSearch(ctx, 0, cfg.Batch, holder, cfg.LeaseTTL)
				if err == nil {
					leased, wait = true, cfg.Interval
				}
				if n > 0 && cfg.OnFold != nil {
					cfg.OnFold(n)
				}
			}
			if err != nil && !errors.Is(err, errFoldLeaseHeld) && ctx.Err() == nil {
				s.log.Warn("background search indexing failed", "holder", holder, "err", err)
			}
			t.Reset(wait)
			select {
			case <-ctx.Done():
				if leased {
					_ = s.write(context.Background(), func(tx Tx) error {
						_, err := tx.Exec(foldLeaseDropSQL, holder)
						return err
					})
				}
				return
			case <-t.C:
			case <-ix.wake:
				wait = cfg.Interval
			}
		}
	}()
	return ix
}

// Wake makes the indexer look at the queue now (after a commit that may
// have queued something). It never blocks.
func (ix *Indexer) Wake() {
	if ix == nil {
		return
	}
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

// Stop stops the indexer after its batch in progress and gives its lease
// up.
func (ix *Indexer) Stop() {
	if ix == nil {
		return
	}
	ix.once.Do(func() {
		ix.cancel()
		<-ix.done
	})
}
