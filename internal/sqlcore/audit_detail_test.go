package sqlcore

import (
	"testing"

	"github.com/agentstore/sessionstore/store"
)

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"SessionID":   "session_id",
		"Tool":        "tool",
		"ExpiresAt":   "expires_at",
		"WindowCalls": "window_calls",
		"AgentID":     "agent_id",
		"HTTPCode":    "http_code",
		"Limit2":      "limit2",
		"session_id":  "session_id",
		"requested":   "requested",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAuditDetailOfARefusal: a refusal's detail has snake_case keys in
// the typed error's field order; other details are marshalled as they are.
func TestAuditDetailOfARefusal(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{&store.AgentMismatchError{SessionID: "s", Expected: "a", Actual: "b"}, `{"session_id":"s","expected":"a","actual":"b"}`},
		{&store.RateLimitError{SessionID: "s", Limit: 2, WindowCalls: 2, Requested: 1}, `{"session_id":"s","limit":2,"window":0,"window_calls":2,"requested":1}`},
		{map[string]string{"Status": "x"}, `{"Status":"x"}`},
		{nil, `{}`},
	} {
		got, err := AuditDetail(c.v)
		if err != nil || got != c.want {
			t.Errorf("AuditDetail(%#v) = %s, %v; want %s", c.v, got, err, c.want)
		}
	}
}
