package benchkit

import (
	"context"
	"time"
)

// cpuMark is where a round's timed part began in the process's CPU time
// (see Result.CPUSeconds); RoundOn puts one in the run's context.
type cpuMark struct {
	set bool
	at  time.Duration
}

type cpuMarkKey struct{}

// begin starts a round's timed part: it returns the wall-clock start and
// marks the process's CPU time in the round's cpuMark, if any.
func begin(ctx context.Context) time.Time {
	if m, ok := ctx.Value(cpuMarkKey{}).(*cpuMark); ok {
		m.set, m.at = true, processCPU()
	}
	return time.Now()
}
