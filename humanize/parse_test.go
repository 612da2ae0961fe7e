package humanize

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

// TestParseDuration: Go's forms, days and weeks, words and spaces, and
// the refusals, each with what it says.
func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"0s", 0}, {"-0", 0},
		{"1h30m", 90 * time.Minute}, {"90s", 90 * time.Second}, {"1.5h", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond}, {"1500500us", 1500500 * time.Microsecond},
		{"1µs", time.Microsecond}, {"1μs", time.Microsecond}, {"7ns", 7},
		{"720h", 30 * day}, {"30d", 30 * day}, {"2w", 14 * day}, {"1d12h", 36 * time.Hour},
		{"1.5d", 36 * time.Hour}, {".5h", 30 * time.Minute}, {"1.h", time.Hour},
		{"30 days", 30 * day}, {"1 day", day}, {"1 h 30 min", 90 * time.Minute},
		{"2 weeks", 14 * day}, {"3 hours", 3 * time.Hour}, {"10 Minutes", 10 * time.Minute},
		{" 12h ", 12 * time.Hour}, {"30D", 30 * day}, {"+5m", 5 * time.Minute},
		{"-2 h", -2 * time.Hour}, {"-5d", -5 * day},
		{"0.000000001s", 1}, {"0.0000000019s", 1}, // below a nanosecond is dropped
		{"106751d23h47m16s854ms775us807ns", math.MaxInt64},
		{"-106751d23h47m16s854ms775us808ns", math.MinInt64},
	} {
		got, err := ParseDuration(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct{ in, problem string }{
		{"", "no duration given"},
		{"  ", "no duration given"},
		{"-", "no duration given"},
		{"5", "the number 5 has no unit"},
		{"5x", `unknown unit "x"`},
		{"5 fortnights", `unknown unit "fortnights"`},
		{"d", `a number must come before "d"`},
		{"1..5h", `a number must come before "h"`},
		{"1h-5m", `unexpected "-"`},
		{"1h,", `unexpected ","`},
		{"106751d23h47m16s854ms775us808ns", "too long"},
		{"15251w", "too long"},
		{"99999999999999999999h", "too long"},
		{"9223372037s", "too long"},
	} {
		got, err := ParseDuration(c.in)
		var de *DurationError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), c.problem) || de.Input != c.in {
			t.Errorf("ParseDuration(%q) = %v, %v; want a *DurationError saying %q", c.in, got, err, c.problem)
			continue
		}
		if !strings.HasSuffix(err.Error(), "(give a duration such as 30d or 12h)") {
			t.Errorf("ParseDuration(%q): %q does not say how a duration is written", c.in, err)
		}
	}
}

// TestParseDurationRoundTrip: what Duration and Short write reads back
// as the same duration.
func TestParseDurationRoundTrip(t *testing.T) {
	for _, d := range []time.Duration{
		0, 1, 999, time.Microsecond, 1500 * time.Nanosecond, 250 * time.Millisecond, time.Second,
		time.Second + time.Microsecond, time.Minute, 10 * time.Minute, 90 * time.Minute,
		time.Hour + time.Second, day, 30 * day, 36 * time.Hour, 14 * day,
		-2 * time.Hour, -90 * time.Second, math.MaxInt64, math.MinInt64 + 1, math.MinInt64,
		123456789 * time.Millisecond, 3*day + 4*time.Hour + 5*time.Minute + 6*time.Second + 7,
	} {
		for name, render := range map[string]func(time.Duration) string{"Duration": Duration, "Short": Short} {
			s := render(d)
			if back, err := ParseDuration(s); err != nil || back != d {
				t.Errorf("ParseDuration(%s(%d) = %q) = %v, %v", name, int64(d), s, back, err)
			}
		}
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Hour: "1h", time.Minute: "1m", 90 * time.Minute: "1h30m", 30 * day: "30d",
		36 * time.Hour: "1d12h", 1500 * time.Millisecond: "1s500ms", time.Microsecond: "1µs", -5 * day: "-5d",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestParseBytes: every unit, with and without a space, and the refusals
// (no number, a fraction, a negative count, an unknown unit, an overflow).
func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1024": 1024, "7B": 7, "2KB": 2000, "2KiB": 2048, "3 MB": 3e6, "3MiB": 3 << 20,
		"2GiB": 2 << 30, "2GB": 2e9, "1TiB": 1 << 40, "1TB": 1e12, "4096 B": 4096,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GiB", "1.5GiB", "-1", "-1KB", "2XB", "2 kib", "4194305TiB", "9223372036854775807"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

// ParseTime reads what Time writes, in UTC, "" as the zero time, and
// names the field of a value that is not RFC 3339.
func TestParseTime(t *testing.T) {
	at := time.Date(2026, 11, 29, 7, 30, 1, 250_000_000, time.FixedZone("x", 3600))
	got, err := ParseTime("at", Time(at))
	if err != nil || !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("ParseTime(Time(%v)) = %v, %v; want the same instant in UTC", at, got, err)
	}
	if got, err := ParseTime("at", ""); err != nil || !got.IsZero() {
		t.Errorf(`ParseTime("") = %v, %v; want the zero time`, got, err)
	}
	if _, err := ParseTime("expires_at", "yesterday"); err == nil || !strings.Contains(err.Error(), "expires_at") {
		t.Errorf("ParseTime of a non-time: %v; want an error naming expires_at", err)
	}
}
