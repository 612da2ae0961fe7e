package sqlcore

import (
	"context"
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
// the other walks. The store is measured after every batch (PostgreSQL's
// relations do not shrink before a VACUUM, so there the bytes a removed
// row frees are estimated from the average row). A dry run only reports
// the sizes.
func (sw *sweeper) budget(ctx context.Context, p store.Policy, ks *store.KindSweep) error {
	space := sw.r.s.cfg.Space
	if space == nil {
		return nil
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
	used := func(removedRows int64) (int64, error) {
		if perRow > 0 {
			return base - removedRows*perRow, nil
		}
		info, err := space(ctx)
		return info.Used, err
	}
	if base <= p.MaxBytes || sw.opts.DryRun {
		return nil
	}
	d := due{cutoff: sw.nowMS, readsCap: math.MaxInt64}
	for _, phase := range budgetPhases {
		cursors := make([]unit, len(phase))
		done := make([]bool, len(phase))
		for i := range cursors {
			cursors[i] = startCursor
		}
		for {
			now, err := used(ks.Rows)
			if err != nil {
				return err
			}
			if now <= p.MaxBytes {
				return nil
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
