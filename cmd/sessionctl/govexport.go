package main

// Maintenance of governed sessions: export and import (restored in one
// transaction exactly as exported, then their spend limits and
// reservations), stats. gc leaves them to cleanup.

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
	more:      map[string]sectionRestore{"spend": restoreSpend},
	stats:     statsGoverned,
	statsRows: statsGovernedRows,
	gcNone:    "governed sessions: closed and expired ones are deleted by sessionctl cleanup",
}

// exportGoverned writes every governed session, or those of x.ids, then
// their spend state (the "spend" section: limits with their counters,
// agents' limits included, and reservations with their holds).
func exportGoverned(ctx context.Context, x *exportRun) error {
	ids, err := exportGovernedSessions(ctx, x)
	if err != nil {
		return err
	}
	x.out.open("spend", '{')
	// The reservations array opens at the first reservation (after the
	// last limit), or after the limits when there is none.
	x.out.open("limits", '[')
	inLimits := true
	endLimits := func() {
		if inLimits {
			x.out.close(']')
			x.out.open("reservations", '[')
			inLimits = false
		}
	}
	err = x.st.Spend().ExportEach(ctx, ids,
		func(l store.SpendLimitRecord) error {
			x.out.value("", l)
			return x.out.err
		},
		func(r store.ReservationRecord) error {
			endLimits()
			x.out.value("", r)
			return x.out.err
		})
	if err != nil {
		return err
	}
	endLimits()
	x.out.close(']')
	x.out.close('}')
	return nil
}

// exportGovernedSessions writes the governed_sessions section and returns
// the ids written when x.ids selects them (nil: every session).
func exportGovernedSessions(ctx context.Context, x *exportRun) ([]string, error) {
	gov := x.st.Governance()
	x.out.open("governed_sessions", '[')
	defer x.out.close(']')
	add := func(s store.Session) {
		x.out.value("", newGovView(s))
		x.counts.Governed++
		x.tick()
	}
	if x.ids != nil {
		written := []string{}
		for _, id := range x.ids {
			s, err := gov.Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			add(s)
			written = append(written, id)
		}
		return written, nil
	}
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := gov.List(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, s := range page.Items {
			add(s)
		}
		if page.Next == "" {
			return nil, nil
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

// restoreSpend reads the spend section of an export document (version 3
// on): the limits, then the reservations, each restored exactly as
// exported in the import's transaction. They are not counted in the
// summary (they belong to the governed sessions); an existing one is a
// conflict, or skipped with --skip-existing.
func restoreSpend(ctx context.Context, x *importRun, in *jsonIn, version int) error {
	if version < 3 {
		return store.Invalid("spend", fmt.Sprintf("not part of export version %d", version))
	}
	ok, err := in.delim('{', true)
	if err != nil || !ok {
		return err
	}
	var records int64
	seen := map[string]bool{}
	for {
		k, more, err := in.key()
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if seen[k] {
			return store.Invalid("spend", k+" appear twice")
		}
		seen[k] = true
		switch k {
		case "limits":
			err = in.array(func(i int) error {
				var l store.SpendLimitRecord
				if err := in.decode(&l); err != nil {
					return err
				}
				return x.put(&records, fmt.Sprintf("spend.limits[%d] (limit %s)", i, l.ID), func(w store.RecordWriter) (bool, error) {
					return w.PutSpendLimit(l)
				})
			})
		case "reservations":
			err = in.array(func(i int) error {
				var r store.ReservationRecord
				if err := in.decode(&r); err != nil {
					return err
				}
				return x.put(&records, fmt.Sprintf("spend.reservations[%d] (reservation %s of session %s)", i, r.ID, r.SessionID), func(w store.RecordWriter) (bool, error) {
					return w.PutReservation(r)
				})
			})
		default:
			return store.Invalid("spend", fmt.Sprintf("unknown field %q", k))
		}
		if err != nil {
			return err
		}
	}
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
