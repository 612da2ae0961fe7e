//go:build unix

package pgstore_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuTimes is the CPU time spent so far by this process (the client: the
// store and its pool) and by the server's processes: the postmaster
// (server, see serverPID) and its children, its backends, WAL writer and
// the rest, when the server runs on this machine, as
// scripts/with-postgres.sh's does (server is -1 when none is readable).
// Other PostgreSQL servers on the machine are not counted: on a machine
// shared with other work they come and go, and their CPU is not ours. A
// benchmark takes it before and after a shape to report the CPU each call
// costs on each side, which bounds the calls per second the machine's
// cores can give whatever the concurrency: a limit that shows when callers
// scale less than the goal.
//
// Reading the server's processes costs this process CPU itself (it reads
// every /proc/*/stat): clientEnd is this process's time after that read,
// and an interval's client time runs from one reading's clientEnd to the
// next one's client, so that it leaves the readings out.
type cpuTimes struct{ client, clientEnd, server time.Duration }

// clientSince is the CPU time of this process from c0 to c1.
func clientSince(c0, c1 cpuTimes) time.Duration { return c1.client - c0.clientEnd }

// selfCPU is the CPU time this process has spent so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func readCPU(server int) (c cpuTimes) {
	c = cpuTimes{client: selfCPU(), server: -1}
	defer func() { c.clientEnd = selfCPU() }()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 14 and 15, counted
		// after the ')' that ends comm, which may hold spaces.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if server <= 0 || open < 0 || end < open {
			continue
		}
		f := bytes.Fields(b[end+1:])
		if len(f) < 13 {
			continue
		}
		pid, _ := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
		ppid, _ := strconv.Atoi(string(f[1]))
		if pid != server && ppid != server {
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

// serverPID is the process id of the postmaster of the server pool
// connects to, when it runs on this machine (the parent of a backend's
// process); 0 when it cannot be told.
func serverPID(ctx context.Context, pool *pgxpool.Pool) int {
	var backend int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(backend), "stat"))
	if err != nil {
		return 0
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0
	}
	return ppid
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100
