package sqlcore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Sweeper is a running background sweeper.
type Sweeper struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartSweeper starts sweeping every cfg.Interval until Stop. Each round
// takes (or renews) the sweep lease first, so that one sweeper at a time
// sweeps across every process sharing the database.
func (s *Store) StartSweeper(cfg store.SweeperConfig) (*Sweeper, error) {
	if cfg.Interval <= 0 {
		return nil, store.Invalid("sweeper_interval", "must be positive")
	}
	if cfg.Holder == "" {
		b := make([]byte, 6)
		rand.Read(b)
		cfg.Holder = "sweeper-" + hex.EncodeToString(b)
	} else if err := store.ValidateName("holder", cfg.Holder); err != nil {
		return nil, err
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = max(2*cfg.Interval, time.Minute)
	}
	cfg.Options.DryRun = false
	cfg.Options.Holder = cfg.Holder
	ctx, cancel := context.WithCancel(context.Background())
	sw := &Sweeper{cancel: cancel, done: make(chan struct{})}
	r := s.Retention()
	go func() {
		defer close(sw.done)
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		for {
			rep, err := r.sweepOnce(ctx, cfg)
			if cfg.OnSweep != nil && ctx.Err() == nil {
				cfg.OnSweep(rep, err)
			}
			if err != nil && !errors.Is(err, store.ErrLeaseHeld) && ctx.Err() == nil {
				s.log.Warn("background sweep failed", "holder", cfg.Holder, "err", err)
			}
			select {
			case <-ctx.Done():
				_ = r.DropLease(context.Background(), cfg.Holder)
				return
			case <-t.C:
			}
		}
	}()
	return sw, nil
}

// sweepOnce takes the lease and sweeps. The lease is renewed between
// batches once a third of its TTL has passed (on the store's clock); a
// sweeper that lost it (another took it over after it ran out) stops at
// the end of its batch.
func (r *Retention) sweepOnce(ctx context.Context, cfg store.SweeperConfig) (store.SweepReport, error) {
	if err := r.TakeLease(ctx, cfg.Holder, cfg.LeaseTTL); err != nil {
		return store.SweepReport{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	renewed := r.s.cfg.Clock()
	opts := cfg.Options
	progress := opts.Progress
	opts.Progress = func(k store.KindSweep) {
		if progress != nil {
			progress(k)
		}
		if now := r.s.cfg.Clock(); now.Sub(renewed) >= cfg.LeaseTTL/3 {
			if err := r.TakeLease(ctx, cfg.Holder, cfg.LeaseTTL); err != nil {
				cancel(err)
				return
			}
			renewed = now
		}
	}
	rep, err := r.Sweep(ctx, opts)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	return rep, err
}

// Stop stops the sweeper, waits for the sweep in progress to end (at the
// end of its batch) and gives the lease up.
func (sw *Sweeper) Stop() {
	if sw == nil {
		return
	}
	sw.once.Do(func() {
		sw.cancel()
		<-sw.done
	})
}
