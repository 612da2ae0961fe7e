package render

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentstore/sessionstore/loadtest"
)

// Bench writes the report of sessionctl bench: the fsync probe, then
// one row per scenario.
func Bench(w io.Writer, rep *loadtest.Report) {
	fmt.Fprintf(w, "%s, directory %s, synchronous=%s\n", rep.Backend, rep.Dir, rep.Synchronous)
	fmt.Fprintf(w, "fsync probe (4 KiB write + fsync): F = %.0f/s, p50 %.0f µs, p99 %.0f µs\n\n",
		rep.FsyncPerSec, rep.FsyncP50, rep.FsyncP99)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tCALLERS\tOPS/S\tP50 µs\tP99 µs\tOPS/F\t")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.2f\t\n", r.Name, r.Callers, r.OpsPerSec, r.P50Micros, r.P99Micros, r.RatioToF)
	}
	tw.Flush()
}
