package main

// Governed sessions in stats; gc leaves them to cleanup.

import (
	"context"
	"fmt"
)

var govOps = facetOps{
	one: "governed session", many: "governed sessions",
	count:     func(c *facetCounts) *int64 { return &c.Governed },
	stats:     statsGoverned,
	statsRows: statsGovernedRows,
	gcNone:    "governed sessions: closed and expired ones are deleted by sessionctl cleanup",
}

func statsGoverned(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Governed, err = countGoverned(ctx, st.Governance())
	return err
}

func statsGovernedRows(doc *statsJSON) [][2]string {
	c := doc.Governed
	return [][2]string{
		{"governed sessions", fmt.Sprintf("%d: %d active, %d closed, %d expired", c.Total, c.Active, c.Closed, c.Expired)},
	}
}
