package loadtest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/agentstore/sessionstore/loadtest"
)

// Measures governed Use on the disk of /var/lib/agent, five seconds per
// scenario, with 64 callers in the contended one.
func ExampleRun() {
	uses, err := loadtest.Select("use")
	if err != nil {
		log.Fatal(err)
	}
	rep, err := loadtest.Run(context.Background(), loadtest.Options{
		Dir: "/var/lib/agent", Duration: 5 * time.Second, Callers: 64, Scenarios: uses,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("F = %.0f fsyncs/s\n", rep.FsyncPerSec)
	for _, r := range rep.Results {
		fmt.Printf("%s/callers=%d: %.0f ops/s, p99 %.0f µs, %.2f per fsync\n", r.Name, r.Callers, r.OpsPerSec, r.P99Micros, r.RatioToF)
	}
}
