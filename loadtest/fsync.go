package loadtest

import (
	"context"
	"os"
	"time"
)

// probeFsync writes 4 KiB and fsyncs in a loop for d in a file of dir and
// returns each iteration's latency; tick is told the fraction of d gone.
func probeFsync(ctx context.Context, dir string, d time.Duration, tick func(float64)) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t0 := time.Now()
		if _, err := f.WriteAt(buf, 0); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
		if len(lat)%64 == 0 {
			tick(float64(time.Since(start)) / float64(d))
		}
	}
	return lat, ctx.Err()
}
