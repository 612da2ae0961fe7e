package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/store"
)

// drawnParents returns, for each node of a tree listed in order with
// parents (parent[i], "" for a root), the node it is drawn under when the
// list is drawn by depth (each node indented one step deeper than its
// parent, as sessionctl history and the console draw it): the nearest
// node before it that is one step shallower. A list in depth-first order
// draws every node under its parent.
func drawnParents(ids, parents []string) []string {
	depth := map[string]int{}
	drawn := make([]string, len(ids))
	for i, id := range ids {
		d := 0
		if parents[i] != "" {
			d = depth[parents[i]] + 1
		}
		depth[id] = d
		for j := i - 1; j >= 0 && d > 0; j-- {
			if depth[ids[j]] == d-1 {
				drawn[i] = ids[j]
				break
			}
		}
	}
	return drawn
}

// checkDrawnUnderParents fails t when a node of the list would be drawn
// under another node than its parent.
func checkDrawnUnderParents(t *testing.T, what string, ids, parents, names []string) {
	t.Helper()
	drawn := drawnParents(ids, parents)
	var bad []string
	for i := range ids {
		if drawn[i] != parents[i] {
			bad = append(bad, fmt.Sprintf("%s (parent %s) drawn under %s", names[i], nameOf(ids, names, parents[i]), nameOf(ids, names, drawn[i])))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: the history is not depth first:\n%s\norder: %v", what, strings.Join(bad, "\n"), names)
	}
}

func nameOf(ids, names []string, id string) string {
	for i := range ids {
		if ids[i] == id {
			return names[i]
		}
	}
	return "-"
}

// testCbHistoryDepthFirst: a conversation's History lists each node's
// subtree right after it, so that a superseded run of a fork is drawn
// under that fork, not under the fork's sibling: p has forks f1 and f2,
// f1 is rewound (its superseded run is f1's child) and forked again.
func testCbHistoryDepthFirst(t *testing.T, e *env) {
	e.cbConv("p", "m", 6)
	e.cbFork("p", 2, "f1")
	e.cbFork("p", 3, "f2")
	e.appendMsgs("f1", text("user", "f1-3"), text("user", "f1-4"), text("user", "f1-5"))
	e.cbFork("f1", 4, "g")
	e.cbRewind("f1", 3)
	nodes, err := e.conv().History(e.ctx, "f1")
	if err != nil {
		t.Fatal(err)
	}
	var ids, parents, names []string
	for _, n := range nodes {
		ids, parents = append(ids, n.ID), append(parents, n.Parent)
		name := n.ID
		if n.Status != store.NodeLive {
			name = n.Status + "-of-" + n.SupersededOf
		}
		names = append(names, name)
	}
	checkDrawnUnderParents(t, "conversation", ids, parents, names)
	if got, want := strings.Join(names, ","), "p,f1,superseded-of-f1,g,f2"; got != want {
		t.Fatalf("History order %s, want %s", got, want)
	}
}

// testBrHistoryDepthFirst: the same of an agent session's History, with
// the fork rewound below its fork point too.
func testBrHistoryDepthFirst(t *testing.T, e *env) {
	key := asKey()
	e.brSession(key, 5)
	f1, f2, g := withSession(key, "f1"), withSession(key, "f2"), withSession(key, "g")
	e.fork(key, 2, f1.Session)
	e.fork(key, 3, f2.Session)
	e.brAppend(f1, "f1-3", 3)
	e.brAppend(f1, "f1-4", 4)
	e.brAppend(f1, "f1-5", 5)
	e.fork(f1, 4, g.Session)
	e.rewind(f1, 3)
	e.rewind(f2, 1)
	nodes, err := e.as().History(e.ctx, f1)
	if err != nil {
		t.Fatal(err)
	}
	var ids, parents, names []string
	for _, n := range nodes {
		ids = append(ids, fmt.Sprint(n.ID))
		p := ""
		if n.Parent != 0 {
			p = fmt.Sprint(n.Parent)
		}
		parents = append(parents, p)
		names = append(names, n.Key.Session+"/"+n.Status)
	}
	checkDrawnUnderParents(t, "agent session", ids, parents, names)
}
