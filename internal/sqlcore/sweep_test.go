package sqlcore

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// TestEveryFacetHasRetention: every facet of the registry has a policy
// kind a sweep applies, or a note saying why not; every policy kind
// belongs to a registered facet and has its sweep.
func TestEveryFacetHasRetention(t *testing.T) {
	plan, err := planSweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != len(facet.All()) {
		t.Fatalf("%d facets planned, %d registered", len(plan), len(facet.All()))
	}
	for _, k := range store.PolicyKinds() {
		if k.Kind == store.PolicySizeBudget {
			continue
		}
		if _, ok := facet.Lookup(facet.Name(k.Facet)); !ok {
			t.Errorf("kind %s: facet %q is not registered", k.Kind, k.Facet)
		}
		found := false
		for _, sk := range sweepKinds {
			found = found || sk.kind == k.Kind
		}
		if !found {
			t.Errorf("kind %s has no sweep", k.Kind)
		}
	}
	for name, note := range sweepNotes {
		if _, ok := facet.Lookup(name); !ok || note == "" {
			t.Errorf("note for %s: not a registered facet, or empty", name)
		}
	}
}

// A facet with neither a policy kind nor a note stops the sweep.
func TestMissingRetentionIsAnError(t *testing.T) {
	saved := sweepKinds
	sweepKinds = slices.DeleteFunc(slices.Clone(sweepKinds), func(sk *sweepKind) bool { return sk == auditCheckpointed })
	defer func() { sweepKinds = saved }()
	var e *MissingRetentionError
	if _, err := planSweep(); !errors.As(err, &e) || e.Facet != facet.Audit {
		t.Fatalf("planSweep = %v", err)
	}
	if _, err := (&Retention{s: &Store{}}).Sweep(t.Context(), store.SweepOptions{}); !errors.As(err, &e) {
		t.Fatalf("Sweep = %v", err)
	}
}
