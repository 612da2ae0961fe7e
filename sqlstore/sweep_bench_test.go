package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkSweep measures governed Use latency while a sweep deletes
// 1,000,000 rows (storetest.BenchSweep; SESSIONSTORE_SWEEP_BENCH_ROWS
// scales it), at the default durability, with batches of 1000 rows, 250
// and the default (store.DefaultSweepBatchRows, 100):
//
//	go test -run '^$' -bench BenchmarkSweep -benchtime 1x ./sqlstore
func BenchmarkSweep(b *testing.B) {
	o := storetest.BenchOptions{Durability: string(sqlstore.SyncFull)}
	for _, rows := range []int{1000, 250, store.DefaultSweepBatchRows} {
		b.Run(fmt.Sprintf("batch=%d", rows), func(b *testing.B) {
			storetest.BenchSweep(b, harness, o, store.SweepOptions{BatchRows: rows})
		})
	}
}

// BenchmarkSweepLargeConversations measures governed Use latency while a
// sweep removes 500 conversations of 200 messages of 1 KiB each
// (storetest.BenchSweepLarge), at the default durability and batch size:
//
//	go test -run '^$' -bench BenchmarkSweepLargeConversations -benchtime 1x ./sqlstore
func BenchmarkSweepLargeConversations(b *testing.B) {
	o := storetest.BenchOptions{Durability: string(sqlstore.SyncFull)}
	storetest.BenchSweepLarge(b, harness, o, store.SweepOptions{})
}
