package loadtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// Run measures the fsync rate of o.Dir, then runs each scenario for
// o.Duration on a fresh store and returns the report. Bad options are
// store.ErrInvalidInput and run nothing. Whatever the outcome, the
// temporary directory and the scenarios' databases or schemas are
// removed. When ctx ends, Run stops and returns its error.
func Run(ctx context.Context, opts Options) (Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return Report{}, err
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, float64) {}
	}
	tmp, err := os.MkdirTemp(o.Dir, "loadtest-")
	if err != nil {
		return Report{}, err
	}
	defer os.RemoveAll(tmp)
	rep := Report{Backend: "sqlite", Dir: o.Dir, Synchronous: string(o.Synchronous)}
	if o.PostgresURL != "" {
		rep.Backend = "postgres"
	}
	progress("fsync probe", 0)
	lat, err := probeFsync(ctx, tmp, o.Duration, func(f float64) { progress("fsync probe", f) })
	if err != nil {
		return Report{}, fmt.Errorf("fsync probe: %w", err)
	}
	rep.FsyncPerSec = float64(len(lat)) / o.Duration.Seconds()
	rep.FsyncP50, rep.FsyncP99 = percentile(lat, 50), percentile(lat, 99)
	for i, sc := range o.Scenarios {
		r, err := runScenario(ctx, &o, tmp, i, sc, progress)
		if err != nil {
			return Report{}, err
		}
		if rep.FsyncPerSec > 0 {
			r.RatioToF = r.OpsPerSec / rep.FsyncPerSec
		}
		rep.Results = append(rep.Results, r)
	}
	progress("", 1)
	return rep, nil
}

// runScenario runs scenario i on a fresh store, which it removes.
func runScenario(ctx context.Context, o *Options, tmp string, i int, sc Scenario, progress func(string, float64)) (Result, error) {
	callers := sc.Callers
	if callers == 0 {
		callers = o.Callers
	}
	name := fmt.Sprintf("%s/callers=%d", sc.Name, callers)
	progress(name, 0)
	f, err := openFresh(ctx, o, tmp, i)
	if err != nil {
		return Result{}, fmt.Errorf("%s: open: %w", name, err)
	}
	op, err := sc.Setup(ctx, f.st, callers)
	if err != nil {
		return Result{}, fmt.Errorf("%s: setup: %w", name, errors.Join(err, f.remove()))
	}
	ops, lat, err := timeOp(ctx, callers, o.Duration, op, func(frac float64) { progress(name, frac) })
	if rerr := f.remove(); err == nil && rerr != nil {
		err = fmt.Errorf("close: %w", rerr)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return Result{
		Name: sc.Name, Callers: callers, Ops: ops,
		OpsPerSec: float64(ops) / o.Duration.Seconds(),
		P50Micros: percentile(lat, 50), P99Micros: percentile(lat, 99),
	}, nil
}

// timeOp runs op from callers goroutines for d and returns the number of
// operations and their latencies; tick is told the fraction of d gone.
func timeOp(ctx context.Context, callers int, d time.Duration, op Op, tick func(float64)) (int64, []time.Duration, error) {
	var (
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range callers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := op(ctx, w); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
				if w == 0 && len(mine)%32 == 0 {
					tick(float64(time.Since(start)) / float64(d))
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return int64(len(all)), all, firstErr
}

// percentile returns the p-th percentile of lat in microseconds (lat is
// sorted in place); 0 for no latencies.
func percentile(lat []time.Duration, p int) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	i := min(len(lat)-1, len(lat)*p/100)
	return float64(lat[i].Nanoseconds()) / 1000
}
