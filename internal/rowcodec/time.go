package rowcodec

import "time"

// ToMillis converts t to the storage convention of every time column: UTC
// unix milliseconds.
func ToMillis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis converts a stored UTC unix-millisecond value back to a
// time.Time in UTC.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// ToMicros converts t to the storage convention of event timestamps
// (agent_events.ts_us): UTC unix microseconds, the precision ADK keeps.
func ToMicros(t time.Time) int64 { return t.UnixMicro() }

// FromMicros converts a stored UTC unix-microsecond value back to a
// time.Time in UTC.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
