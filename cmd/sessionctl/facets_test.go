package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/facet"
)

// TestEveryFacetHasMaintenance: every facet of the registry has stats and
// gc handling in sessionctl (gc: a function, or the reason it leaves the
// facet alone) and its own counter; and sessionctl handles no facet the
// registry does not know. (Export and import are package archive's, whose
// own test holds them to the registry.)
func TestEveryFacetHasMaintenance(t *testing.T) {
	all, err := registeredFacets()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(facet.All()) || len(maintenance) != len(facet.All()) {
		t.Fatalf("%d facets handled, %d maintenance entries, %d registered", len(all), len(maintenance), len(facet.All()))
	}
	counters := map[*int64]facet.Name{}
	var c facetCounts
	for _, f := range facet.All() {
		ops := maintenance[f.Name]
		if err := ops.check(f.Name); err != nil {
			t.Errorf("%v", err)
			continue
		}
		p := ops.count(&c)
		if other, ok := counters[p]; ok {
			t.Errorf("facets %s and %s share a counter", other, f.Name)
		}
		counters[p] = f.Name
		if ops.gcNone != "" && !strings.Contains(strings.Join(strings.Fields(gcSpec().About), " "), ops.gcNone) {
			t.Errorf("gc --help does not say why it leaves facet %s alone", f.Name)
		}
	}
}

// A facet without an entry, or an entry that lacks an operation, stops
// the maintenance commands instead of being skipped.
func TestMissingMaintenanceIsAnError(t *testing.T) {
	var nilOps *facetOps
	var e *errNoMaintenance
	if err := nilOps.check("new_facet"); !errors.As(err, &e) || !strings.Contains(err.Error(), "facet new_facet has no maintenance handling") {
		t.Errorf("nil entry: %v", err)
	}
	for _, c := range []struct {
		what string
		edit func(o *facetOps)
	}{
		{"stats", func(o *facetOps) { o.statsRows = nil }},
		{"gc", func(o *facetOps) { o.gcNone = "" }},
		{"gc", func(o *facetOps) { o.gc = convOps.gc }}, // a function and a reason to do nothing
	} {
		o := govOps
		c.edit(&o)
		if err := o.check(facet.Governance); err == nil || !strings.Contains(err.Error(), "no "+c.what+" handling") {
			t.Errorf("without %s: %v", c.what, err)
		}
	}
	saved := maintenance[facet.AgentSessions]
	delete(maintenance, facet.AgentSessions)
	defer func() { maintenance[facet.AgentSessions] = saved }()
	e2 := newTestEnv(t)
	e2.run("create", "--id", "x", "--agent", "a", "--budget", "1").want(t, 0)
	for _, args := range [][]string{{"stats"}, {"gc", "--keep-last", "1"}} {
		e2.runStdin(`{"format": "sessionctl-export", "version": 2}`, args...).want(t, exitError).
			oneLineErr(t, "internal error: facet agent_sessions has no maintenance handling")
	}
}
