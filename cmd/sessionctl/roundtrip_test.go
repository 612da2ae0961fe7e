package main

// Export and import keep everything: a database with every facet,
// exported and imported into an empty database, dumps (dump_test.go) the
// same as the original, on SQLite, on PostgreSQL, and from SQLite to
// PostgreSQL and back.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// fullFixture writes every facet, at times spread over a few minutes of
// the env's clock so that a record stamped at import time would show:
// governed sessions in every state (fixture), runtime sessions with
// overrides, uploads and turns (rtFixture, then later touches and
// uploads), conversations with messages, cost records, artifacts (one
// replaced later), traces, runs and reports added later and a trimmed
// history (convFixture and more), and agent sessions (agentFixture).
func (e *testEnv) fullFixture() {
	t := e.t
	t.Helper()
	ctx := context.Background()
	e.fixture()
	e.rtFixture()
	e.clock.Advance(time.Minute)
	e.convFixture()
	e.clock.Advance(90 * time.Second)

	st := e.openStore()
	rt, conv := st.Runtime(), st.Conversations()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rt.Touch(ctx, "r2"))
	_, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "r2", RefID: "late", Marker: "[late]",
		WorkspacePath: "/work/r2/late.bin", Content: []byte{0, 1, 2, 255}})
	must(err)
	provider := "anthropic"
	_, err = rt.SetOverrides(ctx, "r3", store.Overrides{Provider: &provider})
	must(err)
	e.clock.Advance(1500 * time.Millisecond)
	must(conv.PutArtifacts(ctx, "c1",
		store.Artifact{URI: "a3s://tool-output/read/1", ID: "1", ToolName: "read_file", Content: "package parser // v2\n", OriginalBytes: 21, ShownBytes: 10},
		store.Artifact{URI: "a3s://tool-output/grep/2", ID: "2", ToolName: "grep", Content: "parser.go:12: map"}))
	e.clock.Advance(time.Second)
	_, err = conv.AppendTraces(ctx, "c1", store.TraceEvent{Schema: "trace.v1", Kind: store.TraceToolExecution, Name: "grep",
		Success: true, DurationMS: 3, MetadataKeys: []string{"pattern"}, ArtifactURIs: []string{"a3s://tool-output/grep/2"},
		Details: json.RawMessage(`{"matches": 1}`)})
	must(err)
	e.clock.Advance(time.Second)
	must(conv.AppendReports(ctx, "c1", store.VerificationReport{Schema: "v1", Subject: "grep", Status: store.VerificationNeedsReview,
		EffectDigest: "sha256:00"}))
	_, err = conv.AppendRunEvents(ctx, "c1", "run-1", store.RunEvent{Event: json.RawMessage(`{"type": "note"}`)})
	must(err)
	e.clock.Advance(time.Second)
	_, err = conv.TrimMessages(ctx, "c1/child", 3)
	must(err)
	_, err = conv.AppendMessages(ctx, "c1/child", store.AssistantMessage("after the trim"))
	must(err)
	// Spend: an agent's limits, a reservation settled, one still held.
	must(st.Spend().SetAgentLimits(ctx, "a1", []store.SpendLimit{{Metric: store.MetricCost, Window: store.WindowDay, Limit: 5_000_000, Currency: "USD"}}))
	_, err = st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: "t-active", RequestID: "call-1",
		Amount: store.SpendAmount{InputTokens: 900, CostMicros: 40_000}, Currency: "USD", TTL: 24 * time.Hour})
	must(err)
	_, err = st.Spend().Settle(ctx, store.SettleRequest{SessionID: "t-active", RequestID: "call-1",
		Actual: store.SpendAmount{InputTokens: 700, CostMicros: 31_000}, Conversation: "c1"})
	must(err)
	_, err = st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: "t-active", RequestID: "call-2",
		Amount: store.SpendAmount{CostMicros: 50_000}, Currency: "USD", TTL: 24 * time.Hour})
	must(err)
	must(st.Close())
	e.clock.Advance(time.Minute)
	e.agentFixture()
}

// TestRoundTripEveryFacet exports a database with every facet and
// imports it into empty databases, one after the other (each hop exports
// the previous import), and compares the logical dumps.
func TestRoundTripEveryFacet(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { roundTrip(t, newTestEnv, newTestEnv) })
	t.Run("postgres", func(t *testing.T) { roundTrip(t, newPGEnv, newPGEnv) })
	t.Run("sqlite_postgres_sqlite", func(t *testing.T) { roundTrip(t, newTestEnv, newPGEnv, newTestEnv) })
}

func roundTrip(t *testing.T, makers ...envMaker) {
	src := makers[0](t)
	src.fullFixture()
	// Imports run an hour after the last write, so that anything stamped
	// with the import's time instead of the exported one shows. Every env
	// shares the clock, so that every dump reads at the same moment (a
	// governed session's effective status depends on it).
	src.clock.Advance(time.Hour)
	want := src.dump()
	for _, f := range facet.All() {
		if len(want[f.Name]) < 200 {
			t.Fatalf("the fixture wrote (almost) nothing of facet %s:\n%s", f.Name, want[f.Name])
		}
	}
	prev := src
	for i, mk := range makers[1:] {
		file := filepath.Join(prev.dir, fmt.Sprintf("hop%d.json", i+1))
		r := prev.run("export", "--output", file).want(t, 0)
		const counts = "4 governed sessions, 3 runtime sessions, 3 conversations, 4 agent sessions and 5 audit chains"
		if r.stderr != "exported "+counts+" to "+file+"\n" {
			t.Errorf("export: %q", r.stderr)
		}
		dst := mk(t)
		dst.clock = src.clock
		r = dst.run("import", file).want(t, 0)
		if r.stdout != "imported "+counts+" from 1 file\n" {
			t.Errorf("import: %q", r.stdout)
		}
		backends := []string{"sqlite", "postgres"}
		what := fmt.Sprintf("hop %d (%s to %s)", i+1, backends[boolIndex(prev.pg)], backends[boolIndex(dst.pg)])
		sameDump(t, what, want, dst.dump())
		prev = dst
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestDumpCoversEveryFacet: the round-trip comparison leaves no facet out.
func TestDumpCoversEveryFacet(t *testing.T) {
	t.Parallel()
	for _, f := range facet.All() {
		if dumpers[f.Name] == nil {
			t.Errorf("facet %s has no dumper in dump_test.go", f.Name)
		}
	}
	if len(dumpers) != len(facet.All()) {
		t.Errorf("dumpers for %d facets, the registry has %d", len(dumpers), len(facet.All()))
	}
}
