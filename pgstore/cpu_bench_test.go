//go:build unix

package pgstore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// cpuTimes is the CPU time spent so far by this process (the client: the
// store and its pool) and by the processes named postgres that this user
// can read in /proc (the server's backends, WAL writer and the rest, when
// the server runs on this machine, as scripts/with-postgres.sh's does;
// server is -1 when none is readable). A benchmark takes it before and
// after a shape to report the CPU each call costs on each side, which
// bounds the calls per second the machine's cores can give whatever the
// concurrency: a limit that shows when callers scale less than the goal.
type cpuTimes struct{ client, server time.Duration }

func readCPU() cpuTimes {
	var ru syscall.Rusage
	var c cpuTimes
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.client = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c.server = -1
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15, counted
		// after the ')' that ends comm, which may hold spaces.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open || string(b[open+1:end]) != "postgres" {
			continue
		}
		f := bytes.Fields(b[end+1:])
		if len(f) < 13 {
			continue
		}
		ut, err1 := strconv.ParseInt(string(f[11]), 10, 64)
		st, err2 := strconv.ParseInt(string(f[12]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if c.server < 0 {
			c.server = 0
		}
		c.server += time.Duration(ut+st) * time.Second / clockTicks
	}
	return c
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100
