package main

// Runtime sessions in stats; gc leaves them alone: they have no idle
// expiry.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

var rtOps = facetOps{
	one: "runtime session", many: "runtime sessions",
	count:     func(c *facetCounts) *int64 { return &c.Runtime },
	stats:     statsRuntime,
	statsRows: statsRuntimeRows,
	gcNone:    "runtime sessions: they have no idle expiry and stay until removed",
}

// rtCounts summarizes the runtime sessions and their uploads.
type rtCounts struct {
	Total        int64            `json:"total"`
	ByAgent      map[string]int64 `json:"by_agent"`
	RunningTurns int64            `json:"running_turns"`
	Uploads      int64            `json:"uploads"`
	UploadBytes  int64            `json:"upload_bytes"`
}

func statsRuntime(c store.Counts, doc *statsJSON) {
	r := c.Runtime
	doc.Runtime = rtCounts{Total: r.Total, ByAgent: r.ByAgent, RunningTurns: r.RunningTurns,
		Uploads: r.Uploads, UploadBytes: r.UploadBytes}
}

func statsRuntimeRows(doc *statsJSON) [][2]string {
	return [][2]string{
		{"runtime sessions", rtCountsText(doc.Runtime)},
		{"uploads", fmt.Sprintf("%d, %s", doc.Runtime.Uploads, humanize.Bytes(doc.Runtime.UploadBytes))},
	}
}

// rtCountsText is "3: 2 agent-a, 1 agent-b; 1 turn running".
func rtCountsText(c rtCounts) string {
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(c.ByAgent)) {
		parts = append(parts, fmt.Sprintf("%d %s", c.ByAgent[a], a))
	}
	s := fmt.Sprint(c.Total)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s; %d %s running", s, c.RunningTurns, clitext.Plural(int(c.RunningTurns), "turn", "turns"))
}
