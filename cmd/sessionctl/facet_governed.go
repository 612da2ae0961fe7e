package main

// Governed sessions in stats; gc leaves them to cleanup.

import (
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

var govOps = facetOps{
	one: "governed session", many: "governed sessions",
	count:     func(c *facetCounts) *int64 { return &c.Governed },
	stats:     statsGoverned,
	statsRows: statsGovernedRows,
	gcNone:    "governed sessions: closed and expired ones are deleted by sessionctl cleanup",
}

// statusCounts counts governed sessions by effective status.
type statusCounts struct {
	Total   int64 `json:"total"`
	Active  int64 `json:"active"`
	Closed  int64 `json:"closed"`
	Expired int64 `json:"expired"`
}

func statsGoverned(c store.Counts, doc *statsJSON) {
	g := c.Governed
	doc.Governed = statusCounts{Total: g.Total, Active: g.ByStatus[store.StatusActive],
		Closed: g.ByStatus[store.StatusClosed], Expired: g.ByStatus[store.StatusExpired]}
}

func statsGovernedRows(doc *statsJSON) [][2]string {
	c := doc.Governed
	return [][2]string{
		{"governed sessions", fmt.Sprintf("%d: %d active, %d closed, %d expired", c.Total, c.Active, c.Closed, c.Expired)},
	}
}
