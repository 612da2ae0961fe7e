package main

// The maintenance of a SQLite file past the store (checkpoints, the
// schema version of a file the store would refuse), through sqlstore.

import (
	"context"

	"github.com/agentstore/sessionstore/sqlstore"
)

// WALResult reports a checkpoint: WAL bytes before and after, and whether
// readers kept it from completing.
type WALResult = sqlstore.CheckpointResult

// checkpoint copies the WAL into the database file and truncates it; with
// vacuum it first rewrites the file without its free pages (see
// sqlstore.Checkpoint).
func checkpoint(ctx context.Context, path string, vacuum bool) (WALResult, error) {
	return sqlstore.Checkpoint(ctx, path, vacuum)
}

// sqliteStoreOptions are the options a SQLite store is opened with.
func (g *globals) sqliteStoreOptions() []sqlstore.Option {
	// A command runs no background search indexer: what it writes is
	// folded into the index by the next search or by a long-running
	// store, and a command that refuses leaves the file as it was.
	opts := []sqlstore.Option{sqlstore.WithBackgroundIndexer(false)}
	if g.now != nil {
		opts = append(opts, sqlstore.WithClock(g.now))
	}
	opts = append(opts, g.sqliteKeyOptions()...) // keys.go
	return append(opts, g.sqliteOptions...)
}
