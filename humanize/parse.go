package humanize

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// durationWords are the units ParseDuration reads, by the words people
// type for them: Go's symbols (ns, us, µs, ms, s, m, h), Duration's own
// (min, day, days), days and weeks (d, w) and the spelled-out names.
var durationWords = map[string]time.Duration{
	"ns": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// DurationExample is how a duration is written in help and error text.
const DurationExample = "a duration such as 30d or 12h"

// DurationError says why a text is not a duration. Error names the
// problem and how a duration is written, not the text itself (the caller
// quotes it, as the flag package does); Input keeps it.
type DurationError struct {
	Input   string // the text given
	Problem string // what is wrong with it, e.g. `unknown unit "x"`
}

// Error says what is wrong and how a duration is written.
func (e *DurationError) Error() string { return e.Problem + " (give " + DurationExample + ")" }

// ParseDuration reads a duration as people type it and as Duration and
// Short write it: Go's forms ("1h30m", "90s", "1.5h", "250ms"), days and
// weeks ("30d", "2w", "1d12h"), and units in words with spaces between
// the parts ("30 days", "1 h 30 min", "2 weeks"). A leading sign is
// allowed ("-2 h", as Duration writes a negative duration); a caller for
// whom a negative duration means nothing refuses it. A bare "0" is zero;
// any other number needs its unit. The result is exact to the nanosecond
// (a fraction below one is dropped); a duration beyond time.Duration's
// range is refused, never wrapped. Errors are *DurationError.
func ParseDuration(s string) (time.Duration, error) {
	fail := func(problem string) (time.Duration, error) {
		return 0, &DurationError{Input: s, Problem: problem}
	}
	rest := strings.TrimSpace(s)
	neg := false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', strings.TrimSpace(rest[1:])
	}
	if rest == "0" {
		return 0, nil
	}
	if rest == "" {
		return fail("no duration given")
	}
	var total uint64 // nanoseconds
	for rest != "" {
		n := strings.IndexFunc(rest, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
		if n < 0 {
			n = len(rest)
		}
		num := rest[:n]
		rest = strings.TrimLeft(rest[n:], " ")
		u := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) })
		if u < 0 {
			u = len(rest)
		}
		word := rest[:u]
		rest = strings.TrimLeft(rest[u:], " ")
		switch {
		case num == "" && word == "":
			return fail("unexpected " + strconv.Quote(string([]rune(rest)[0])))
		case num == "" || num == "." || strings.Count(num, ".") > 1:
			return fail("a number must come before " + strconv.Quote(word))
		case word == "":
			return fail("the number " + num + " has no unit (ns, ms, s, m, h, d or w)")
		}
		unit, ok := durationWords[strings.ToLower(word)]
		if !ok {
			return fail("unknown unit " + strconv.Quote(word))
		}
		v, ok := durationPart(num, uint64(unit))
		if total += v; !ok || total < v || total > 1<<63 {
			return fail("too long: the longest duration is " + Duration(math.MaxInt64))
		}
	}
	if neg {
		return time.Duration(-total), nil // -(1<<63) is math.MinInt64
	}
	if total > math.MaxInt64 {
		return fail("too long: the longest duration is " + Duration(math.MaxInt64))
	}
	return time.Duration(total), nil
}

// durationPart is num units in nanoseconds, num being digits with at most
// one point; false when it overflows 64 bits.
func durationPart(num string, unit uint64) (uint64, bool) {
	whole, frac, _ := strings.Cut(num, ".")
	var w uint64
	for _, c := range whole {
		hi, lo := bits.Mul64(w, 10)
		if hi != 0 || lo+uint64(c-'0') < lo {
			return 0, false
		}
		w = lo + uint64(c-'0')
	}
	hi, v := bits.Mul64(w, unit)
	if hi != 0 {
		return 0, false
	}
	// The fraction, to 18 digits (beyond a nanosecond for every unit),
	// scaled exactly: f/scale of a unit, rounded down.
	var f, scale uint64 = 0, 1
	for i := 0; i < len(frac) && i < 18; i++ {
		f, scale = f*10+uint64(frac[i]-'0'), scale*10
	}
	hi, lo := bits.Mul64(f, unit)
	q, _ := bits.Div64(hi, lo, scale)
	if v+q < v {
		return 0, false
	}
	return v + q, true
}

// Short writes d as people type it and ParseDuration reads it back
// exactly: its non-zero parts from days down, without spaces ("30d",
// "1h30m", "1d12h", "250ms", "1s500ms"). Zero is "0s"; a negative
// duration takes a leading minus. Flag defaults use it.
func Short(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	u := uint64(d)
	if d < 0 {
		b.WriteByte('-')
		u = uint64(-d) // the two's complement of math.MinInt64 is its magnitude
	}
	for _, p := range []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "µs"}, {time.Nanosecond, "ns"}} {
		if n := u / uint64(p.size); n > 0 {
			b.WriteString(strconv.FormatUint(n, 10) + p.name)
			u -= n * uint64(p.size)
		}
	}
	return b.String()
}

// byteUnits are the suffixes ParseBytes reads, longest first.
var byteUnits = []struct {
	suffix string
	n      int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

// ParseBytes reads a byte count as people type it: a whole number,
// optionally followed by a unit (B; KB, MB, GB, TB in powers of 1000;
// KiB, MiB, GiB, TiB in powers of 1024), with or without a space between
// ("2GiB", "500 MB", "1024"). A negative count, a fraction, or one beyond
// 2^62 bytes is refused. The error says only that s is not a size; the
// caller quotes s.
func ParseBytes(s string) (int64, error) {
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.n
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, errNotSize
	}
	return n * mult, nil
}

// errNotSize is ParseBytes' refusal.
var errNotSize = errors.New("not a size")

// ParseTime reads a time that Time wrote (any RFC 3339 time), in UTC; ""
// is the zero time. field names the value in the error.
func ParseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: not an RFC 3339 time: %q", field, s)
	}
	return t.UTC(), nil
}
