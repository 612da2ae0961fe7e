package main

// Maintenance of governed sessions: export and import (restored in one
// transaction exactly as exported), stats. gc leaves them to cleanup.

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

var govOps = facetOps{
	one: "governed session", many: "governed sessions",
	count:     func(c *facetCounts) *int64 { return &c.Governed },
	section:   "governed_sessions",
	export:    exportGoverned,
	restore:   restoreGoverned,
	stats:     statsGoverned,
	statsRows: statsGovernedRows,
	gcNone:    "governed sessions: closed and expired ones are deleted by sessionctl cleanup",
}

// exportGoverned writes every governed session, or those of x.ids.
func exportGoverned(ctx context.Context, x *exportRun) error {
	gov := x.st.Governance()
	x.out.open("governed_sessions", '[')
	defer x.out.close(']')
	add := func(s store.Session) {
		x.out.value("", newGovView(s))
		x.counts.Governed++
	}
	if x.ids != nil {
		for _, id := range x.ids {
			s, err := gov.Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			add(s)
		}
		return nil
	}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := gov.List(ctx, f)
		if err != nil {
			return err
		}
		for _, s := range page.Items {
			add(s)
		}
		if page.Next == "" {
			return nil
		}
		f.After = page.Next
	}
}

// restoreGoverned reads the governed sessions of an export document and
// restores each exactly as exported (counters, rate window, status,
// times).
func restoreGoverned(ctx context.Context, x *importRun, in *jsonIn, _ int) error {
	seen := map[string]bool{}
	return in.array(func(i int) error {
		var v govView
		if err := in.decode(&v); err != nil {
			return err
		}
		s, err := v.session()
		if err == nil {
			err = s.ValidateStored()
		}
		if err != nil {
			return fmt.Errorf("governed_sessions[%d]: %w", i, asInvalid(err))
		}
		if seen[s.ID] {
			return store.Invalid("governed_sessions", "id "+s.ID+" appears twice")
		}
		seen[s.ID] = true
		return x.put(&x.counts.Governed, "governed session "+s.ID, func(w store.RecordWriter) (bool, error) {
			return w.PutGovernedSession(s)
		})
	})
}

func statsGoverned(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Governed, err = countGoverned(ctx, st.Governance())
	return err
}

func statsGovernedRows(doc *statsJSON) [][2]string {
	c := doc.Governed
	return [][2]string{
		{"governed sessions", fmt.Sprintf("%d: %d active, %d closed, %d expired", c.Total, c.Active, c.Closed, c.Expired)},
	}
}
