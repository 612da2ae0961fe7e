package sqlcore

import (
	"context"
	"errors"
	"math"

	"github.com/agentstore/sessionstore/store"
)

// budgetPhases are the walks of the size budget, in the order they give
// sessions up: first the governed sessions that ended (oldest first), then
// the sessions least recently written to, whatever their facet.
var budgetPhases = [][]budgetWalk{
	{{governedEnded, governedEnded.sources[0]}, {governedEnded, governedEnded.sources[1]}},
	{{conversationsIdle, conversationsIdle.sources[0]}, {agentSessionsIdle, agentSessionsIdle.sources[0]},
		{runtimeIdle, runtimeIdle.sources[0]}},
}

// budgetWalk is one walk of the size budget.
type budgetWalk struct {
	kind *sweepKind
	src  source
}

// budget removes sessions until the store's data is under p.MaxBytes
// (see store.PolicySizeBudget). Within a phase, each batch takes the walk
// whose next session is the oldest, up to the time of the next session of
// the other walks. A dry run only reports the sizes.
//
// Where the store's pages are measured (SQLite), the removals go in
// rounds: a round removes about the rows that the bytes over the budget
// take, at the bytes per row the previous round freed (one batch in the
// first), then the derived indexes are compacted (Config.CompactIndexes:
// an FTS5 index frees a deleted row's pages only when its segments
// merge) and the store is measured again; the sweep stops at the first
// measure under the budget. PostgreSQL's relations do not shrink before a
// VACUUM, so there the bytes a removed row frees are estimated from the
// average row.
func (sw *sweeper) budget(ctx context.Context, p store.Policy, ks *store.KindSweep) error {
	space := sw.r.s.cfg.Space
	if space == nil {
		return nil
	}
	// The search index frees a removed item's space only once the item's
	// key is folded in (the removal only queues it): every measure folds
	// the queue first, so that it counts what the removals freed.
	fold := func() error {
		if _, err := sw.r.s.prepareSearch(ctx); err != nil && !errors.Is(err, store.ErrSearchDisabled) {
			return err
		}
		return nil
	}
	if !sw.opts.DryRun {
		if err := fold(); err != nil {
			return err
		}
	}
	info, err := space(ctx)
	if err != nil {
		return err
	}
	perRow := int64(0)
	if info.Rows > 0 {
		perRow = max(info.Used/info.Rows, 1)
	}
	base := info.Used
	if base <= p.MaxBytes || sw.opts.DryRun {
		return nil
	}
	measure := func() (int64, error) {
		if err := fold(); err != nil {
			return 0, err
		}
		if c := sw.r.s.cfg.CompactIndexes; c != nil {
			if err := c(ctx); err != nil {
				return 0, err
			}
		}
		info, err := space(ctx)
		return info.Used, err
	}
	// The round in progress (measured stores): the size and the rows
	// removed when it began, and the rows it is to remove.
	roundUsed, roundRows, goal := base, int64(0), int64(0)
	if perRow == 0 {
		// What earlier removals left in the indexes may be all the
		// budget needs.
		if roundUsed, err = measure(); err != nil || roundUsed <= p.MaxBytes {
			return err
		}
		goal = sw.maxRows
	}
	// over reports whether the store is still over the budget, measuring
	// it at the end of each round.
	over := func() (bool, error) {
		if perRow > 0 {
			return base-ks.Rows*perRow > p.MaxBytes, nil
		}
		removed := ks.Rows - roundRows
		if removed < goal {
			return true, nil
		}
		now, err := measure()
		if err != nil || now <= p.MaxBytes {
			return false, err
		}
		freed := max((roundUsed-now)/max(removed, 1), 1)
		roundUsed, roundRows = now, ks.Rows
		goal = max((now-p.MaxBytes+freed-1)/freed, 1)
		return true, nil
	}
	d := due{cutoff: sw.nowMS, readsCap: math.MaxInt64}
	sw.tick = func(rows int64) {
		partial := *ks
		partial.Rows += rows
		sw.progress(partial)
	}
	defer func() { sw.tick = nil }()
	for _, phase := range budgetPhases {
		cursors := make([]unit, len(phase))
		done := make([]bool, len(phase))
		for i := range cursors {
			cursors[i] = startCursor
		}
		for {
			if more, err := over(); err != nil || !more {
				return err
			}
			// The walk whose next unit is the oldest, and the time of the
			// next unit of the others.
			pick, until := -1, int64(math.MaxInt64)
			var pickAt int64
			for i, w := range phase {
				if done[i] {
					continue
				}
				head, ok, err := sw.head(ctx, w, d, cursors[i])
				if err != nil {
					return err
				}
				if !ok {
					done[i] = true
					continue
				}
				switch {
				case pick < 0 || head.at < pickAt:
					if pick >= 0 {
						until = min(until, pickAt)
					}
					pick, pickAt = i, head.at
				default:
					until = min(until, head.at)
				}
			}
			if pick < 0 {
				break // the phase has nothing left
			}
			got, next, more, err := sw.step(ctx, phase[pick].kind, phase[pick].src, d, cursors[pick], until)
			ks.Sessions += got.Sessions
			ks.Rows += got.Rows
			sw.progress(*ks)
			if err != nil {
				return err
			}
			cursors[pick] = next
			done[pick] = !more
			if err := sw.pause(ctx); err != nil {
				return err
			}
		}
	}
	if perRow == 0 && ks.Rows > roundRows {
		// Nothing left to remove: the indexes give back what the last
		// round's removals held, for the report's size.
		_, err := measure()
		return err
	}
	return nil
}

// head returns the next unit of a walk after cursor.
func (sw *sweeper) head(ctx context.Context, w budgetWalk, d due, cursor unit) (unit, bool, error) {
	var u unit
	found := false
	err := sw.r.s.db.Query(ctx, w.src.nextSQL, w.src.args(d, cursor, 1), func(r Rows) error {
		var err error
		u, err = w.src.scan(r)
		found = true
		return err
	})
	return u, found, err
}
