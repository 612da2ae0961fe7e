package store

import (
	"slices"
	"testing"
)

// TestTreeDepths: a root is at depth 0, each fork one below its parent,
// siblings alike, whichever of the two trees.
func TestTreeDepths(t *testing.T) {
	t.Parallel()
	agent := []LineageNode{{ID: 1}, {ID: 2, Parent: 1}, {ID: 5, Parent: 2}, {ID: 3, Parent: 1}, {ID: 4, Parent: 5}, {ID: 9}}
	if got, want := LineageDepths(agent), []int{0, 1, 2, 1, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("LineageDepths = %v, want %v", got, want)
	}
	conv := []ConversationNode{{ID: "a"}, {ID: "a-retry", Parent: "a"}, {ID: "x", Parent: "a-retry"}, {ID: "b", Parent: "a"}}
	if got, want := ConversationDepths(conv), []int{0, 1, 2, 1}; !slices.Equal(got, want) {
		t.Errorf("ConversationDepths = %v, want %v", got, want)
	}
	if got := LineageDepths(nil); len(got) != 0 {
		t.Errorf("no nodes: %v", got)
	}
}
