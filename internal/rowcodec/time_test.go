package rowcodec

import (
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// The storage convention and the precision store's validation and
// normalization apply are the same: whatever store hands a backend
// survives ToMillis and FromMillis unchanged.
func TestMillisMatchStorePrecision(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("x", 3600)),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 0),
	} {
		req, err := store.CreateRequest{AgentID: "a"}.Normalize()
		if err != nil {
			t.Fatal(err)
		}
		s := req.NewSession("s", at)
		if got := FromMillis(ToMillis(s.CreatedAt)); got != s.CreatedAt {
			t.Fatalf("created at %v (%v) reads back as %v", s.CreatedAt, at, got)
		}
		if err := s.ValidateStored(); err != nil {
			t.Fatalf("new session at %v: %v", at, err)
		}
		c, _, err := store.NormalizeConversation(store.Conversation{ID: "c", CreatedAt: at, UpdatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if got := FromMillis(ToMillis(c.CreatedAt)); got != c.CreatedAt || got != FromMillis(ToMillis(at)) {
			t.Fatalf("conversation time %v (%v) reads back as %v", c.CreatedAt, at, got)
		}
	}
}

// Event timestamps keep microseconds: a time with a sub-microsecond part
// reads back truncated to the microsecond, in UTC, before and after 1970.
func TestMicrosRoundTrip(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 1, 2, 3, 4, 5, 678_901_234, time.FixedZone("x", 3600)),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Unix(0, 0),
	} {
		got := FromMicros(ToMicros(at))
		if !got.Equal(at.Truncate(time.Microsecond)) || got.Location() != time.UTC {
			t.Fatalf("%v reads back as %v, want %v in UTC", at, got, at.Truncate(time.Microsecond))
		}
	}
}
