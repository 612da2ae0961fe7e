package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/store"
)

// BenchmarkGovernedStoresShareSessions measures governed Use throughput
// when two stores (two pools, as two processes of a fleet would have)
// decide calls on the same sessions at once: 16 sessions of 16 agents,
// each with one caller in each store, so that every batch of one store
// wants rows that a batch of the other holds, again and again:
//
//	SESSIONSTORE_PG_DURABLE=1 scripts/with-postgres.sh go test ./pgstore -run '^$' -bench GovernedStoresShareSessions -benchtime 3x
//
// Each iteration runs every caller's 300 calls; calls/s is the median of
// the iterations. wary-reruns/call and busy-reruns/call count the batches
// that gave up on a row the other store held (wary: without the
// lock-first step, then rerun with it; busy: found by the lock-first step,
// their calls sent to side queues), per call. It fails unless every
// session's calls made are exactly the calls its callers were granted.
// The two stores share this process's cores and Go runtime, where two
// processes would each have their own.
func BenchmarkGovernedStoresShareSessions(b *testing.B) {
	loc := newSchema(b)
	ctx := context.Background()
	var sts []*pgstore.Store
	for range 2 {
		st, err := pgstore.Open(ctx, loc, pgstore.WithoutIndexer())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		sts = append(sts, st)
	}
	const sessions, each = 16, 300
	var ids []string
	for i := range sessions {
		s, err := sts[0].Governance().Create(ctx, store.CreateRequest{
			ID: fmt.Sprintf("s-%02d", i), AgentID: fmt.Sprintf("a-%02d", i), AuthorizedTools: []string{"read_file"},
			CallBudget: 1 << 40, TimeLimit: time.Hour,
		})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	var rates []float64
	rounds := 0
	for b.Loop() {
		rounds++
		start := time.Now()
		var wg sync.WaitGroup
		for _, st := range sts {
			for _, id := range ids {
				wg.Go(func() {
					for range each {
						if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: id, Tools: []string{"read_file"}}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
		}
		wg.Wait()
		rates = append(rates, float64(len(sts)*sessions*each)/time.Since(start).Seconds())
	}
	slices.Sort(rates)
	calls := float64(rounds * len(sts) * sessions * each)
	var wary, busy int64
	for _, st := range sts {
		wary += st.UseWary()
		busy += st.UseBusy()
	}
	b.ReportMetric(rates[len(rates)/2], "calls/s")
	b.ReportMetric(float64(wary)/calls, "wary-reruns/call")
	b.ReportMetric(float64(busy)/calls, "busy-reruns/call")
	for _, id := range ids {
		got, err := sts[1].Governance().Get(ctx, id)
		if err != nil || got.CallsMade != int64(rounds*len(sts)*each) {
			b.Fatalf("%s: calls made %d, %v; want %d", id, got.CallsMade, err, rounds*len(sts)*each)
		}
	}
}
