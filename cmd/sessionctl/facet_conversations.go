package main

// Conversations in stats, and gc's retention (gc.go).

import (
	"context"
	"fmt"
)

var convOps = facetOps{
	one: "conversation", many: "conversations",
	count:     func(c *facetCounts) *int64 { return &c.Conversations },
	stats:     statsConversations,
	statsRows: statsConversationsRows,
	gc:        gcConversations,
	gcLines:   gcConversationsLines,
}

func statsConversations(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Conversations, err = countConversations(ctx, st.Conversations())
	return err
}

func statsConversationsRows(doc *statsJSON) [][2]string {
	c := doc.Conversations
	return [][2]string{
		{"conversations", convCountsText(c)},
		{"messages", fmt.Sprint(c.Messages)},
		{"tokens, cost", fmt.Sprintf("%d, %s", c.TotalTokens, usd(c.TotalCostUSD))},
	}
}
