// Package specs holds the description of every sessionctl command (a
// cmdspec.Spec): its synopsis, help text, examples, actions and the
// values its flags and operands take. Package main parses, runs and
// completes each command by its spec.
package specs

import (
	"strings"

	"github.com/agentstore/sessionstore/store"
)

// The facets that list --facet and delete --facet name.
const (
	FacetGoverned      = "governed"
	FacetRuntime       = "runtime"
	FacetConversations = "conversations"
)

// HoldFacets are the facets a hold names (its first operand).
var HoldFacets = []string{store.HoldGovernance, store.HoldRuntime, store.HoldConversations, store.HoldAgentSessions}

// Exits are the exit statuses the help texts quote. Package main passes
// them from its one table of exit statuses (exit.go), the place that maps
// errors to statuses.
type Exits struct {
	// The statuses, named as in exit.go (exitNotFound: NotFound).
	OK, NotFound, Agent, Closed, Expired, Budget, Tool, Rate, Conflict, SchemaTooNew, Spend, NotStore int

	// List lists statuses as help quotes them ("3 not found, 4 agent
	// mismatch").
	List func(codes ...int) string
}

// leftAloneHelp is the paragraph of gc --help that lists the facets gc
// leaves alone, each reason wrapped within 80 columns ("" when none).
func leftAloneHelp(leftAlone []string) string {
	var b strings.Builder
	for _, reason := range leftAlone {
		if b.Len() == 0 {
			b.WriteString("\n\nLeft alone:")
		}
		line := "\n "
		for _, w := range strings.Fields(reason + ".") {
			if len(line)+1+len(w) > 76 {
				b.WriteString(line)
				line = "\n   "
			}
			line += " " + w
		}
		b.WriteString(line)
	}
	return b.String()
}
