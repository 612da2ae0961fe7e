package loadtest

// Report is the outcome of Run. Its JSON form is the document that
// sessionctl bench --json prints.
type Report struct {
	// Backend is "sqlite" or "postgres".
	Backend string `json:"backend"`
	// Dir is the directory whose disk was measured.
	Dir string `json:"dir"`
	// Synchronous is the durability level the stores ran at.
	Synchronous string `json:"synchronous"`
	// FsyncPerSec is F, the fsync rate of Dir.
	FsyncPerSec float64 `json:"fsync_per_sec"`
	// FsyncP50 and FsyncP99 are the median and 99th percentile latency of
	// one write + fsync, in microseconds.
	FsyncP50 float64 `json:"fsync_p50_us"`
	FsyncP99 float64 `json:"fsync_p99_us"`
	// Results holds one entry per scenario, in the order they ran.
	Results []Result `json:"results"`
}

// Result is one measured scenario.
type Result struct {
	// Name is the scenario's name.
	Name string `json:"name"`
	// Callers is the number of concurrent callers it ran with.
	Callers int `json:"callers"`
	// Ops is the number of operations completed.
	Ops int64 `json:"ops"`
	// OpsPerSec is Ops over the scenario's duration.
	OpsPerSec float64 `json:"ops_per_sec"`
	// P50Micros and P99Micros are the median and 99th percentile latency
	// of one operation, in microseconds.
	P50Micros float64 `json:"p50_us"`
	P99Micros float64 `json:"p99_us"`
	// RatioToF is OpsPerSec over the report's FsyncPerSec (0 when F is 0).
	RatioToF float64 `json:"ratio_to_fsync"`
}
