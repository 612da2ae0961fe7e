package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/humanize"
)

// Schema adds the "schema" result of a store whose applied version is
// current, against latest, the version this binary knows, and returns
// current compared with latest (-1 older, 0 the same, +1 newer). An older
// schema is a warning (the store opened by this binary would migrate
// it); a newer one fails.
func (r *Report) Schema(current, latest int64) int {
	switch {
	case current > latest:
		r.Add("schema", Fail, "version %d is newer than this binary (%d): use a newer sessionctl", current, latest)
		return 1
	case current < latest:
		r.Add("schema", Warn, "version %d, this binary has %d: run sessionctl migrate up", current, latest)
		return -1
	}
	r.Add("schema", OK, "version %d, the same as this binary", current)
	return 0
}

// Tables adds the "tables" result: the tables of a store at schema
// version compared with the facet registry (facet.TablesAt). A table of
// a facet (or the migration table) that is missing fails; a table of no
// facet is a warning. It reports whether no table is missing.
func (r *Report) Tables(tables []string, version int64) bool {
	want := facet.TablesAt(version)
	var missing, unknown []string
	for _, t := range want {
		if !slices.Contains(tables, t) {
			if f, ok := facet.Owner(t); ok {
				t += " (" + string(f.Name) + ")"
			}
			missing = append(missing, t)
		}
	}
	for _, t := range tables {
		if !slices.Contains(want, t) && (version < facet.IndexSince || !slices.Contains(facet.SQLiteIndexTables(), t)) {
			unknown = append(unknown, humanize.Escape(t))
		}
	}
	slices.Sort(unknown)
	switch {
	case len(missing) > 0:
		r.Add("tables", Fail, "%d %s missing: %s", len(missing), humanize.Plural(len(missing), "table", "tables"), strings.Join(missing, ", "))
		return false
	case len(unknown) > 0:
		r.Add("tables", Warn, "%d %s of no facet: %s", len(unknown), humanize.Plural(len(unknown), "table", "tables"), strings.Join(unknown, ", "))
		return true
	}
	var parts []string
	n := 0
	for _, f := range facet.All() {
		if t := f.TablesAt(version); len(t) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.Name, len(t)))
			n += len(t)
		}
	}
	r.Add("tables", OK, "%d tables of %d facets (%s) and the migration table", n, len(parts), strings.Join(parts, ", "))
	return true
}
