package rowcodec

import "time"

// ToMillis converts t to the storage convention of every time column: UTC
// unix milliseconds.
func ToMillis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts a stored UTC unix-millisecond value back to a
// time.Time in UTC.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
