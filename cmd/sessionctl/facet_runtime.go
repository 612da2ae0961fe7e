package main

// Runtime sessions in stats; gc leaves them alone: they have no idle
// expiry.

import (
	"context"
	"fmt"
)

var rtOps = facetOps{
	one: "runtime session", many: "runtime sessions",
	count:     func(c *facetCounts) *int64 { return &c.Runtime },
	stats:     statsRuntime,
	statsRows: statsRuntimeRows,
	gcNone:    "runtime sessions: they have no idle expiry and stay until removed",
}

func statsRuntime(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Runtime, err = countRuntime(ctx, st)
	return err
}

func statsRuntimeRows(doc *statsJSON) [][2]string {
	return [][2]string{
		{"runtime sessions", rtCountsText(doc.Runtime)},
		{"uploads", fmt.Sprintf("%d, %s", doc.Runtime.Uploads, humanBytes(doc.Runtime.UploadBytes))},
	}
}
