package main

// What sessionctl asks of a PostgreSQL database past the store, through
// pgstore: whether a schema holds a session store (without creating one)
// and the sizes of stats. The store lives in the first existing schema of
// the connection's search_path (public unless the URL sets search_path).

import (
	"context"

	"github.com/agentstore/sessionstore/pgstore"
)

// pgProbe reads what the server says of the store's schema, on a
// connection of its own.
func (g *globals) pgProbe(ctx context.Context) (pgstore.Info, error) {
	return pgstore.Probe(ctx, g.db)
}

// pgOptions are the options a PostgreSQL store is opened with.
func (g *globals) pgOptions() []pgstore.Option {
	// A command runs no background search indexer (see
	// sqliteStoreOptions).
	opts := []pgstore.Option{pgstore.WithBackgroundIndexer(false)}
	if g.now != nil {
		opts = append(opts, pgstore.WithClock(g.now))
	}
	return append(opts, g.pgKeyOptions()...) // keys.go
}
