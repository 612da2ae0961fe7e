package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// pgMaxConns is the pool size of a scenario's PostgreSQL store.
const pgMaxConns = 40

// fresh is an empty store for one scenario; remove closes it and
// removes what was created for it.
type fresh struct {
	st     store.Store
	remove func() error
}

// openFresh opens the empty store of scenario i: a SQLite database in
// tmp, or a PostgreSQL schema of its own.
func openFresh(ctx context.Context, o *Options, tmp string, i int) (fresh, error) {
	if o.PostgresURL == "" {
		st, err := sqlstore.Open(ctx, filepath.Join(tmp, fmt.Sprintf("bench-%d.db", i)), sqlstore.WithSynchronous(o.Synchronous))
		if err != nil {
			return fresh{}, err
		}
		return fresh{st, st.Close}, nil
	}
	return openSchema(ctx, o, i)
}

// openSchema creates a schema of its own for scenario i and opens a
// store in it, with synchronous_commit on (FULL) or off (NORMAL);
// removing closes the store and drops the schema, even after ctx ends.
func openSchema(ctx context.Context, o *Options, i int) (fresh, error) {
	var b [6]byte
	rand.Read(b[:])
	schema := fmt.Sprintf("%s%d_%s", o.SchemaPrefix, i, hex.EncodeToString(b[:]))
	if err := pgstore.CreateSchema(ctx, o.PostgresURL, schema); err != nil {
		return fresh{}, err
	}
	drop := func() error { return pgstore.DropSchema(context.WithoutCancel(ctx), o.PostgresURL, schema) }
	commit := "on"
	if o.Synchronous == sqlstore.SyncNormal {
		commit = "off"
	}
	u, err := pgstore.SetConnParams(o.PostgresURL, map[string]string{"search_path": schema, "synchronous_commit": commit})
	if err != nil {
		return fresh{}, errors.Join(err, drop())
	}
	st, err := pgstore.Open(ctx, u, pgstore.WithMaxConns(pgMaxConns))
	if err != nil {
		return fresh{}, errors.Join(err, drop())
	}
	return fresh{st, func() error { return errors.Join(st.Close(), drop()) }}, nil
}
