package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Names and durations are kept exactly as given, or refused: the store
// never trims a name nor rounds a duration, so the call counted is always
// the one asked for.

// badNames are agent and request ids the store refuses: white space at
// either end (ASCII or not) and control characters (C0, DEL, C1).
var badNames = map[string]string{
	"trailing space":      "agent-1 ",
	"leading space":       " agent-1",
	"trailing tab":        "agent-1\t",
	"trailing newline":    "agent-1\n",
	"no-break space":      "agent-1\u00a0",
	"ideographic space":   "\u3000agent-1",
	"C1 control (NEL)":    "agent\u00851",
	"C1 control (CSI)":    "a\u009b31mb",
	"escape":              "a\x1b[31mb",
	"DEL":                 "agent\x7f",
	"only a space":        " ",
	"line separator tail": "agent\u2028",
}

func wantInvalidField(t *testing.T, name string, err error, field string) {
	t.Helper()
	var inv *store.InvalidInputError
	if !errors.As(err, &inv) || !errors.Is(err, store.ErrInvalidInput) || inv.Field != field {
		t.Errorf("%s: got %v, want ErrInvalidInput for field %s", name, err, field)
	}
}

// testNamesVerbatim: agent ids, delegation chain entries, request ids and
// tool names with white space at an end or control characters are refused
// at create and at use (and by the calls that look agents up), writing
// and consuming nothing; inner spaces are valid and compared exactly.
func testNamesVerbatim(t *testing.T, e *env) {
	g := e.gov()
	for name, bad := range badNames {
		req := baseRequest()
		req.AgentID = bad
		_, err := g.Create(e.ctx, req)
		wantInvalidField(t, "Create agent "+name, err, "agent_id")
		req = baseRequest()
		req.DelegationChain = []string{"root", bad}
		_, err = g.Create(e.ctx, req)
		wantInvalidField(t, "Create delegation chain "+name, err, "delegation_chain")
	}
	if p, err := g.List(e.ctx, store.ListFilter{}); err != nil || len(p.Items) != 0 {
		t.Fatalf("refused creates wrote %d sessions (%v)", len(p.Items), err)
	}

	req := baseRequest()
	req.AgentID = "agent 7" // inner spaces are part of the name
	req.CallBudget = 10
	s := e.create(req)
	if s.AgentID != "agent 7" {
		t.Fatalf("agent id stored as %q", s.AgentID)
	}
	for name, bad := range badNames {
		_, err := g.Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: bad, Tools: []string{"read_file"}})
		wantInvalidField(t, "Use agent "+name, err, "agent_id")
		_, err = g.Use(e.ctx, store.UseRequest{SessionID: s.ID, Tools: []string{"read_file"}, RequestID: bad})
		wantInvalidField(t, "Use request id "+name, err, "request_id")
		_, err = g.CountActive(e.ctx, bad)
		wantInvalidField(t, "CountActive "+name, err, "agent_id")
		_, err = g.CloseAllForAgent(e.ctx, bad)
		wantInvalidField(t, "CloseAllForAgent "+name, err, "agent_id")
		_, err = g.List(e.ctx, store.ListFilter{AgentID: bad})
		wantInvalidField(t, "List "+name, err, "agent_id")
	}
	for _, tool := range []string{"read_file ", " read_file", "read_file\n", "read_file\t", "read\x00file", "read_file\u00a0"} {
		_, err := g.Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "agent 7", Tools: []string{tool}})
		wantInvalidField(t, "Use tool "+tool, err, "tools")
		r := baseRequest()
		r.AuthorizedTools = []string{tool}
		_, err = g.Create(e.ctx, r)
		wantInvalidField(t, "Create tool "+tool, err, "authorized_tools")
	}
	if got := e.get(s.ID); got.CallsMade != 0 || got.Status != store.StatusActive {
		t.Fatalf("refused uses changed the session: %d calls, %s", got.CallsMade, got.Status)
	}
	// A refused request id was not recorded: the exact id is a first call.
	u, err := g.Use(e.ctx, store.UseRequest{SessionID: s.ID, AgentID: "agent 7", Tools: []string{"read_file"}, RequestID: "r1"})
	if err != nil || u.CallsMade != 1 {
		t.Fatalf("use with the exact request id: %d calls, %v", u.CallsMade, err)
	}
	if n, err := g.CountActive(e.ctx, "agent 7"); err != nil || n != 1 {
		t.Fatalf("CountActive(%q) = %d, %v", "agent 7", n, err)
	}
	// Restoring a session with such an agent id is refused too.
	bad := s
	bad.ID, bad.AgentID = "restored", "agent 7 "
	_, err = g.Restore(e.ctx, store.RestoreRequest{Sessions: []store.Session{bad}})
	wantInvalidField(t, "Restore", err, "agent_id")
}

