package sqlstore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// TestAuditLegacyRefusalDetailsStillVerify: events written before refusal
// details took snake_case keys carry the Go field names; their hashes
// cover those bytes, which the store keeps and verifies as stored, and a
// new refusal appended after them has snake_case keys.
func TestAuditLegacyRefusalDetailsStillVerify(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, sqlstore.FreshDBPath(t, "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Governance().Create(ctx, longSession("s1", 5))
	if err != nil {
		t.Fatal(err)
	}
	agent := sess.AgentID + "-legacy"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	legacy := []struct{ kind, outcome, detail string }{
		{string(store.AuditUse), store.OutcomeToolDenied, `{"SessionID":"s0","Tool":"write_file"}`},
		{string(store.AuditUse), store.OutcomeAgentMismatch, `{"SessionID":"s0","Expected":"a","Actual":"b"}`},
	}
	prev := rowcodec.AuditZeroHash
	var events []store.AuditEvent
	for i, l := range legacy {
		seq := int64(i + 1)
		hash, ok := rowcodec.AuditHash(prev, seq, agent,
			rowcodec.AuditPayload(at.UnixMilli(), l.kind, l.outcome, "s0", "", l.detail))
		if !ok {
			t.Fatal("AuditHash refused the previous hash")
		}
		events = append(events, store.AuditEvent{AgentID: agent, Seq: seq, At: at, Kind: store.AuditKind(l.kind),
			Outcome: l.outcome, SessionID: "s0", Detail: json.RawMessage(l.detail), PrevHash: prev, Hash: hash})
		prev = hash
	}
	heads := []store.AuditHead{{AgentID: agent, Seq: int64(len(events)), Hash: prev}}
	if _, err := st.Audit().Restore(ctx, store.AuditRestoreRequest{Events: events, Heads: heads}); err != nil {
		t.Fatalf("Restore of legacy events: %v", err)
	}
	// A new refusal, on the store's own chain.
	if _, err := st.Governance().Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "intruder", Tools: []string{"read_file"}}); err == nil {
		t.Fatal("use by another agent was allowed")
	}
	rep, err := st.Audit().Verify(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
	page, err := st.Audit().List(ctx, store.AuditFilter{AgentID: agent})
	if err != nil || len(page.Items) != len(legacy) {
		t.Fatalf("legacy chain: %+v, %v", page, err)
	}
	for i, ev := range page.Items {
		if string(ev.Detail) != legacy[i].detail {
			t.Errorf("legacy event %d detail = %s, want the stored bytes %s", i+1, ev.Detail, legacy[i].detail)
		}
	}
	page, err = st.Audit().List(ctx, store.AuditFilter{AgentID: sess.AgentID, Outcome: store.OutcomeAgentMismatch})
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("new refusal: %+v, %v", page, err)
	}
	if got, want := string(page.Items[0].Detail), `{"session_id":"s1","expected":"`+sess.AgentID+`","actual":"intruder"}`; got != want {
		t.Errorf("new refusal detail = %s, want %s", got, want)
	}
}
