package main

// The maintenance commands and the facet registry. stats and gc never list
// facets by hand: they walk facet.All() (package facet) and call the
// facet's entry in maintenance; export and import are package archive's,
// which walks the registry itself. A facet added to the registry without
// an entry here, or with an entry that lacks one of the operations, fails
// TestEveryFacetHasMaintenance, and the commands refuse to run
// (errNoMaintenance) rather than silently leave the facet out.

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/archive"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// facetOps is what the maintenance commands do with one facet.
type facetOps struct {
	// one and many are the nouns of summaries: "1 governed session",
	// "3 conversations".
	one, many string
	// count points at the facet's counter in c.
	count func(c *facetCounts) *int64
	// stats copies the facet's part of the store's counts into doc;
	// statsRows are its lines in the table of "sessionctl stats".
	stats     func(c store.Counts, doc *statsJSON)
	statsRows func(doc *statsJSON) [][2]string

	// gc applies retention to the facet, or with req.dryRun counts what
	// it would do; gcLines are its lines of gc's output. A facet that gc
	// leaves alone has neither and says why in gcNone (gc --help shows it).
	gc      func(ctx context.Context, g *globals, st cliStore, req gcRequest, doc *gcJSON) error
	gcLines func(req gcRequest, doc *gcJSON) []string
	gcNone  string
}

// maintenance holds the operations of every registered facet.
var maintenance = map[facet.Name]*facetOps{
	facet.Governance:    &govOps,
	facet.Runtime:       &rtOps,
	facet.Conversations: &convOps,
	facet.AgentSessions: &agentOps,
	facet.Audit:         &auditOps, // audit.go
}

// facetCounts counts the items of each facet (in the JSON of import, and
// what export and import report).
type facetCounts = archive.Counts

// registered pairs a facet with its operations.
type registered struct {
	facet.Facet
	ops *facetOps
}

// errNoMaintenance reports a registered facet that sessionctl does not
// handle: a programming error that TestEveryFacetHasMaintenance catches.
type errNoMaintenance struct {
	facet facet.Name
	what  string
}

func (e *errNoMaintenance) Error() string {
	return fmt.Sprintf("internal error: facet %s has no %s handling in sessionctl", e.facet, e.what)
}

// registeredFacets returns every registered facet with its operations,
// in registry order, or an error naming the first facet that lacks an
// operation.
func registeredFacets() ([]registered, error) {
	var out []registered
	for _, f := range facet.All() {
		ops := maintenance[f.Name]
		if err := ops.check(f.Name); err != nil {
			return nil, err
		}
		out = append(out, registered{Facet: f, ops: ops})
	}
	return out, nil
}

// check reports the first missing operation of ops (nil: none).
func (ops *facetOps) check(name facet.Name) error {
	if ops == nil {
		return &errNoMaintenance{name, "maintenance"}
	}
	for _, m := range []struct {
		what string
		ok   bool
	}{
		{"summary", ops.one != "" && ops.many != "" && ops.count != nil},
		{"stats", ops.stats != nil && ops.statsRows != nil},
		{"gc", (ops.gc != nil && ops.gcLines != nil && ops.gcNone == "") ||
			(ops.gc == nil && ops.gcLines == nil && ops.gcNone != "")},
	} {
		if !m.ok {
			return &errNoMaintenance{name, m.what}
		}
	}
	return nil
}

// countsText is "2 governed sessions, 1 runtime session and 3
// conversations": the facets in registry order, leaving out the zeros
// ("nothing" when all are).
func countsText(c facetCounts) string {
	var parts []string
	for _, f := range facet.All() {
		ops := maintenance[f.Name]
		if ops == nil {
			continue
		}
		if n := *ops.count(&c); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, clitext.Plural(int(n), ops.one, ops.many)))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return clitext.JoinAnd(parts)
}
