package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// SearchIndex adds the "search_index" result: the search index compared
// with the content it is written from (store.Searcher.CheckSearchIndex).
// A disagreement fails and names sessionctl reindex, which rebuilds the
// index. It reports whether the index agrees.
func (r *Report) SearchIndex(ctx context.Context, s store.Searcher) bool {
	rep, err := s.CheckSearchIndex(ctx)
	if err != nil {
		r.Add("search_index", Fail, "cannot check the search index: %v", err)
		return false
	}
	var items int64
	var problems []string
	for _, k := range rep.Kinds {
		items += k.Items
		if k.Missing != 0 || k.Orphans != 0 || k.Items != k.Indexed {
			problems = append(problems, fmt.Sprintf("%s: %d of %d not indexed, %d indexed without content",
				k.Kind, k.Missing, k.Items, k.Orphans))
		}
	}
	if !rep.IndexOK {
		problems = append(problems, rep.IndexDetail)
	}
	if len(problems) > 0 {
		r.Add("search_index", Fail, "the search index differs from the content (%s): run sessionctl reindex",
			strings.Join(problems, "; "))
		return false
	}
	r.Add("search_index", OK, "%d %s indexed, the same as the content", items, humanize.Plural(items, "item", "items"))
	return true
}
