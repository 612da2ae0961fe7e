package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// dialect is PostgreSQL's spelling of what differs between databases.
// Transactions run at READ COMMITTED, so a write locks the rows it is
// about to change (FOR UPDATE) and serializes writers of a key whose row
// may not exist yet on a transaction advisory lock.
var dialect = &sqlcore.Dialect{
	Name:        "postgres",
	ForUpdate:   " FOR UPDATE",
	ForKeyShare: " FOR KEY SHARE",
	Greatest:    "GREATEST",
	NoLimit:     nil, // LIMIT NULL: no limit
	LockKeySQL:  `SELECT pg_advisory_xact_lock(CAST(? AS integer), hashtext(CAST(? AS text)))`,
	InList:      func(expr string) string { return expr + ` = ANY(?)` },
	ListArg:     func(values any) (any, error) { return values, nil }, // pgx binds slices as arrays
	IntListRows: func(col string) string { return `SELECT unnest(CAST(? AS BIGINT[])) AS ` + col },
	AuditChain:  auditChainSQL, // audit.go
	Contains:    func(text, term string) string { return `strpos(lower(` + text + `), lower(` + term + `)) > 0` },
	// A search's plan counts sessionstore_trigrams at its cost (migration
	// 37) for every candidate of the trigram index, as if each were
	// checked again: on a large index a search's estimate passes
	// jit_above_cost, and JIT compilation (hundreds of milliseconds)
	// would cost more than it saves on a query that computes no trigram.
	// And the search's statements are planned for their arguments each
	// time they run: pgx prepares them on the connection, and after five
	// runs PostgreSQL may switch a prepared statement to a generic plan,
	// made without the term's trigrams or the filters' values, which no
	// plan test sees (TestSearchPlansForTheirArguments). Planning costs
	// well under a millisecond; a bad plan of a search costs seconds.
	SearchSetup: `SELECT set_config('jit', 'off', true), set_config('plan_cache_mode', 'force_custom_plan', true)`,
	PollTurnsSQL: `SELECT
		j.id AS id,
		j.gen AS gen,
		s.id IS NOT NULL AS present,
		coalesce(s.turn_gen, 0) AS turn_gen,
		coalesce(s.turn_running, false) AS turn_running,
		coalesce(s.turn_cancel, '') AS turn_cancel,
		coalesce(c.cause, '') AS cause
	FROM jsonb_to_recordset(?::jsonb) AS j(id text, gen bigint)
	LEFT JOIN runtime_sessions AS s ON s.id = j.id COLLATE "C"
	LEFT JOIN runtime_cancel_causes AS c
		ON c.session_id = j.id COLLATE "C" AND c.generation = j.gen
	WHERE s.id IS NULL OR s.turn_gen <> j.gen OR NOT s.turn_running OR s.turn_cancel <> ''`,
}

// notifySQL tells every listening store of this schema, on commit, that a
// turn was cancelled, superseded or ended.
const notifySQL = `SELECT pg_notify(?, '')`

// newCore builds the shared facets over this store's pool.
func (s *Store) newCore() {
	s.core = sqlcore.New(coreDB{s}, sqlcore.Config{
		Dialect:           dialect,
		TenantSQL:         tenantSQL,
		Clock:             s.cfg.clock,
		Logger:            s.cfg.logger,
		RuntimeLimits:     s.cfg.runtime,
		IsUniqueViolation: isUniqueViolation,
		AuditOff:          s.cfg.auditOff,
		TurnWake:          s.listenTurns,
		NotifyTurns: func(tx sqlcore.Tx) error {
			_, err := tx.Exec(notifySQL, s.channel)
			return err
		},
		FeedWake: s.listenFeed,
		Space:    s.space,
		Keys:     s.cfg.keyRing,
		// search_sealed.go
		SearchEncrypted: s.cfg.searchEncrypted,
		EagerSearch:     s.cfg.eagerSearch,
		LargeSearchMin:  s.cfg.largeSearchMin,
		SearchTrace:     s.cfg.searchTrace,
	})
}

// Conversations returns the conversation-persistence facet.
func (s *Store) Conversations() store.Conversations { return s.core.Conversations() }

// Runtime returns the runtime-bookkeeping facet.
func (s *Store) Runtime() store.Runtime { return s.core.Runtime() }

// AgentSessions returns the agent-session facet.
func (s *Store) AgentSessions() store.AgentSessions { return s.core.AgentSessions() }

// coreDB is sqlcore's view of the store: READ COMMITTED write
// transactions retried whole on serialization failures, REPEATABLE READ
// read-only snapshots, and single reads on the pool, all through pgx.
type coreDB struct{ s *Store }

var _ sqlcore.DB = coreDB{}

func (d coreDB) Write(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.write(ctx, func(tx *pgTx) error { return fn(tx) })
}

// WriteLazy implements sqlcore.LazyWriter: the transaction commits
// without waiting for its WAL to reach the disk (synchronous_commit off,
// for it alone). PostgreSQL may then lose it, whole, at a crash, never a
// transaction committed after it with synchronous_commit on.
func (d coreDB) WriteLazy(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.writeDerived(ctx, func(tx *pgTx) error {
		if _, err := tx.Exec(`SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (d coreDB) Read(ctx context.Context, fn func(tx sqlcore.Tx) error) error {
	return d.s.readTx(ctx, func(r *pgTx) error { return fn(r) })
}

// single runs fn with a Tx for a single-statement read: on the pool, or
// on the transaction of the ReadSnapshot that ctx carries.
func (d coreDB) single(ctx context.Context, fn func(p *pgTx) error) error {
	if d.s.closed.Load() {
		return store.ErrStoreClosed
	}
	return mapErr(d.s.reader(ctx, func(q querier) error { return fn(&pgTx{ctx: ctx, q: q}) }))
}

func (d coreDB) Get(ctx context.Context, dest any, query string, args ...any) error {
	return d.single(ctx, func(p *pgTx) error { return p.Get(dest, query, args...) })
}

func (d coreDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	return d.single(ctx, func(p *pgTx) error { return p.Select(dest, query, args...) })
}

func (d coreDB) Scan(ctx context.Context, query string, args []any, dest ...any) error {
	return d.single(ctx, func(p *pgTx) error { return p.Scan(query, args, dest...) })
}

func (d coreDB) Query(ctx context.Context, query string, args []any, fn func(sqlcore.Rows) error) error {
	return d.single(ctx, func(p *pgTx) error { return p.Query(query, args, fn) })
}

// listenTurns is the core's TurnWake: it holds a connection of its own
// (not one of the pool's) that LISTENs on the store's channel, and calls
// wake for each notification and after every (re)connect, until ctx ends.
// A failed connection is retried; meanwhile the core's poll covers.
func (s *Store) listenTurns(ctx context.Context, wake func()) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		s.cfg.logger.Warn("pgstore: turn notification listener failed; polling meanwhile", "err", err)
		if sleep(ctx, min(s.cfg.runtime.CancelPoll, time.Duration(attempt)*100*time.Millisecond)) != nil {
			return
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, wake func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	wake() // anything committed before LISTEN took effect
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		wake()
	}
}
