package archive_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/internal/pgtest"
	"github.com/agentstore/sessionstore/internal/sqltest"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// exportedAt is the fixed "exported_at" of the tests' exports, so that two
// exports of the same state are the same bytes.
var exportedAt = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// backend opens an empty store of one kind for t.
type backend struct {
	name string
	open func(t testing.TB) archive.Store
}

var (
	sqliteBackend = backend{"sqlite", func(t testing.TB) archive.Store {
		st, err := sqlstore.Open(t.Context(), sqltest.FreshPath(t, "s.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}}
	postgresBackend = backend{"postgres", func(t testing.TB) archive.Store {
		st, err := pgstore.Open(t.Context(), pgtest.NewStore(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}}
)

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fixture writes something of every facet through the store's API:
// governed sessions in several states with spend limits and
// reservations, a runtime session with overrides, an upload and an
// ended turn, conversations with every kind of record, agent sessions
// with events and app, user and session state (and the audit trail all
// of this appends).
func fixture(t *testing.T, st store.Store) {
	t.Helper()
	ctx := t.Context()
	gov, sp := st.Governance(), st.Spend()
	for _, id := range []string{"g-active", "g-closed", "g-used"} {
		_, err := gov.Create(ctx, store.CreateRequest{ID: id, AgentID: "agent-1", AuthorizedTools: []string{"read", "grep"},
			CallBudget: 5, RateLimit: 3, TimeLimit: 24 * time.Hour, DeclaredIntent: "fix the parser",
			SpendLimits: []store.SpendLimit{{Metric: store.MetricTotalTokens, Limit: 10_000}}})
		must(t, err)
	}
	_, err := gov.Use(ctx, store.UseRequest{SessionID: "g-used", Tools: []string{"read", "grep"}, RequestID: "call-1"})
	must(t, err)
	_, err = gov.Use(ctx, store.UseRequest{SessionID: "g-used", Tools: []string{"write"}})
	if err == nil {
		t.Fatal("a tool outside the allow-list was allowed")
	}
	_, err = gov.Close(ctx, "g-closed")
	must(t, err)
	must(t, sp.SetAgentLimits(ctx, "agent-1", []store.SpendLimit{{Metric: store.MetricCost, Window: store.WindowDay, Limit: 5_000_000, Currency: "USD"}}))
	_, err = sp.Reserve(ctx, store.ReserveRequest{SessionID: "g-active", RequestID: "r-1",
		Amount: store.SpendAmount{InputTokens: 900, CostMicros: 40_000}, Currency: "USD", TTL: 24 * time.Hour})
	must(t, err)
	_, err = sp.Settle(ctx, store.SettleRequest{SessionID: "g-active", RequestID: "r-1",
		Actual: store.SpendAmount{InputTokens: 700, CostMicros: 31_000}})
	must(t, err)
	_, err = sp.Reserve(ctx, store.ReserveRequest{SessionID: "g-active", RequestID: "r-2",
		Amount: store.SpendAmount{CostMicros: 50_000}, Currency: "USD", TTL: 24 * time.Hour})
	must(t, err)

	rt := st.Runtime()
	_, err = rt.Insert(ctx, store.NewRuntimeSession{ID: "r-1", AgentAlias: "coder", WorkspaceDir: "/work/r1", ChatMode: "chat", OwnerID: "tui-7"})
	must(t, err)
	model := "sonnet"
	_, err = rt.SetOverrides(ctx, "r-1", store.Overrides{Model: &model})
	must(t, err)
	_, err = rt.PutUpload(ctx, store.PutUploadRequest{SessionID: "r-1", RefID: "up-1", Marker: "[image]",
		WorkspacePath: "/work/r1/a.png", Content: []byte{0, 1, 2, 255}})
	must(t, err)
	gen, _, err := rt.BeginTurn(ctx, "r-1")
	must(t, err)
	ended, err := rt.EndTurn(ctx, "r-1", gen)
	must(t, err)
	if !ended {
		t.Fatal("EndTurn ended nothing")
	}

	conv := st.Conversations()
	_, err = conv.Save(ctx, store.NewConversation("c-1"))
	must(t, err)
	_, err = conv.AppendMessages(ctx, "c-1", store.UserMessage("why does the parser fail?"), store.AssistantMessage("a missing case"))
	must(t, err)
	must(t, conv.PutArtifacts(ctx, "c-1", store.Artifact{URI: "a3s://tool-output/read/1", ID: "1", ToolName: "read",
		Content: "package parser\n", OriginalBytes: 15, ShownBytes: 15}))
	_, err = conv.AppendTraces(ctx, "c-1", store.TraceEvent{Schema: "trace.v1", Kind: store.TraceToolExecution, Name: "read",
		Success: true, DurationMS: 3, Details: json.RawMessage(`{"bytes": 15}`)})
	must(t, err)
	must(t, conv.PutRuns(ctx, "c-1", store.RunRecord{Snapshot: store.RunSnapshot{ID: "run-1", Prompt: "fix it"}}))
	_, err = conv.AppendRunEvents(ctx, "c-1", "run-1", store.RunEvent{Event: json.RawMessage(`{"type": "note"}`)})
	must(t, err)
	must(t, conv.AppendReports(ctx, "c-1", store.VerificationReport{Schema: "v1", Subject: "read", Status: store.VerificationNeedsReview}))
	_, err = conv.Save(ctx, store.NewConversation("c-2"))
	must(t, err)

	as := st.AgentSessions()
	one := json.RawMessage(`1`)
	for _, k := range []store.SessionKey{{App: "support", User: "ada", Session: "s-1"}, {App: "support", User: "bob", Session: "s-2"}} {
		_, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: k,
			State: store.ScopedState{Session: map[string]json.RawMessage{"topic": json.RawMessage(`"billing"`)}}})
		must(t, err)
		_, err = as.AppendEvent(ctx, store.AppendEventRequest{Key: k,
			Event: store.AgentEvent{ID: "e-1", InvocationID: "inv-1", Data: json.RawMessage(`{"author": "user", "text": "hello"}`)},
			Delta: store.ScopedState{App: map[string]json.RawMessage{"seen": one}, User: map[string]json.RawMessage{"tier": json.RawMessage(`"gold"`)}}})
		must(t, err)
	}
}

// export returns the export document of st.
func export(t *testing.T, st store.Store, opts archive.ExportOptions) ([]byte, archive.Counts) {
	t.Helper()
	var buf bytes.Buffer
	opts.Now = exportedAt
	counts, err := archive.Export(t.Context(), st, &buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), counts
}

// TestRoundTrip exports a store with every facet, imports it into an
// empty store, exports that, and so on: every export is the same bytes,
// on SQLite, on PostgreSQL and from SQLite to PostgreSQL and back.
func TestRoundTrip(t *testing.T) {
	for _, path := range [][]backend{
		{sqliteBackend, sqliteBackend},
		{postgresBackend, postgresBackend},
		{sqliteBackend, postgresBackend, sqliteBackend},
	} {
		name := ""
		for i, b := range path {
			if i > 0 {
				name += "_"
			}
			name += b.name
		}
		t.Run(name, func(t *testing.T) {
			src := path[0].open(t)
			fixture(t, src)
			want, counts := export(t, src, archive.ExportOptions{})
			for _, f := range facet.All() {
				if counts.Of(f.Name) == 0 {
					t.Fatalf("the fixture wrote nothing of facet %s", f.Name)
				}
			}
			for i, b := range path[1:] {
				dst := b.open(t)
				res, err := archive.Import(t.Context(), dst, bytes.NewReader(want), archive.ImportOptions{})
				if err != nil {
					t.Fatalf("hop %d: import: %v", i+1, err)
				}
				if res.Counts != counts || res.Skipped != 0 {
					t.Errorf("hop %d: imported %+v (%d skipped), exported %+v", i+1, res.Counts, res.Skipped, counts)
				}
				got, _ := export(t, dst, archive.ExportOptions{})
				if !bytes.Equal(got, want) {
					t.Fatalf("hop %d (%s): the export of the import differs:\n%s", i+1, b.name, firstDiff(want, got))
				}
				rep, err := dst.Audit().Verify(t.Context())
				must(t, err)
				if !rep.OK() {
					t.Errorf("hop %d: the imported audit trail does not verify: %+v", i+1, rep.Problems)
				}
				// The search index is not in the archive: the import's
				// writes index every item as the source's did.
				srcIdx, err := src.(store.Searcher).CheckSearchIndex(t.Context())
				must(t, err)
				dstIdx, err := dst.(store.Searcher).CheckSearchIndex(t.Context())
				must(t, err)
				if !dstIdx.OK() || fmt.Sprint(dstIdx.Kinds) != fmt.Sprint(srcIdx.Kinds) {
					t.Errorf("hop %d: search index after import %+v, source %+v", i+1, dstIdx, srcIdx)
				}
			}
		})
	}
}

// firstDiff shows where two documents part.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-300)
	return "want …" + string(a[from:min(len(a), i+200)]) + "\n got …" + string(b[from:min(len(b), i+200)])
}
