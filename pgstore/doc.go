// Package pgstore implements package store on PostgreSQL (pgx, pure Go), for
// fleets of hosts that must share budgets, caps and history. It passes the
// same conformance suite as sqlstore (store/storetest), and switching
// between the two is a constructor change.
//
// # Schema
//
// The store lives in the first schema of the connection's search_path and
// is migrated on Open by goose (migrations/postgres, the same version
// numbers as the SQLite migrations) under goose's PostgreSQL session locker,
// so that concurrent openers wait while one migrates. A schema newer than
// the binary is refused (store.ErrSchemaTooNew), a schema holding another
// application's tables too (store.ErrNotSessionStore).
//
// # Concurrency
//
// Every transaction runs at READ COMMITTED, whatever the server's default.
// A governed Use is one conditional UPDATE … RETURNING: a concurrent update
// of the row makes it wait and re-check its conditions on the committed
// row, so a budget is exact across any number of hosts. The reason of a
// refusal, the durable expired mark and request-id replays are decided with
// store.Session.CheckUse on the row locked with SELECT … FOR UPDATE. Capped
// creates serialize per agent on a transaction advisory lock, capped runtime
// inserts on the counter row, writes of one conversation on its row, writers
// of one upload digest in one tenant on an advisory lock shared with the
// blob collector.
// Serialization failures and deadlocks are retried as whole transactions,
// at most WithMaxAttempts times, then reported as store.ErrBusy.
//
// Every facet talks to PostgreSQL through pgx's native interface on one
// pool: governance with its own statements, the conversation, runtime and
// agent-session facets through the shared code of internal/sqlcore with
// this package's dialect. database/sql (pgx's stdlib adapter) is used only
// to hand goose a *sql.DB for migrations. The pool Open creates holds up to
// DefaultMaxConns (32) connections, not pgx's default of max(4, CPUs): a
// governed decision mostly waits for its commit's WAL flush, and callers
// holding a connection share one flush, while callers waiting for a
// connection do not (see DefaultMaxConns; BenchmarkGovernedConcurrency
// measures 1 caller against 32 on one session, on 32 sessions of one
// agent and on 32 agents). A governed Use writes only its session's row
// and its event (the audit chain is per session); concurrent Use calls of
// one process share a transaction and its commit, whatever their sessions
// (usebatch.go).
//
// # Turns across processes
//
// Cancelling, superseding or ending a turn sends a NOTIFY on commit; a store
// with running turns LISTENs on a connection of its own and checks them at
// once, and polls every WithCancelPollInterval as the fallback. From its
// first turn until Close, a store renews the leases of its running turns
// every third of WithTurnLease (default 30s), so that the turns of a
// process that died read as stale once their lease lapsed (see
// store.Turns).
//
// # Time and order
//
// Times are UTC unix milliseconds (BIGINT), as in sqlstore. Every key that
// lists are ordered or paged by uses COLLATE "C", so order is byte order on
// any database, whatever its locale, exactly as on SQLite.
package pgstore
