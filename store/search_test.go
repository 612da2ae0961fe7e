package store_test

import (
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// TestPendingNote: nothing to say when nothing waits; otherwise the
// number, in the right grammatical number, and what the reader can do.
func TestPendingNote(t *testing.T) {
	if n := store.PendingNote(0); n != "" {
		t.Errorf("PendingNote(0) = %q, want empty", n)
	}
	for n, want := range map[int]string{1: "1 recent change is not indexed yet", 3: "3 recent changes are not indexed yet"} {
		got := store.PendingNote(n)
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "sessionctl reindex") || !strings.Contains(got, "not exact") {
			t.Errorf("PendingNote(%d) = %q", n, got)
		}
	}
}
