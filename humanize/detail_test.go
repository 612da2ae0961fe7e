package humanize

import (
	"encoding/json"
	"testing"
)

// TestAuditDetail: the audit trail's details as people read them: money
// from micro-units as exact decimals with the currency, Unix-millisecond
// times as RFC 3339 UTC, no window start for a lifetime window, keys in
// their order, text as the characters it holds.
func TestAuditDetail(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"session_id":"s","agent_id":"a","scope":"session","metric":"cost","window":"lifetime","window_start":"1970-01-01T00:00:00Z","currency":"USD","limit":1000000,"spent":39000,"reserved":0,"requested":20000}`,
			`{"session_id":"s","agent_id":"a","scope":"session","metric":"cost","window":"lifetime","currency":"USD","limit":"1.00 USD","spent":"0.039 USD","reserved":"0.00 USD","requested":"0.02 USD"}`},
		{`{"metric":"total_tokens","window":"day","window_start":"2026-11-28T00:00:00Z","limit":5000,"spent":10}`,
			`{"metric":"total_tokens","window":"day","window_start":"2026-11-28T00:00:00Z","limit":5000,"spent":10}`},
		{`{"amount":{"input_tokens":4000,"cost_micros":20000},"currency":"USD","expires_at_ms":1795828250921}`,
			`{"amount":{"input_tokens":4000,"cost":"0.02 USD"},"currency":"USD","expires_at":"2026-11-28T01:10:50.921Z"}`},
		{`{"limits":[{"metric":"cost","window":"day","limit":1000000,"currency":"EUR"},{"metric":"total_tokens","window":"lifetime","limit":5000}]}`,
			`{"limits":[{"metric":"cost","window":"day","limit":"1.00 EUR","currency":"EUR"},{"metric":"total_tokens","window":"lifetime","limit":5000}]}`},
		{`{"call_budget":3,"time_limit_ms":600000,"tools":["<b>"]}`, `{"call_budget":3,"time_limit_ms":600000,"tools":["<b>"]}`},
		{`[1,2]`, `[1,2]`},
		{`not json`, `not json`},
	} {
		if got := string(AuditDetail(json.RawMessage(c.in))); got != c.want {
			t.Errorf("AuditDetail(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}
