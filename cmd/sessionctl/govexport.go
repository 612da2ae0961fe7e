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
	parse:     parseGoverned,
	prepare:   func(context.Context, *importRun) error { return nil }, // Restore checks and skips atomically
	restore:   restoreGoverned,
	stats:     statsGoverned,
	statsRows: statsGovernedRows,
	gcNone:    "governed sessions: closed and expired ones are deleted by sessionctl cleanup",
}

// exportGoverned adds every governed session, or those of x.ids, and
// their spend state.
func exportGoverned(ctx context.Context, x *exportRun) error {
	if err := exportGovernedSessions(ctx, x); err != nil {
		return err
	}
	var ids []string
	if x.ids != nil {
		ids = []string{}
		for _, v := range x.doc.Governed {
			ids = append(ids, v.ID)
		}
	}
	spend, err := x.st.Spend().Export(ctx, ids)
	if err != nil {
		return err
	}
	x.doc.Spend = &spend
	return nil
}

func exportGovernedSessions(ctx context.Context, x *exportRun) error {
	gov := x.st.Governance()
	x.doc.Governed = []govView{}
	add := func(s store.Session) {
		x.doc.Governed = append(x.doc.Governed, newGovView(s))
		x.counts.Governed++
		x.found[s.ID] = true
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

// parseGoverned validates the governed sessions of an export document.
func parseGoverned(doc *exportDoc, version int, f *importFile) error {
	for i, v := range doc.Governed {
		s, err := v.session()
		if err == nil {
			err = s.ValidateStored()
		}
		if err != nil {
			return fmt.Errorf("governed_sessions[%d]: %w", i, asInvalid(err))
		}
		f.governed = append(f.governed, s)
	}
	if doc.Spend != nil {
		if version < 3 {
			return store.Invalid("spend", fmt.Sprintf("not part of export version %d", version))
		}
		f.spend = *doc.Spend
		if err := (store.SpendRestoreRequest{Records: f.spend}).Validate(); err != nil {
			return fmt.Errorf("spend: %w", err)
		}
	}
	return (store.RestoreRequest{Sessions: f.governed}).Validate()
}

// restoreGoverned restores the governed sessions in one transaction: an
// existing id fails all of them, or with --skip-existing is left alone.
func restoreGoverned(ctx context.Context, x *importRun) error {
	if len(x.file.governed) == 0 {
		return nil
	}
	n, err := x.st.Governance().Restore(ctx, store.RestoreRequest{Sessions: x.file.governed, SkipExisting: x.skip})
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: a governed session id in the file exists (use --skip-existing)", err)
	}
	if err != nil {
		return err
	}
	x.doc.Governed += n
	x.doc.Skipped += int64(len(x.file.governed)) - n
	if len(x.file.spend.Limits)+len(x.file.spend.Reservations) > 0 {
		if _, err := x.st.Spend().Restore(ctx, store.SpendRestoreRequest{Records: x.file.spend, SkipExisting: x.skip}); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("%w: a spend limit or reservation in the file exists (use --skip-existing)", err)
			}
			return err
		}
	}
	return nil
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