// testDurationsExact: a time limit or rate window finer than the stored
// precision (1ms) is refused with the smallest value the store keeps in
// the error's details, never rounded; a negative time limit is refused; a
// whole-millisecond time limit under 1s is raised to 1s (documented).
func testDurationsExact(t *testing.T, e *env) {
	g := e.gov()
	for _, c := range []struct {
		name  string
		set   func(*store.CreateRequest)
		field string
	}{
		{"rate window 1ns", func(r *store.CreateRequest) { r.RateWindow = time.Nanosecond }, "rate_window"},
		{"rate window 1.5ms", func(r *store.CreateRequest) { r.RateWindow = 1500 * time.Microsecond }, "rate_window"},
		{"rate window 1m + 1ns", func(r *store.CreateRequest) { r.RateWindow = time.Minute + 1 }, "rate_window"},
		{"time limit 500µs", func(r *store.CreateRequest) { r.TimeLimit = 500 * time.Microsecond }, "time_limit"},
		{"time limit 1ns", func(r *store.CreateRequest) { r.TimeLimit = 1 }, "time_limit"},
		{"time limit 1.5s + 1ns", func(r *store.CreateRequest) { r.TimeLimit = 1500*time.Millisecond + 1 }, "time_limit"},
	} {
		req := baseRequest()
		c.set(&req)
		_, err := g.Create(e.ctx, req)
		wantInvalidField(t, c.name, err, c.field)
		var inv *store.InvalidInputError
		if errors.As(err, &inv) && inv.Smallest != time.Millisecond {
			t.Errorf("%s: Smallest = %v, want 1ms", c.name, inv.Smallest)
		}
	}
	req := baseRequest()
	req.TimeLimit = -time.Second
	_, err := g.Create(e.ctx, req)
	wantInvalidField(t, "negative time limit", err, "time_limit")
	if p, err := g.List(e.ctx, store.ListFilter{}); err != nil || len(p.Items) != 0 {
		t.Fatalf("refused creates wrote %d sessions (%v)", len(p.Items), err)
	}

	// What can be kept exactly is kept exactly.
	req = baseRequest()
	req.RateLimit, req.RateWindow, req.TimeLimit = 1, time.Millisecond, 1501*time.Millisecond
	s := e.create(req)
	got := e.get(s.ID)
	if got.RateWindow != time.Millisecond || got.TimeLimit != 1501*time.Millisecond ||
		!got.ExpiresAt.Equal(got.CreatedAt.Add(1501*time.Millisecond)) {
		t.Fatalf("stored window %v, limit %v, expiry %v after creation", got.RateWindow, got.TimeLimit, got.ExpiresAt.Sub(got.CreatedAt))
	}
	// Whole milliseconds under 1s are raised to 1s.
	req = baseRequest()
	req.TimeLimit = 500 * time.Millisecond
	if s := e.create(req); s.TimeLimit != time.Second {
		t.Fatalf("time limit 500ms stored as %v, want 1s", s.TimeLimit)
	}
}

// testRequestIDReplayRecorded: a replay of an allowed Use returns the
// session exactly as the first call returned it — counters, rate window
// and status as they were — not as it is now, after other calls, a close,
// the expiry, a reopen, or through another store; and it consumes nothing.
func testRequestIDReplayRecorded(t *testing.T, e *env) {
	req := baseRequest()
	req.CallBudget, req.RateLimit, req.RateWindow, req.TimeLimit = 10, 5, 10*time.Second, time.Hour
	s := e.create(req)
	u := store.UseRequest{SessionID: s.ID, AgentID: req.AgentID, Tools: []string{"read_file", "list_dir"}, RequestID: "r1"}
	first, err := e.gov().Use(e.ctx, u)
	if err != nil || first.CallsMade != 2 || first.RateWindowCalls != 2 {
		t.Fatalf("first use: %+v, %v", first, err)
	}
	replay := func(g store.Governance, when string) {
		t.Helper()
		again, err := g.Use(e.ctx, u)
		if err != nil {
			t.Fatalf("replay %s: %v", when, err)
		}
		sameJSON(t, "replay "+when, again, first)
	}
	replay(e.gov(), "at once")
	// Other calls move the counters and open a new rate window.
	e.clock.Advance(11 * time.Second)
	e.mustUse(s.ID, "read_file")
	e.mustUse(s.ID, "read_file")
	replay(e.gov(), "after other calls")
	if _, err := e.gov().Close(e.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	replay(e.gov(), "after close")
	e.clock.Advance(2 * time.Hour)
	replay(e.gov(), "after expiry")
	e.reopen()
	replay(e.gov(), "after reopen")
	replay(e.open().Governance(), "through another store")
	now := e.get(s.ID)
	if now.CallsMade != 4 || now.RateWindowCalls != 2 || now.Status != store.StatusClosed {
		t.Fatalf("session now: %d calls, window %d, %s; want 4, 2, closed (replays consume nothing)",
			now.CallsMade, now.RateWindowCalls, now.Status)
	}
}
