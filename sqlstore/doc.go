// Package sqlstore implements package store on one embedded SQLite file
// (modernc.org/sqlite, pure Go, no cgo).
//
// # Write path
//
// All writes of a Store go through one write connection with its statements
// prepared once. Callers enqueue a request; the caller that holds the writer
// token (the leader) takes the first request plus whatever is already queued
// (up to WithMaxBatch), runs them in order in one BEGIN IMMEDIATE … COMMIT
// (should one fail, the batch rolls back and runs again with each request in
// its own savepoint, so that the failed request rolls back only itself),
// and answers every caller after the commit has returned: nothing is
// acknowledged before it is durable, and under concurrency one fsync covers
// many calls (group commit). Reads use a separate pool of connections.
//
// Several processes may share one file. Each write transaction is taken
// under an OS file lock on "<path>-writer.lock" so that processes queue
// fairly instead of polling SQLite's lock; a SQLITE_BUSY that outlives the
// busy timeout (another program writing) is retried as a whole transaction
// with bounded, jittered backoff.
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL by default: a call
// that returned success survives kill -9 and power loss. WithSynchronous
// (SyncNormal) trades the last transactions before a power loss (never
// before a process crash) for speed.
//
// # Conversations
//
// A conversation's history is one row per message in
// conversation_messages, numbered 0, 1, 2, … per conversation. An append
// finds the next number with one probe of the (session_id, seq) index and
// inserts the new rows: its cost does not depend on the length of the
// history, and it never rewrites what is there. Artifacts, trace events,
// run records (with their events), verification reports and cost records
// live in their own tables, all ON DELETE CASCADE from conversations, so
// deleting a conversation deletes everything it owns in one transaction.
// Load and the run readers read in one read transaction: a consistent
// snapshot even while appends go on.
//
// # Agent sessions
//
// An agent session (AgentSessions) is one agent_sessions row with a version
// and an event count, its events in agent_events (JSON text plus indexed
// session, seq, event id, timestamp and invocation columns) and its state
// in agent_state_log: each value a delta gave a key, at the event's
// position (forks and rewinds read the state at a position), and each
// key's current value at the largest position (its head, right after its
// newest value: one leaf page for both); app and user state live in
// agent_app_state and agent_user_state. An append is one request on the
// writer: a conditional UPDATE of the session row (the version check),
// the event insert and the state upserts, in one request of the group
// commit. GetSession, ListSessions, ListEvents and GetState read in one
// read transaction each; their statements are prepared on that
// transaction's own connection, never on a second one from the pool.
//
// # Turn cancellation
//
// A turn's durable state is in its runtime_sessions row and, once it is
// cancelled or superseded, in a runtime_cancel_causes row. A cancel commits
// the cause first; then the Store that made it fires the turn's context at
// once if the turn is its own. A Store with running turns runs one poller
// goroutine (only while it has some; stopped by Close) that reads the
// committed state of its turns every WithCancelPollInterval (default 50 ms)
// in one indexed query and fires the turns cancelled, superseded, removed or
// ended by other processes, with the recorded cause. From its first turn
// until Close, a Store also renews the leases of its running turns every
// third of WithTurnLease (default 30s), so that the turns of a process that
// died read as stale once their lease lapsed (see store.Turns).
//
// # Time
//
// Times are stored as UTC unix milliseconds (INTEGER columns named *_ms).
package sqlstore
