package view

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestViews pins each view's JSON: milliseconds for durations, RFC 3339
// UTC times absent when there is none, money as exact decimals with the
// currency, the audit detail rendered as humanize renders it.
func TestViews(t *testing.T) {
	day := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		v    any
		want string
	}{
		"cost limit of a day": {NewLimit(store.LimitStatus{Scope: store.ScopeSession, WindowStart: day, Spent: 39_000, Reserved: 20_000,
			SpendLimit: store.SpendLimit{Metric: store.MetricCost, Window: store.WindowDay, Limit: 1_000_000, Currency: "USD"}}),
			`{"scope":"session","metric":"cost","window":"day","window_start":"2026-11-28T00:00:00Z","window_end":"2026-11-29T00:00:00Z","currency":"USD","limit":"1.00 USD","spent":"0.039 USD","reserved":"0.02 USD","remaining":"0.941 USD"}`},
		"token limit of a lifetime": {NewLimit(store.LimitStatus{Scope: store.ScopeAgent, WindowStart: time.Unix(0, 0), Spent: 6000,
			SpendLimit: store.SpendLimit{Metric: store.MetricTotalTokens, Window: store.WindowLifetime, Limit: 5000}}),
			`{"scope":"agent","metric":"total_tokens","window":"lifetime","limit":5000,"spent":6000,"reserved":0,"remaining":0}`},
		"age policy": {NewPolicy(store.Policy{Kind: store.PolicyConversationsIdle, MaxAge: 30 * 24 * time.Hour, ReadsCount: true, UpdatedAt: day.Add(1500 * time.Millisecond)}),
			`{"kind":"conversations_idle","max_age_ms":2592000000,"reads_count":true,"updated_at":"2026-11-28T00:00:01.5Z"}`},
		"count policy": {Policies([]store.Policy{{Kind: store.PolicyMessagesKeepLast, KeepLast: 100}}),
			`[{"kind":"messages_keep_last","keep_last":100}]`},
		"no policies": {Policies(nil), `[]`},
		"no events":   {AuditEvents(nil), `[]`},
		"audit event": {NewAuditEvent(store.AuditEvent{AgentID: "a", Chain: "s", Seq: 2, At: day.In(time.FixedZone("x", 3600)), Kind: store.AuditReserve,
			Outcome: "allowed", SessionID: "s", RequestID: "r", Detail: json.RawMessage(`{"metric":"cost","currency":"USD","limit":1000000}`), PrevHash: "p", Hash: "h"}),
			`{"agent_id":"a","chain":"s","seq":2,"at":"2026-11-28T00:00:00Z","kind":"reserve","outcome":"allowed","session_id":"s","request_id":"r","detail":{"metric":"cost","currency":"USD","limit":"1.00 USD"},"prev_hash":"p","hash":"h"}`},
		"conversation": {NewConversation(store.ConversationSummary{ID: "c", Name: "n", State: "active", MessageCount: 4,
			TotalUsage: store.TokenUsage{TotalTokens: 9}, TotalCost: 0.039000000000000004, Version: 3, CreatedAt: day, UpdatedAt: day.Add(time.Millisecond)}),
			`{"id":"c","name":"n","workspace":"","state":"active","parent_id":"","model_name":"","message_count":4,"total_usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":9},"total_cost":"0.039 USD","total_cost_micros":39000,"version":3,"created_at":"2026-11-28T00:00:00Z","updated_at":"2026-11-28T00:00:00.001Z"}`},
		"runtime session without a turn": {NewRuntimeSession(store.RuntimeSession{ID: "r", AgentAlias: "a", ChatMode: store.ChatModeChat, CreatedAt: day, LastActive: day}),
			`{"id":"r","agent_alias":"a","workspace_dir":"","chat_mode":"chat","owner_id":"","overrides":{},"created_at":"2026-11-28T00:00:00Z","last_active":"2026-11-28T00:00:00Z","turn":{"generation":0,"running":false,"owner":"","cancel_cause":"","stale":false}}`},
		"agent session": {NewAgentSession(store.AgentSession{Key: store.SessionKey{App: "a", User: "u", Session: "s"}, Version: 2, EventCount: 5,
			State: store.ScopedState{Session: map[string]json.RawMessage{"k": json.RawMessage(`1`)}}, CreatedAt: day, UpdatedAt: day}),
			`{"app":"a","user":"u","session":"s","version":2,"event_count":5,"session_state_keys":1,"created_at":"2026-11-28T00:00:00Z","updated_at":"2026-11-28T00:00:00Z"}`},
		"settled reservation": {NewReservation(store.Reservation{SessionID: "s", ID: "r", AgentID: "a", Status: store.ReservationSettled,
			Amount: store.SpendAmount{InputTokens: 1000, OutputTokens: 500, CostMicros: 250_000}, Currency: "USD", Actual: store.SpendAmount{OutputTokens: 7},
			CreatedAt: day, ExpiresAt: day.Add(time.Minute), ClosedAt: day.Add(time.Second)}),
			`{"session_id":"s","id":"r","agent_id":"a","status":"settled","amount":{"input_tokens":1000,"output_tokens":500,"cost_micros":250000},"currency":"USD","actual":{"input_tokens":0,"output_tokens":7,"cost_micros":0},"created_at":"2026-11-28T00:00:00Z","expires_at":"2026-11-28T00:01:00Z","closed_at":"2026-11-28T00:00:01Z","amount_text":"1000 in + 500 out tokens, 0.25 USD","actual_text":"0 in + 7 out tokens, 0.00 USD"}`},
		"open reservation of nothing": {NewReservation(store.Reservation{SessionID: "s", ID: "r", AgentID: "a", Status: store.ReservationReserved, CreatedAt: day, ExpiresAt: day}),
			`{"session_id":"s","id":"r","agent_id":"a","status":"reserved","amount":{"input_tokens":0,"output_tokens":0,"cost_micros":0},"actual":{"input_tokens":0,"output_tokens":0,"cost_micros":0},"created_at":"2026-11-28T00:00:00Z","expires_at":"2026-11-28T00:00:00Z","amount_text":"nothing"}`},
		"no spend": {NewSpend(store.SpendStatus{}), `{"limits":[],"live_reservations":0}`},
		"spend": {NewSpend(store.SpendStatus{Live: 2, Limits: []store.LimitStatus{{Scope: store.ScopeAgent, Spent: 10,
			SpendLimit: store.SpendLimit{Metric: store.MetricInputTokens, Window: store.WindowLifetime, Limit: 100}}}}),
			`{"limits":[{"scope":"agent","metric":"input_tokens","window":"lifetime","limit":100,"spent":10,"reserved":0,"remaining":90}],"live_reservations":2}`},
	} {
		if got := marshal(t, c.v); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, c.want)
		}
	}
}
