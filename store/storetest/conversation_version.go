package storetest

import (
	"encoding/json"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// testConvRecordWritesBumpVersion: every write of a conversation's records
// (artifacts, traces, runs, run events, reports) bumps its Version by one,
// as every other change does, so that a conditional Save or Append of a
// writer that loaded it before fails with ErrConflict instead of going on
// unaware. A write refused as invalid bumps nothing.
func testConvRecordWritesBumpVersion(t *testing.T, e *env) {
	s := seedSession()
	s.ID = "session/v"
	e.save(s)
	c := e.conv()
	writes := []struct {
		name string
		fn   func() error
	}{
		{"PutArtifacts", func() error { return c.PutArtifacts(e.ctx, s.ID, seedArtifact()) }},
		{"PutArtifacts (replace)", func() error { return c.PutArtifacts(e.ctx, s.ID, seedArtifact()) }},
		{"AppendTraces", func() error { _, err := c.AppendTraces(e.ctx, s.ID, seedTrace("x", true, 0, 0, 0)); return err }},
		{"SaveTraces", func() error { return c.SaveTraces(e.ctx, s.ID, []store.TraceEvent{seedTrace("y", true, 0, 0, 0)}) }},
		{"PutRuns", func() error { return c.PutRuns(e.ctx, s.ID, seedRun()) }},
		{"AppendRunEvents", func() error {
			_, err := c.AppendRunEvents(e.ctx, s.ID, "run-1", store.RunEvent{Event: json.RawMessage(`{"type":"x"}`)})
			return err
		}},
		{"AppendReports", func() error { return c.AppendReports(e.ctx, s.ID, seedReport()) }},
		{"SaveReports", func() error { return c.SaveReports(e.ctx, s.ID, []store.VerificationReport{seedReport()}) }},
	}
	for _, w := range writes {
		before := e.load(s.ID)
		if err := w.fn(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		info, err := c.Info(e.ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.Version != before.Version+1 {
			t.Fatalf("%s: version %d -> %d, want one more", w.name, before.Version, info.Version)
		}
		// The writer that loaded the conversation before sees the change.
		before.Config.Name = "edit on a stale copy"
		_, err = c.Save(e.ctx, before)
		wantErr(t, err, store.ErrConflict)
		_, err = c.Append(e.ctx, store.AppendRequest{ID: s.ID, Messages: []store.Message{store.UserMessage("x")},
			ExpectVersion: before.Version})
		wantErr(t, err, store.ErrConflict)
	}
	// A refused write changes nothing, the version included.
	v := e.load(s.ID).Version
	err := c.PutArtifacts(e.ctx, s.ID, store.Artifact{})
	wantErr(t, err, store.ErrInvalidInput)
	if got := e.load(s.ID); got.Version != v || got.Config.Name != s.Config.Name {
		t.Fatalf("refused write: version %d (was %d), name %q", got.Version, v, got.Config.Name)
	}
}
