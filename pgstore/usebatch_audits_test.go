package pgstore

import (
	"bytes"
	"testing"

	"github.com/agentstore/sessionstore/internal/sqlcore"
)

// TestUseAuditsAsAuditPayload: the payloads and details that a batch's
// useAudits gives, the detail reused for calls of the same tool in a
// row, are byte for byte those of sqlcore.AuditPayload of
// sqlcore.UseAudit, call after call, whatever the tools, the sessions and
// the times (they are hashed into the audit chain).
func TestUseAuditsAsAuditPayload(t *testing.T) {
	var m useAudits
	calls := []struct {
		agent, id string
		tools     []string
	}{
		{"", "s-1", []string{"read_file"}},
		{"", "s-2", []string{"read_file"}},
		{"a", "s-3", []string{"read_file"}},
		{"", "s-4", []string{"write_file"}},
		{"", "s-5", []string{"read_file", "write_file"}},
		{"", "s-6", []string{"write_file"}},
		{"", "s-7", []string{`quote"and\back`}},
		{"", "s-8", []string{`quote"and\back`}},
		{"", "s-9", []string{"read_file"}},
		{"", "s-10", []string{}},
	}
	for i, c := range calls {
		at := int64(1_700_000_000_000_000 + i)
		rec, payload, detail, err := m.payload(at, c.agent, c.id, c.tools)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		want := sqlcore.UseAudit(c.agent, c.id, "", c.tools)
		wantPayload, wantDetail, err := sqlcore.AuditPayload(at, want)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(payload, wantPayload) || detail != wantDetail {
			t.Fatalf("call %d: payload %q, detail %q; want %q, %q", i, payload, detail, wantPayload, wantDetail)
		}
		if rec.Kind != want.Kind || rec.Outcome != want.Outcome || rec.SessionID != c.id || rec.AgentID != c.agent {
			t.Fatalf("call %d: record %+v; want %+v", i, rec, want)
		}
	}
}
