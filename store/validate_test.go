package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"agent-1", "agent 7", "a", "ü-agent", "spiffe://org/agent", strings.Repeat("x", store.MaxIDLength)} {
		if err := store.ValidateName("agent_id", ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", " ", "agent ", " agent", "agent\t", "\nagent", "agent\u00a0", "\u2003agent",
		"a\x00b", "a\x1bb", "a\x7fb", "a\u0085b", "a\u009bb", "\xff", strings.Repeat("x", store.MaxIDLength+1)} {
		err := store.ValidateName("agent_id", bad)
		var inv *store.InvalidInputError
		if !errors.As(err, &inv) || inv.Field != "agent_id" {
			t.Errorf("%q: got %v, want an InvalidInputError for agent_id", bad, err)
		}
		if len(bad) >= 8 && strings.Contains(err.Error(), bad) {
			t.Errorf("%q: error text %q echoes the input", bad, err)
		}
	}
	// Tool names were already ASCII tokens: a stray space is refused.
	for _, bad := range []string{"read_file ", " read_file", "read_file\n"} {
		if err := store.ValidateToolName("tools", bad); !errors.Is(err, store.ErrInvalidInput) {
			t.Errorf("tool %q: %v", bad, err)
		}
	}
}

func TestNormalizeDurations(t *testing.T) {
	base := store.CreateRequest{AgentID: "a"}
	for _, c := range []struct {
		limit, window         time.Duration
		wantLimit, wantWindow time.Duration
		field                 string // refused field, "" when accepted
	}{
		{0, 0, time.Second, store.DefaultRateWindow, ""},
		{500 * time.Millisecond, time.Millisecond, time.Second, time.Millisecond, ""},
		{1501 * time.Millisecond, 90 * time.Second, 1501 * time.Millisecond, 90 * time.Second, ""},
		{500 * time.Microsecond, 0, 0, 0, "time_limit"},
		{time.Hour + 1, 0, 0, 0, "time_limit"},
		{-time.Second, 0, 0, 0, "time_limit"},
		{time.Hour, time.Nanosecond, 0, 0, "rate_window"},
		{time.Hour, 1500 * time.Microsecond, 0, 0, "rate_window"},
		{time.Hour, -time.Millisecond, 0, 0, "rate_window"},
	} {
		r := base
		r.TimeLimit, r.RateWindow = c.limit, c.window
		n, err := r.Normalize()
		if c.field == "" {
			if err != nil || n.TimeLimit != c.wantLimit || n.RateWindow != c.wantWindow {
				t.Errorf("%v/%v: got %v/%v, %v; want %v/%v", c.limit, c.window, n.TimeLimit, n.RateWindow, err, c.wantLimit, c.wantWindow)
			}
			continue
		}
		var inv *store.InvalidInputError
		if !errors.As(err, &inv) || inv.Field != c.field {
			t.Errorf("%v/%v: got %v, want a refusal of %s", c.limit, c.window, err, c.field)
			continue
		}
		negative := c.limit < 0 || c.window < 0
		if wantSmallest := map[bool]time.Duration{true: 0, false: store.DurationPrecision}[negative]; inv.Smallest != wantSmallest {
			t.Errorf("%v/%v: Smallest = %v, want %v", c.limit, c.window, inv.Smallest, wantSmallest)
		}
		if !negative && !strings.Contains(err.Error(), "1ms") {
			t.Errorf("%v/%v: error text %q does not name the smallest value", c.limit, c.window, err)
		}
	}
}
