package sqlstore_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// harness runs the conformance suite on SQLite files in temporary
// directories.
var harness = storetest.Harness{
	NewLocation: func(t testing.TB) string { return sqlstore.FreshDBPath(t, "sessions.db") },
	Open: func(ctx context.Context, loc string, clock store.Clock) (store.Store, error) {
		return sqlstore.Open(ctx, loc, sqlstore.WithClock(clock))
	},
	OpenWith: func(ctx context.Context, loc string, clock store.Clock, o storetest.Options) (store.Store, error) {
		opts := []sqlstore.Option{sqlstore.WithClock(clock), sqlstore.WithMaxSessions(o.MaxSessions)}
		if o.MaxUploadBytes > 0 {
			opts = append(opts, sqlstore.WithMaxUploadBytes(o.MaxUploadBytes))
		}
		if o.TurnLease > 0 {
			opts = append(opts, sqlstore.WithTurnLease(o.TurnLease))
		}
		if o.Durability != "" {
			opts = append(opts, sqlstore.WithSynchronous(sqlstore.Synchronous(o.Durability)))
		}
		if o.NoAudit {
			opts = append(opts, sqlstore.WithoutAudit())
		}
		if o.Sweeper != nil {
			opts = append(opts, sqlstore.WithSweeper(*o.Sweeper))
		}
		if o.Keys != nil {
			opts = append(opts, sqlstore.WithKeyRing(o.Keys))
		}
		if o.SearchEncrypted {
			opts = append(opts, sqlstore.WithSearchEncrypted())
		}
		return sqlstore.Open(ctx, loc, opts...)
	},
	Exec: func(ctx context.Context, loc, query string) error {
		db, err := sql.Open("sqlite", "file:"+loc+"?_pragma=busy_timeout(5000)")
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, query)
		return err
	},
	Count: func(ctx context.Context, loc, query string) (int64, error) {
		db, err := sql.Open("sqlite", "file:"+loc+"?_pragma=busy_timeout(5000)")
		if err != nil {
			return 0, err
		}
		defer db.Close()
		var n int64
		err = db.QueryRowContext(ctx, query).Scan(&n)
		return n, err
	},
}

func TestMain(m *testing.M) {
	if os.Getenv(envFairChild) != "" {
		fairnessChild()
	}
	storetest.RunHelperProcess(harness)
	code := m.Run()
	sqlstore.RemoveTemplate()
	os.Exit(code)
}

func TestConformance(t *testing.T) { storetest.Run(t, harness) }
