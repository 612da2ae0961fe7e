//go:build unix

package benchkit

import (
	"syscall"
	"time"
)

// processCPU is this process's user and system CPU time so far (every
// goroutine's: a store's background work counts), or 0 where unknown.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
