package main

// Conversations in stats, and gc's retention (gc.go).

import (
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

var convOps = facetOps{
	one: "conversation", many: "conversations",
	count:     func(c *facetCounts) *int64 { return &c.Conversations },
	stats:     statsConversations,
	statsRows: statsConversationsRows,
	gc:        gcConversations,
	gcLines:   gcConversationsLines,
}

// convCounts summarizes the conversations.
type convCounts struct {
	Total       int64            `json:"total"`
	ByState     map[string]int64 `json:"by_state"`
	Messages    int64            `json:"messages"`
	TotalTokens int64            `json:"total_tokens"`
	// TotalCost is the summed cost, exact to the micro-unit, with its
	// currency; TotalCostMicros the same in micro-units.
	TotalCost       string `json:"total_cost"`
	TotalCostMicros int64  `json:"total_cost_micros"`
}

func statsConversations(c store.Counts, doc *statsJSON) {
	cv := c.Conversations
	doc.Conversations = convCounts{Total: cv.Total, ByState: map[string]int64{}, Messages: cv.Messages,
		TotalTokens: cv.TotalTokens, TotalCost: render.USD(cv.TotalCost), TotalCostMicros: humanize.MicrosOf(cv.TotalCost)}
	for st, n := range cv.ByState {
		doc.Conversations.ByState[string(st)] = n
	}
}

func statsConversationsRows(doc *statsJSON) [][2]string {
	c := doc.Conversations
	return [][2]string{
		{"conversations", convCountsText(c)},
		{"messages", fmt.Sprint(c.Messages)},
		{"tokens, cost", fmt.Sprintf("%d, %s", c.TotalTokens, c.TotalCost)},
	}
}

// convCountsText is "3: 2 active, 1 completed" (states in a fixed order).
func convCountsText(c convCounts) string {
	var parts []string
	for _, st := range []store.ConversationState{store.StateActive, store.StatePaused, store.StateCompleted, store.StateError, store.StateUnknown} {
		if n := c.ByState[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprint(c.Total)
	}
	return fmt.Sprintf("%d: %s", c.Total, strings.Join(parts, ", "))
}
