package humanize

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The units of durations as people write them, largest first. Days take a
// plural ("1 day", "30 days"); the others are symbols ("1 min", "5 min").
var durationUnits = []struct {
	size      time.Duration
	one, many string
}{
	{24 * time.Hour, "day", "days"},
	{time.Hour, "h", "h"},
	{time.Minute, "min", "min"},
	{time.Second, "s", "s"},
	{time.Millisecond, "ms", "ms"},
	{time.Microsecond, "µs", "µs"},
	{time.Nanosecond, "ns", "ns"},
}

// Duration writes d exactly, as people write a configured duration: its
// non-zero parts from days down, "30 days", "1 h 30 min", "250 ms",
// "1 s 1 µs". Zero is "0 s"; a negative duration takes a leading minus.
func Duration(d time.Duration) string {
	return durationParts(d, len(durationUnits))
}

// Approx writes d for a reader who wants its size, not its digits: d
// rounded to the unit below its largest, in at most two parts ("59 min
// 59 s", "2 days 3 h", "1 s 200 ms"). Ages and time left use it.
func Approx(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	for i, u := range durationUnits {
		if d >= u.size {
			unit := u.size
			if i+1 < len(durationUnits) {
				unit = durationUnits[i+1].size
			}
			r := durationParts(d.Round(unit), 2)
			if neg {
				return "-" + r
			}
			return r
		}
	}
	return "0 s"
}

// durationParts writes at most max non-zero parts of d, largest first.
func durationParts(d time.Duration, max int) string {
	if d == 0 {
		return "0 s"
	}
	var b strings.Builder
	m := uint64(d)
	if d < 0 {
		b.WriteByte('-')
		m = uint64(-d) // the two's complement of math.MinInt64 is its magnitude
	}
	parts := 0
	for _, u := range durationUnits {
		n := m / uint64(u.size)
		if n == 0 {
			continue
		}
		m -= n * uint64(u.size)
		if parts > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(n, 10))
		b.WriteByte(' ')
		b.WriteString(Plural(int64(n), u.one, u.many))
		if parts++; parts == max || m == 0 {
			break
		}
	}
	return b.String()
}

// Millis is d in whole milliseconds, the unit of every duration in the
// JSON of the CLI and the console (fields named *_ms). A part below a
// millisecond is dropped toward zero.
func Millis(d time.Duration) int64 { return d.Milliseconds() }

// Money writes an amount of integer micro-units exactly, as a decimal with
// at least two places and its currency code: "1.00 USD", "0.000001 USD",
// "12.50 EUR". It never goes through a float. An empty currency is left
// out ("1.00").
func Money(micros int64, currency string) string {
	const perUnit = 1_000_000
	sign := ""
	u := uint64(micros)
	if micros < 0 {
		sign, u = "-", uint64(-micros) // the two's complement of math.MinInt64 is its magnitude
	}
	whole, frac := u/perUnit, u%perUnit
	f := strings.TrimRight(strconv.FormatUint(frac+perUnit, 10)[1:], "0")
	for len(f) < 2 {
		f += "0"
	}
	s := sign + strconv.FormatUint(whole, 10) + "." + f
	if currency != "" {
		s += " " + currency
	}
	return s
}

// Time writes t as RFC 3339 in UTC with its fraction as stored, trailing
// zeros dropped ("2026-11-27T21:57:13Z", "2026-11-27T21:57:13.25Z"), the form of every time in the JSON of
// the CLI and the console. The zero time is absent: "".
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// MicrosOf is an amount kept as a float (a conversation's cost in US
// dollars, as the store keeps it) in integer micro-units, rounded to the
// nearest: the one place where a float amount enters, so that sums and
// renderings from there on are exact (Money).
func MicrosOf(amount float64) int64 { return int64(math.Round(amount * 1_000_000)) }
