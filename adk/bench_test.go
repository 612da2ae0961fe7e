package adk_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// The same benchmarks run against ADK's own database service in
// internal/adkdbbench; run both in one command (see docs/agent-sessions.md):
//
//	cd adk && go test -run '^$' -bench . . ./internal/adkdbbench

func benchService(b *testing.B) *adk.Service {
	svc, err := adk.Open(context.Background(), filepath.Join(benchkit.Dir(b), "sessions.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	return svc
}

func BenchmarkAppendEvent(b *testing.B) {
	b.Run("service=sessionstore", func(b *testing.B) { benchkit.Append(b, benchService(b)) })
}

func BenchmarkAppendEventParallel(b *testing.B) {
	b.Run("service=sessionstore", func(b *testing.B) { benchkit.AppendParallel(b, benchService(b)) })
}

func BenchmarkGetRecent100(b *testing.B) {
	b.Run("service=sessionstore", func(b *testing.B) { benchkit.GetRecent(b, benchService(b), 1000, 100) })
}
