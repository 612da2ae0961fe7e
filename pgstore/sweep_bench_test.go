package pgstore_test

import (
	"fmt"
	"testing"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

// BenchmarkSweep measures governed Use latency while a sweep deletes
// 1,000,000 rows (storetest.BenchSweep; SESSIONSTORE_SWEEP_BENCH_ROWS
// scales it):
//
//	scripts/with-postgres.sh go test -run '^$' -bench BenchmarkSweep -benchtime 1x ./pgstore
func BenchmarkSweep(b *testing.B) {
	serverURL(b)
	for _, rows := range []int{1000, store.DefaultSweepBatchRows} {
		b.Run(fmt.Sprintf("batch=%d", rows), func(b *testing.B) {
			storetest.BenchSweep(b, harness, storetest.BenchOptions{}, store.SweepOptions{BatchRows: rows})
		})
	}
}
