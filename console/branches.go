package console

import (
	"fmt"
	"maps"
	"slices"

	"github.com/agentstore/sessionstore/store"
)

// The fork tree of an agent session on its page: every node of the tree
// (the session's lineage, its forks, deleted sessions forks still read,
// the runs of events rewinds superseded), and the ranges compaction
// records summarise in the session's own view.

// treeRow is one node of an agent session's tree, as the page draws it.
type treeRow struct {
	Depth int               `json:"depth"`
	Node  store.LineageNode `json:"node"`
	// URL links a live session's page, and a superseded run to the page
	// of the session it was taken from; empty for the other nodes.
	URL string `json:"-"`
	// Range is what the node holds of its own: "events 6–9" (its events
	// after its fork point), for a superseded node the events a rewind
	// took out.
	Range string `json:"range"`
}

// summarised is a compaction record of the session's view and the range
// it covers.
type summarised struct {
	Record int64                 `json:"record"`
	Range  store.CompactionRange `json:"range"`
}

// agentTree lays nodes out for the page and finds the compaction records
// of the current session's view (its own, and its ancestors' up to the
// fork points it reads).
func (c *console) agentTree(nodes []store.LineageNode) ([]treeRow, []summarised) {
	byID := make(map[int64]store.LineageNode, len(nodes))
	depths := store.LineageDepths(nodes)
	rows := make([]treeRow, 0, len(nodes))
	var cur store.LineageNode
	live := map[int64]bool{}
	for _, n := range nodes {
		if n.Status == store.NodeLive {
			live[n.ID] = true
		}
	}
	for i, n := range nodes {
		byID[n.ID] = n
		row := treeRow{Depth: depths[i], Node: n, Range: "no events of its own"}
		if n.EventCount > n.ForkSeq {
			row.Range = fmt.Sprintf("events %d–%d", n.ForkSeq+1, n.EventCount)
		}
		// A superseded run's key is its session's: it links there while
		// the session is live (it is then in the tree).
		if n.Status == store.NodeLive || n.Status == store.NodeSuperseded && live[n.SupersededOf] {
			row.URL = withQuery(c.link("agents", "session"), "app", n.Key.App, "user", n.Key.User, "session", n.Key.Session)
		}
		rows = append(rows, row)
		if n.Current {
			cur = n
		}
	}
	var recs []summarised
	hi := int64(-1) // the part of a node the view reads: up to hi (-1: all)
	for n, ok := cur, cur.ID != 0; ok; n, ok = byID[n.Parent] {
		for _, seq := range slices.Sorted(maps.Keys(n.Compactions)) {
			if hi < 0 || seq <= hi {
				recs = append(recs, summarised{Record: seq, Range: n.Compactions[seq]})
			}
		}
		if hi < 0 || n.ForkSeq < hi {
			hi = n.ForkSeq
		}
		if n.Parent == 0 || hi == 0 {
			break
		}
	}
	slices.SortFunc(recs, func(a, b summarised) int { return int(a.Record - b.Record) })
	return rows, recs
}

// convTreeRow is one node of a conversation's fork tree, as the page
// draws it.
type convTreeRow struct {
	Depth int                    `json:"depth"`
	Node  store.ConversationNode `json:"node"`
	// Name is the conversation id of a live node; retired nodes' ids are
	// internal, so they show their status (and a superseded run the
	// conversation it was taken from).
	Name string `json:"-"`
	// URL links a live conversation's page, and a superseded run to the
	// page of the conversation it was taken from; empty for the other
	// nodes.
	URL string `json:"-"`
	// ForkedAt is the position of the last message a fork reads from its
	// parent (-1 for a root).
	ForkedAt int64 `json:"forked_at"`
	// Summarised lists the node's own compaction records: "0–40 at #41".
	Summarised []string `json:"summarised,omitempty"`
}

// convTree lays the nodes of a conversation's tree out for the page.
func (c *console) convTree(nodes []store.ConversationNode) []convTreeRow {
	depths := store.ConversationDepths(nodes)
	rows := make([]convTreeRow, 0, len(nodes))
	live := map[string]bool{}
	for _, n := range nodes {
		if n.Status == store.NodeLive {
			live[n.ID] = true
		}
	}
	for i, n := range nodes {
		row := convTreeRow{Depth: depths[i], Node: n, Name: n.ID, ForkedAt: n.ForkNext - 1}
		if n.Parent == "" {
			row.ForkedAt = -1
		}
		switch {
		case n.Status == store.NodeLive:
			row.URL = c.link("conversations", n.ID)
		case n.Status == store.NodeSuperseded && n.SupersededOf != "":
			row.Name = "(superseded run of " + n.SupersededOf + ")"
			if live[n.SupersededOf] {
				row.URL = c.link("conversations", n.SupersededOf)
			}
		default:
			row.Name = "(" + n.Status + ")"
		}
		for _, seq := range slices.Sorted(maps.Keys(n.Compactions)) {
			r := n.Compactions[seq]
			row.Summarised = append(row.Summarised, fmt.Sprintf("%d–%d at #%d", r.From, r.To, seq))
		}
		rows = append(rows, row)
	}
	return rows
}
