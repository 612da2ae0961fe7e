//go:build !unix

package pgstore_test

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// cpuTimes: see cpu_bench_test.go; elsewhere than on Unix neither side is
// measured.
type cpuTimes struct{ client, clientEnd, server time.Duration }

func clientSince(c0, c1 cpuTimes) time.Duration { return c1.client - c0.clientEnd }

func readCPU(int) cpuTimes { return cpuTimes{server: -1} }

func serverPID(context.Context, *pgxpool.Pool) int { return 0 }
