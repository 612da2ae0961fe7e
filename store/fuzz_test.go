package store_test

// Native Go fuzz tests of request validation: no input panics, every
// rejection is an *InvalidInputError whose text names a field and never
// echoes the input, and every accepted request normalizes to one that
// satisfies the store's invariants. Seed corpora: testdata/fuzz/.
//
//	go test ./store -run '^$' -fuzz '^FuzzCreateRequest$' -fuzztime 1m

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentstore/sessionstore/store"
)

// splitList turns a fuzzed string into a list: entries separated by '|';
// the empty string is an empty list.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "|")
}

// checkRejection checks what every validation error must be.
func checkRejection(t *testing.T, err error, inputs ...string) {
	t.Helper()
	var inv *store.InvalidInputError
	if !errors.As(err, &inv) || !errors.Is(err, store.ErrInvalidInput) {
		t.Fatalf("rejection is not an *InvalidInputError: %T %v", err, err)
	}
	if inv.Field == "" || inv.Reason == "" {
		t.Fatalf("rejection without field or reason: %+v", inv)
	}
	msg := err.Error()
	if !utf8.ValidString(msg) {
		t.Fatalf("error text is not UTF-8: %q", msg)
	}
	for _, in := range inputs {
		// Inputs long enough to be told apart from the fixed wording.
		if len(in) >= 8 && strings.Contains(msg, in) {
			t.Fatalf("error text %q echoes the input %q", msg, in)
		}
	}
}

func FuzzCreateRequest(f *testing.F) {
	f.Add("", "agent-1", "read the docs", "root|planner", "read_file|*", "vault:db", int64(time.Hour), int64(10), int64(5), int64(time.Minute), "internal", int64(0))
	f.Add("session/a", "agent-1", "", "", "", "", int64(0), int64(0), int64(0), int64(0), "", int64(3))
	f.Add("x", "", "", "", "", "", int64(-1), int64(-1), int64(-1), int64(-1), "secret", int64(-1))
	f.Add("big", "agent-1", "", "", "", "", int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), "public", int64(math.MaxInt64))
	f.Add("id\x00nul", "agent\n", "bad\x00", "a||b", "tool with space", "ü", int64(1), int64(1<<62), int64(1), int64(1), "restricted", int64(1<<62))
	f.Fuzz(func(t *testing.T, id, agent, intent, chain, tools, creds string, timeLimit, budget, rate, window int64, sens string, maxActive int64) {
		req := store.CreateRequest{
			ID: id, AgentID: agent, DeclaredIntent: intent,
			DelegationChain: splitList(chain), AuthorizedTools: splitList(tools), AuthorizedCredentials: splitList(creds),
			TimeLimit: time.Duration(timeLimit), CallBudget: budget, RateLimit: rate, RateWindow: time.Duration(window),
			Sensitivity: store.Sensitivity(sens), MaxActivePerAgent: maxActive,
		}
		n, err := req.Normalize()
		if err != nil {
			checkRejection(t, err, id, agent, intent, chain, tools, creds, sens)
			return
		}
		switch {
		case n.TimeLimit < store.MinTimeLimit || n.TimeLimit%time.Millisecond != 0 ||
			n.TimeLimit < req.TimeLimit && req.TimeLimit <= math.MaxInt64-time.Millisecond:
			t.Fatalf("time limit %v normalized to %v", req.TimeLimit, n.TimeLimit)
		case n.RateWindow <= 0 || n.RateWindow%time.Millisecond != 0:
			t.Fatalf("rate window %v normalized to %v", req.RateWindow, n.RateWindow)
		case !n.Sensitivity.Valid():
			t.Fatalf("sensitivity %q accepted", n.Sensitivity)
		case n.CallBudget < 0 || n.RateLimit < 0 || n.MaxActivePerAgent < 0:
			t.Fatalf("negative limits accepted: %+v", n)
		case n.DelegationChain == nil || n.AuthorizedTools == nil || n.AuthorizedCredentials == nil:
			t.Fatal("nil list after normalization")
		case !utf8.ValidString(n.AgentID) || n.AgentID == "" || !utf8.ValidString(n.DeclaredIntent):
			t.Fatalf("invalid text accepted: %q %q", n.AgentID, n.DeclaredIntent)
		}
		again, err := n.Normalize()
		if err != nil {
			t.Fatalf("a normalized request does not validate: %v", err)
		}
		if again.TimeLimit != n.TimeLimit || again.RateWindow != n.RateWindow || again.Sensitivity != n.Sensitivity {
			t.Fatalf("normalization is not idempotent: %+v then %+v", n, again)
		}
		now := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
		s := n.NewSession("id", now)
		if !s.ExpiresAt.Equal(s.CreatedAt.Add(n.TimeLimit)) || s.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("new session times: created %v expires %v limit %v", s.CreatedAt, s.ExpiresAt, n.TimeLimit)
		}
		if !s.IsActive(now) || s.CallsMade != 0 || s.RemainingBudget() != n.CallBudget {
			t.Fatalf("new session state: %+v", s)
		}
	})
}

