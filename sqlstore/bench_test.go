package sqlstore_test

import (
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkStore runs the backend-neutral benchmark suite (storetest.Bench)
// on SQLite files: all of it at the default synchronous=FULL, and its
// writes again at synchronous=NORMAL (which in WAL mode survives a process
// crash but may lose the last commits on power loss):
//
//	go test ./sqlstore -run '^$' -bench Store -benchtime 2s
//	go test ./sqlstore -run '^$' -bench 'Store/.*/Governance/Use' -benchtime 2s
//
// The baselines that only make sense on SQLite (BenchmarkRawUpdate,
// BenchmarkCancelDeliveryAcrossStores) stay in this package.
func BenchmarkStore(b *testing.B) {
	b.Run("sync="+string(sqlstore.SyncFull), func(b *testing.B) {
		storetest.Bench(b, harness, storetest.BenchOptions{Durability: string(sqlstore.SyncFull)})
	})
	b.Run("sync="+string(sqlstore.SyncNormal), func(b *testing.B) {
		storetest.Bench(b, harness, storetest.BenchOptions{Durability: string(sqlstore.SyncNormal), WritesOnly: true})
	})
}
