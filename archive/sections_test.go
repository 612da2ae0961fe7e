package archive

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// TestEveryFacetHasASection: every facet of the registry has its export
// and import, its own counter and its own section, a field of Document;
// and the archive handles no facet the registry does not know.
func TestEveryFacetHasASection(t *testing.T) {
	all, err := allSections()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(facet.All()) || len(sections) != len(facet.All()) {
		t.Fatalf("%d facets handled, %d sections, %d registered", len(all), len(sections), len(facet.All()))
	}
	b, err := json.Marshal(Document{Spend: &store.SpendRecords{}, AgentSessions: &AgentSessionsSection{}, Audit: &AuditSection{}})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	counters := map[*int64]facet.Name{}
	var c Counts
	for _, f := range all {
		p := c.at(f.Name)
		if p == nil {
			t.Errorf("facet %s has no counter", f.Name)
			continue
		}
		if other, ok := counters[p]; ok {
			t.Errorf("facets %s and %s share a counter", other, f.Name)
		}
		counters[p] = f.Name
		for _, k := range append([]string{f.key}, keys(f.more)...) {
			if _, ok := fields[k]; !ok {
				t.Errorf("facet %s: section %q is not a field of Document", f.Name, k)
			}
		}
	}
}

func keys(m map[string]restoreFunc) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A facet without a section stops export and import instead of being
// left out of the file.
func TestMissingSectionIsAnError(t *testing.T) {
	saved := sections[facet.AgentSessions]
	delete(sections, facet.AgentSessions)
	defer func() { sections[facet.AgentSessions] = saved }()
	var e *MissingFacetError
	if _, err := Export(t.Context(), nil, nil, ExportOptions{}); !errors.As(err, &e) || e.Facet != facet.AgentSessions {
		t.Errorf("export: %v", err)
	}
	_, err := Import(t.Context(), nil, strings.NewReader(`{"format": "sessionctl-export", "version": 2}`), ImportOptions{DryRun: true})
	if !errors.As(err, &e) || e.Facet != facet.AgentSessions {
		t.Errorf("import: %v", err)
	}
}
