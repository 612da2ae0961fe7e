package sqlstore

import (
	"context"
	"database/sql"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// dialect is SQLite's spelling of what differs between databases. A write
// transaction (BEGIN IMMEDIATE on the one write connection) holds the
// database's only write lock, so reads inside it need no row locks and no
// key locks.
var dialect = &sqlcore.Dialect{
	Name:        "sqlite",
	Greatest:    "max",
	NoLimit:     int64(-1),
	InList:      sqlcore.JSONInList,
	ListArg:     sqlcore.JSONListArg,
	IntListRows: sqlcore.JSONIntListRows,
	// So are the search documents of agent events (search_eventdoc.go).
	EventDocFuncs: true,
	// The audit chain's hash is a Go function registered with the driver
	// (audit.go).
	AuditChain: auditChainSQL,
	// So is the search's term check (search_contains.go).
	Contains: containsSQL,
	// And the score of a hit of a common term (search_contains.go).
	Rank: rankSQL,
	// A BLOB column is handed over as a []byte the driver allocated for
	// the row, which the hot reads keep (hotread.go).
	BytesColumn: func(col string) string { return "CAST(" + col + " AS BLOB)" },
	PollTurnsSQL: `SELECT
		j.value ->> 'id' AS id,
		j.value ->> 'gen' AS gen,
		s.id IS NOT NULL AS present,
		coalesce(s.turn_gen, 0) AS turn_gen,
		coalesce(s.turn_running, 0) AS turn_running,
		coalesce(s.turn_cancel, '') AS turn_cancel,
		coalesce(c.cause, '') AS cause
	FROM json_each(?) AS j
	LEFT JOIN runtime_sessions AS s ON s.id = j.value ->> 'id'
	LEFT JOIN runtime_cancel_causes AS c
		ON c.session_id = j.value ->> 'id' AND c.generation = j.value ->> 'gen'
	WHERE s.id IS NULL OR s.turn_gen <> j.value ->> 'gen' OR s.turn_running = 0 OR s.turn_cancel <> ''`,
}

// newCore builds the shared facets over this store's writer and read pool.
func (s *Store) newCore() {
	s.core = sqlcore.New(coreDB{s}, sqlcore.Config{
		Dialect:           dialect,
		Clock:             s.cfg.clock,
		Logger:            s.cfg.logger,
		RuntimeLimits:     s.cfg.runtime,
		IsUniqueViolation: isUniqueViolation,
		FeedWake:          s.watchDataVersion,
		AuditOff:          s.cfg.auditOff,
		Space:             s.space,
		Reclaim:           s.reclaim,
		CompactIndexes:    s.compactIndexes,
		Keys:              s.cfg.keyRing,
		SearchEncrypted:   s.cfg.searchEncrypted,
		EagerSearch:       s.cfg.eagerSearch,
		LargeSearchMin:    s.cfg.largeSearchMin,
		SearchTimeWalk:    s.cfg.searchTimeWalk,
		SearchTrace:       s.cfg.searchTrace,
	})
}

// Conversations returns the conversation-persistence facet.
func (s *Store) Conversations() store.Conversations { return s.core.Conversations() }

// Runtime returns the runtime-bookkeeping facet.
func (s *Store) Runtime() store.Runtime { return s.core.Runtime() }

// AgentSessions returns the agent-session facet.
func (s *Store) AgentSessions() store.AgentSessions { return s.core.AgentSessions() }

// coreDB is sqlcore's view of the store: writes go through the group-commit
// writer, reads through the read pool's cached prepared statements.
type coreDB struct{ s *Store }

var _ sqlcore.DB = coreDB{}

func (d coreDB) Write(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.write(ctx, func(tx *wtx) error { return fn(tx) })
}

// WriteLazy implements sqlcore.LazyWriter (writer.doLazy).
func (d coreDB) WriteLazy(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.writeLazy(ctx, func(tx *wtx) error { return fn(tx) })
}

func (d coreDB) Read(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.readTx(ctx, func(r *rtx) error { return fn(r) })
}

// ReadHot implements sqlcore.HotReader.
func (d coreDB) ReadHot(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.readTxHot(ctx, func(r *rtx) error { return fn(r) })
}

func (d coreDB) Get(ctx context.Context, dest any, query string, args ...any) error {
	return mapErr(d.s.get(ctx, dest, query, args...))
}

func (d coreDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	return d.s.selectRows(ctx, dest, query, args...)
}

func (d coreDB) Scan(ctx context.Context, query string, args []any, dest ...any) error {
	return mapErr(d.s.scan(ctx, query, args, dest...))
}

func (d coreDB) Query(ctx context.Context, query string, args []any, fn func(sqlcore.Rows) error) error {
	return d.s.query(ctx, query, args, fn)
}

// The write and read transactions are sqlcore.Tx.

func (t *wtx) Exec(query string, args ...any) (sql.Result, error) { return t.exec(query, args...) }
func (t *wtx) Get(dest any, query string, args ...any) error      { return t.get(dest, query, args...) }
func (t *wtx) Select(dest any, query string, args ...any) error {
	return t.selectRows(dest, query, args...)
}
func (t *wtx) Scan(query string, args []any, dest ...any) error { return t.scan(query, args, dest...) }
func (t *wtx) Query(query string, args []any, fn func(sqlcore.Rows) error) error {
	st, err := t.stmt(query)
	if err != nil {
		return err
	}
	return eachRow(t.w.ctx, st, args, fn)
}

func (r *rtx) Exec(query string, args ...any) (sql.Result, error) {
	return nil, store.ErrReadOnly
}
func (r *rtx) Get(dest any, query string, args ...any) error { return r.get(dest, query, args...) }
func (r *rtx) Select(dest any, query string, args ...any) error {
	return r.selectRows(dest, query, args...)
}
func (r *rtx) Scan(query string, args []any, dest ...any) error { return r.scan(query, args, dest...) }
func (r *rtx) Query(query string, args []any, fn func(sqlcore.Rows) error) error {
	return r.query(query, args, fn)
}
