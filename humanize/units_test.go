package humanize

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{time.Minute, "1 min"},
		{10 * time.Minute, "10 min"},
		{30 * 24 * time.Hour, "30 days"},
		{24 * time.Hour, "1 day"},
		{90 * time.Minute, "1 h 30 min"},
		{time.Hour + time.Second, "1 h 1 s"},
		{250 * time.Millisecond, "250 ms"},
		{time.Second + time.Microsecond, "1 s 1 µs"},
		{1500 * time.Nanosecond, "1 µs 500 ns"},
		{-2 * time.Hour, "-2 h"},
		{720 * time.Hour, "30 days"},
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	// The extremes do not panic and keep their sign.
	if got := Duration(math.MinInt64); got != "-106751 days 23 h 47 min 16 s 854 ms 775 µs 808 ns" {
		t.Errorf("Duration(MinInt64) = %q", got)
	}
	if got := Duration(math.MaxInt64); got != "106751 days 23 h 47 min 16 s 854 ms 775 µs 807 ns" {
		t.Errorf("Duration(MaxInt64) = %q", got)
	}
}

func TestApprox(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"},
		{59*time.Minute + 59*time.Second + 400*time.Millisecond, "59 min 59 s"},
		{59*time.Minute + 59*time.Second + 600*time.Millisecond, "1 h"},
		{51*time.Hour + 20*time.Minute, "2 days 3 h"},
		{1234 * time.Millisecond, "1 s 234 ms"},
		{1234567 * time.Microsecond, "1 s 235 ms"},
		{-90 * time.Second, "-1 min 30 s"},
		{800 * time.Nanosecond, "800 ns"},
	} {
		if got := Approx(c.d); got != c.want {
			t.Errorf("Approx(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestMoney(t *testing.T) {
	for _, c := range []struct {
		micros   int64
		currency string
		want     string
	}{
		{1_000_000, "USD", "1.00 USD"},
		{0, "USD", "0.00 USD"},
		{1, "USD", "0.000001 USD"},
		{12_500_000, "EUR", "12.50 EUR"},
		{86_400, "USD", "0.0864 USD"}, // 0.0864 exactly, where a float sum printed 0.08639999999999999
		{-2_500_000, "", "-2.50"},
		{math.MaxInt64, "USD", "9223372036854.775807 USD"},
		{math.MinInt64, "USD", "-9223372036854.775808 USD"},
	} {
		if got := Money(c.micros, c.currency); got != c.want {
			t.Errorf("Money(%d, %q) = %q, want %q", c.micros, c.currency, got, c.want)
		}
	}
}

func TestTime(t *testing.T) {
	if got := Time(time.Time{}); got != "" {
		t.Errorf("zero time = %q, want absent", got)
	}
	zone := time.FixedZone("CET", 3600)
	at := time.Date(2026, 11, 27, 22, 57, 13, 0, zone)
	if got := Time(at); got != "2026-11-27T21:57:13Z" {
		t.Errorf("Time = %q", got)
	}
	if got := Time(at.Add(250 * time.Millisecond)); got != "2026-11-27T21:57:13.25Z" {
		t.Errorf("Time with fraction = %q", got)
	}
	if got := Millis(1500 * time.Microsecond); got != 1 {
		t.Errorf("Millis = %d", got)
	}
}

// TestMicrosOf: a float amount becomes micro-units by rounding, so that
// the sum the store returns prints without float noise.
func TestMicrosOf(t *testing.T) {
	sum := 0.0
	for _, v := range []float64{0.0432, 0.0432} {
		sum += v
	}
	if got := Money(MicrosOf(sum), "USD"); got != "0.0864 USD" {
		t.Errorf("Money(MicrosOf(%v)) = %q", sum, got)
	}
	if got := MicrosOf(-0.25); got != -250_000 {
		t.Errorf("MicrosOf(-0.25) = %d", got)
	}
}

// TestClip: an echo of a long input is cut on a character boundary and
// states the whole length; a short one is left as it is.
func TestClip(t *testing.T) {
	if got := Clip("short", 80); got != "short" {
		t.Errorf("Clip(short) = %q", got)
	}
	long := strings.Repeat("é", 20_000)
	got := Clip(long, 10)
	if got != strings.Repeat("é", 10)+"… (20000 characters)" {
		t.Errorf("Clip(20000 é, 10) = %q", got)
	}
	if got := Clip("abcdef", 6); got != "abcdef" {
		t.Errorf("Clip at the length = %q", got)
	}
}
