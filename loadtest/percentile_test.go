package loadtest

import (
	"testing"
	"time"
)

// TestPercentile: the p-th percentile of 1..100 µs in any order, in
// microseconds; none for no latencies.
func TestPercentile(t *testing.T) {
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(100-i) * time.Microsecond
	}
	if p50, p99, p100 := percentile(lat, 50), percentile(lat, 99), percentile(lat, 100); p50 != 51 || p99 != 100 || p100 != 100 {
		t.Fatalf("p50 %v p99 %v p100 %v, want 51 100 100", p50, p99, p100)
	}
	if p := percentile([]time.Duration{1500 * time.Nanosecond}, 99); p != 1.5 {
		t.Fatalf("one latency of 1.5 µs: p99 %v", p)
	}
	if p := percentile(nil, 50); p != 0 {
		t.Fatalf("no latencies: %v", p)
	}
}
