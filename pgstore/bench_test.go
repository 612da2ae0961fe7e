package pgstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkStore runs the backend-neutral benchmark suite (storetest.Bench)
// on PostgreSQL, one fresh schema per benchmark: all of it at the default
// synchronous_commit=on (every acknowledged call is flushed to the WAL on
// disk), and its writes again at synchronous_commit=off (a server crash may
// lose the last commits, never corrupts; the analogue of SQLite's
// synchronous=NORMAL):
//
//	scripts/with-postgres.sh go test ./pgstore -run '^$' -bench Store -benchtime 2s
//
// The pool may open 32 connections, so that 32 concurrent callers measure
// the server rather than a wait for a pooled connection.
// BenchmarkCancelDeliveryAcrossStores (NOTIFY) stays in this package.
func BenchmarkStore(b *testing.B) {
	h := harness
	h.NewLocation = func(t testing.TB) string {
		loc, err := withParam(newSchema(t), "pool_max_conns", "32")
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	b.Run("sync=on", func(b *testing.B) {
		storetest.Bench(b, h, storetest.BenchOptions{Durability: "on"})
	})
	b.Run("sync=off", func(b *testing.B) {
		storetest.Bench(b, h, storetest.BenchOptions{Durability: "off", WritesOnly: true})
	})
}
