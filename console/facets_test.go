package console

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/facet"
)

// TestEveryFacetHasAPage fails when a facet of the registry has no page in
// the console (no entry in facetViews), when an entry names a facet the
// registry does not have, or when an entry's home page is not one of its
// routes: a new facet must be shown, and shown through the table.
func TestEveryFacetHasAPage(t *testing.T) {
	c := &console{}
	views := c.facetViews()
	for _, f := range facet.All() {
		v, ok := views[f.Name]
		if !ok {
			t.Errorf("facet %q (%s) has no page in the console: add it to facetViews", f.Name, f.Title)
			continue
		}
		if v.Nav == "" || v.Label == "" || !strings.HasPrefix(v.Home, "/") {
			t.Errorf("facet %q: incomplete view %+v", f.Name, v)
		}
		var patterns []string
		for _, r := range v.Routes {
			if r.Handler == nil || !strings.HasPrefix(r.Pattern, "/") {
				t.Errorf("facet %q: bad route %q", f.Name, r.Pattern)
			}
			patterns = append(patterns, r.Pattern)
		}
		if !slices.Contains(patterns, v.Home) {
			t.Errorf("facet %q: home %q is not among its routes %v", f.Name, v.Home, patterns)
		}
	}
	for name := range views {
		if _, ok := facet.Lookup(name); !ok {
			t.Errorf("facetViews has a view of %q, which the registry does not have", name)
		}
	}
	nav := c.navigation()
	if len(nav) != len(facet.All())+2 || nav[0].Key != "overview" || nav[len(nav)-1].Key != "retention" {
		t.Errorf("navigation %+v: want the overview, one entry per facet and the retention page", nav)
	}
	for i, f := range facet.All() {
		if i+1 < len(nav) && nav[i+1].Key != views[f.Name].Nav {
			t.Errorf("navigation entry %d is %q, want facet %q's (the registry's order)", i+1, nav[i+1].Key, f.Name)
		}
	}
}
