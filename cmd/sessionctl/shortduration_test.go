package main

import (
	"testing"
	"time"
)

// TestShortDuration: help shows a duration default as it is typed ("1h",
// not Go's "1h0m0s"), and the short form parses back to the same value;
// what is not Go's rendering of a whole number of seconds stays as it is.
func TestShortDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1h0m0s": "1h", "1m0s": "1m", "1h30m0s": "1h30m", "1m30s": "1m30s", "1h0m30s": "1h30s",
		"10m0s": "10m", "720h0m0s": "720h", "90s": "90s", "30s": "30s", "10s": "10s", "1.5s": "1.5s",
		"100ms": "100ms", "json": "json", "5": "5",
	} {
		got := shortDuration(in)
		if got != want {
			t.Errorf("shortDuration(%q) = %q, want %q", in, got, want)
		}
		if d, err := time.ParseDuration(in); err == nil {
			if back, err := time.ParseDuration(got); err != nil || back != d {
				t.Errorf("shortDuration(%q) = %q does not parse back (%v, %v)", in, got, back, err)
			}
		}
	}
}
