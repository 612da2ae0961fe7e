// Package benchkit holds the benchmark bodies shared by this module's
// benchmarks of its own session service and of ADK's database service, so
// that both are measured doing exactly the same thing. (The two cannot be
// linked into one test binary: both SQLite drivers register the name
// "sqlite".)
package benchkit

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/session"
)

// Dir returns the directory benchmark databases live in: $BENCH_DIR when
// set (to measure another file system), else a temporary directory.
func Dir(b *testing.B) string {
	if d := os.Getenv("BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

var nextSession atomic.Int64

func create(b *testing.B, svc session.Service) session.Session {
	id := fmt.Sprintf("s%d", nextSession.Add(1))
	resp, err := svc.Create(context.Background(), &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: id})
	if err != nil {
		b.Fatal(err)
	}
	return resp.Session
}

// Append measures appending one event to a session through one handle.
func Append(b *testing.B, svc session.Service) {
	ctx := context.Background()
	s := create(b, svc)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := svc.AppendEvent(ctx, s, Event(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// Writers is the number of goroutines of AppendParallel.
const Writers = 16

// AppendParallel measures appends from Writers goroutines, each to a
// session of its own. Failed appends are counted (reported as errors/op),
// not fatal, so that a service that refuses under contention is measured
// too.
func AppendParallel(b *testing.B, svc session.Service) {
	ctx := context.Background()
	var errs atomic.Int64
	var firstErr atomic.Value
	b.SetParallelism((Writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var s session.Session
		id := fmt.Sprintf("s%d", nextSession.Add(1))
		for s == nil {
			resp, err := svc.Create(ctx, &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: id})
			if err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				continue
			}
			s = resp.Session
		}
		i := 0
		for pb.Next() {
			if err := svc.AppendEvent(ctx, s, Event(i)); err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				// A refused append leaves a database service's handle
				// behind; take a fresh one.
				got, gerr := svc.Get(ctx, &session.GetRequest{AppName: "bench", UserID: "u", SessionID: s.ID(), NumRecentEvents: 1})
				if gerr == nil {
					s = got.Session
				}
			}
			i++
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	b.ReportMetric(float64(errs.Load())/float64(b.N), "errors/op")
	if v := firstErr.Load(); v != nil {
		b.Logf("first of %d failed calls: %s", errs.Load(), v)
	}
}

// GetRecent measures reading a session with its recent most recent events;
// the session has total events, and the table holds three more sessions of
// total events each.
func GetRecent(b *testing.B, svc session.Service, total, recent int) {
	ctx := context.Background()
	s := create(b, svc)
	for i := range total {
		if err := svc.AppendEvent(ctx, s, Event(i)); err != nil {
			b.Fatal(err)
		}
	}
	// Other sessions' events in the same table, as in a real database.
	for range 3 {
		o := create(b, svc)
		for i := range total {
			if err := svc.AppendEvent(ctx, o, Event(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	req := &session.GetRequest{AppName: "bench", UserID: "u", SessionID: s.ID(), NumRecentEvents: recent}
	b.ReportAllocs()
	for b.Loop() {
		got, err := svc.Get(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if n := got.Session.Events().Len(); n != recent {
			b.Fatalf("got %d events, want %d", n, recent)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
