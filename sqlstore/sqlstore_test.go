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
		if o.NoIndexer {
			opts = append(opts, sqlstore.WithBackgroundIndexer(false))
		}
		if o.ReadOnly {
			opts = append(opts, sqlstore.WithReadOnly(true))
		}
		if o.EagerSearch {
			opts = append(opts, sqlstore.WithEagerSearch())
		}
		if o.LargeSearchMin > 0 {
			opts = append(opts, sqlstore.WithLargeSearchMin(o.LargeSearchMin))
		}
		if o.SearchTimeWalk != 0 {
			opts = append(opts, sqlstore.WithSearchTimeWalk(o.SearchTimeWalk))
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

// TestConformance runs the suite on stores at synchronous=NORMAL
// (conformanceHarness), where a commit does not wait for the disk: what
// the suite checks is what the store does, which the synchronous level
// does not change (it decides only when SQLite calls fsync), and the
// default FULL made a third of the suite's CPU time system time in fsync.
// What FULL is for keeps it: the helper processes the suite spawns and
// kills (RunHelperProcess in TestMain) open with harness, at the default
// FULL, and so do the crash, kill and power-loss tests of this package
// (crash_test.go, reliability_*.go, TestSoak, TestMigrateConcurrentProcesses),
// which open their stores themselves.
func TestConformance(t *testing.T) { storetest.Run(t, conformanceHarness) }

// conformanceHarness is harness with stores opened at synchronous=NORMAL,
// unless the test asks for a level (Options.Durability).
var conformanceHarness = func() storetest.Harness {
	h := harness
	h.Open = func(ctx context.Context, loc string, clock store.Clock) (store.Store, error) {
		return sqlstore.Open(ctx, loc, sqlstore.WithClock(clock), sqlstore.WithSynchronous(sqlstore.SyncNormal))
	}
	openWith := harness.OpenWith
	h.OpenWith = func(ctx context.Context, loc string, clock store.Clock, o storetest.Options) (store.Store, error) {
		if o.Durability == "" {
			o.Durability = string(sqlstore.SyncNormal)
		}
		return openWith(ctx, loc, clock, o)
	}
	return h
}()