func FuzzUseRequest(f *testing.F) {
	f.Add("s1", "agent-1", "read_file", "req-1", int64(10), int64(0), "read_file|write_file", int64(0))
	f.Add("", "", "", "", int64(0), int64(0), "", int64(0))
	f.Add("s1", "other", "read_file|read_file|read_file", "", int64(2), int64(1), "*", int64(int64(time.Hour)))
	f.Add("s\x7f", "a\x00", "bad tool", "r\n", int64(-5), int64(-1), "|", int64(-1))
	f.Fuzz(func(t *testing.T, sid, agent, tools, reqID string, budget, rate int64, allowed string, elapsed int64) {
		req := store.UseRequest{SessionID: sid, AgentID: agent, Tools: splitList(tools), RequestID: reqID}
		err := req.Validate()
		if err != nil {
			checkRejection(t, err, sid, agent, tools, reqID)
			return
		}
		// A valid request checked against any session: no panic, and the
		// decision is consistent with Apply.
		cr, err := store.CreateRequest{AgentID: "agent-1", AuthorizedTools: splitList(allowed), CallBudget: max(budget, 0), RateLimit: max(rate, 0)}.Normalize()
		if err != nil {
			return
		}
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s := cr.NewSession("s1", now)
		at := now.Add(time.Duration(elapsed))
		refusal := s.CheckUse(req.AgentID, req.Tools, at)
		n := int64(len(req.Tools))
		if refusal == nil {
			if s.CallsMade+n > s.CallBudget {
				t.Fatalf("allowed %d calls over a budget of %d", n, s.CallBudget)
			}
			for _, tool := range req.Tools {
				if !s.ToolAuthorized(tool) {
					t.Fatalf("allowed unauthorized tool %q", tool)
				}
			}
			before := s.CallsMade
			s.Apply(n, at)
			if s.CallsMade != before+n {
				t.Fatalf("apply counted %d, want %d", s.CallsMade-before, n)
			}
			if s.RateLimit > 0 && s.RateWindowCalls > s.RateLimit {
				t.Fatalf("rate window holds %d calls over a limit of %d", s.RateWindowCalls, s.RateLimit)
			}
			return
		}
		known := []error{store.ErrAgentMismatch, store.ErrClosed, store.ErrExpired, store.ErrBudgetExceeded, store.ErrToolNotAuthorized, store.ErrRateLimited}
		if !slices.ContainsFunc(known, func(e error) bool { return errors.Is(refusal, e) }) {
			t.Fatalf("unknown refusal %v", refusal)
		}
		// Refusal texts are constant per kind: nothing of the request.
		for _, e := range known {
			if errors.Is(refusal, e) && refusal.Error() != e.Error() {
				t.Fatalf("refusal text %q is not the constant %q", refusal.Error(), e.Error())
			}
		}
	})
}
