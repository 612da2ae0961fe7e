package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// RunOrdering checks what must behave identically on every backend: lists
// ordered by id in byte order (not a locale's order), paging that neither
// skips nor repeats, and times kept at millisecond precision in UTC.
func RunOrdering(t *testing.T, h Harness) {
	t.Run("ListIsByteOrder", func(t *testing.T) {
		t.Parallel()
		testListByteOrder(t, newEnv(t, h))
	})
	t.Run("TimesAreUTCMilliseconds", func(t *testing.T) {
		t.Parallel()
		testTimesUTCMillis(t, newEnv(t, h))
	})
}

func testListByteOrder(t *testing.T, e *env) {
	// A locale collation would put "a" before "B", ignore "_" or the space,
	// or sort "é" next to "e"; byte order (UTF-8) does none of these.
	ids := []string{"a", "B", "Z", "_x", "a b", "ab", "A", "é", "e", "~", "日本", "Ω", "a-b", "a_b", "10", "9", "session/a"}
	agent := baseRequest().AgentID
	for _, id := range ids {
		req := baseRequest()
		req.AgentID = agent
		req.ID = id
		e.create(req)
	}
	want := slices.Clone(ids)
	slices.Sort(want) // Go compares strings bytewise
	for _, limit := range []int{1, 2, 5, 100} {
		var got []string
		f := store.ListFilter{AgentID: agent, Limit: limit}
		for range len(ids) + 1 {
			p, err := e.gov().List(e.ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range p.Items {
				got = append(got, s.ID)
			}
			if p.Next == "" {
				break
			}
			f.After = p.Next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: listed %q, want byte order %q", limit, got, want)
		}
	}
}

func testTimesUTCMillis(t *testing.T, e *env) {
	// A clock in another zone with sub-millisecond digits.
	e.clock.Advance(123*time.Microsecond + 456*time.Nanosecond)
	req := baseRequest()
	req.TimeLimit = 1501 * time.Millisecond
	s := e.create(req)
	got := e.get(s.ID)
	for name, v := range map[string]time.Time{"created_at": got.CreatedAt, "expires_at": got.ExpiresAt, "rate_window_start": got.RateWindowStart} {
		if v.Location() != time.UTC || v.Nanosecond()%int(time.Millisecond) != 0 {
			t.Errorf("%s = %v: want UTC with millisecond precision", name, v)
		}
	}
	if !got.CreatedAt.Equal(s.CreatedAt) || !got.ExpiresAt.Equal(s.ExpiresAt) {
		t.Fatalf("stored times %v/%v differ from returned %v/%v", got.CreatedAt, got.ExpiresAt, s.CreatedAt, s.ExpiresAt)
	}
	if got.TimeLimit != 1501*time.Millisecond || !got.ExpiresAt.Equal(got.CreatedAt.Add(got.TimeLimit)) {
		t.Fatalf("time limit %v, expiry %v after creation", got.TimeLimit, got.ExpiresAt.Sub(got.CreatedAt))
	}
}
