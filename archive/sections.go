package archive

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/facet"
)

// section is what the archive does with one facet of the registry: the
// key of its section in the document, how to write it, and how to read it
// back (and any further sections the facet writes, such as the governed
// sessions' "spend").
type section struct {
	// key names the facet's section in the document.
	key string
	// export writes the section: every item, or those of x.ids.
	export func(ctx context.Context, x *exporter) error
	// restore reads the section of a document of the given version, one
	// item at a time, validating each and writing it through the
	// importer's writer (nil in a dry run).
	restore restoreFunc
	// more holds the restore of each further section the facet's export
	// writes, by key.
	more map[string]restoreFunc
}

// restoreFunc reads one section of a document of the given version.
type restoreFunc func(ctx context.Context, x *importer, in *jsonIn, version int) error

// sections holds the archive operations of every registered facet.
var sections = map[facet.Name]*section{
	facet.Governance:    &governedSection,
	facet.Runtime:       &runtimeSection,
	facet.Conversations: &conversationsSection,
	facet.AgentSessions: &agentSessionsSection,
	facet.Audit:         &auditSection,
}

// registered pairs a facet with its archive operations.
type registered struct {
	facet.Facet
	*section
}

// MissingFacetError reports a facet of the registry that the archive
// cannot export or import: a programming error (a test catches it), and
// Export and Import refuse to run rather than silently leave it out.
type MissingFacetError struct {
	Facet facet.Name
}

func (e *MissingFacetError) Error() string {
	return fmt.Sprintf("archive: facet %s has no export and import", e.Facet)
}

// allSections returns every registered facet with its operations, in
// registry order, or an error naming the first facet without them.
func allSections() ([]registered, error) {
	var out []registered
	for _, f := range facet.All() {
		s := sections[f.Name]
		if s == nil || s.key == "" || s.export == nil || s.restore == nil {
			return nil, &MissingFacetError{Facet: f.Name}
		}
		out = append(out, registered{Facet: f, section: s})
	}
	return out, nil
}

// restoreOf returns the restore of the section named k, nil for an
// unknown one.
func restoreOf(all []registered, k string) restoreFunc {
	for _, f := range all {
		if f.key == k {
			return f.restore
		}
		if r := f.more[k]; r != nil {
			return r
		}
	}
	return nil
}
