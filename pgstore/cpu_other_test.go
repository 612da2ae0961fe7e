//go:build !unix

package pgstore_test

import "time"

// cpuTimes: see cpu_bench_test.go; elsewhere than on Unix neither side is
// measured.
type cpuTimes struct{ client, server time.Duration }

func readCPU() cpuTimes { return cpuTimes{server: -1} }
