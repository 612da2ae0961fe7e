package console

import "time"

// SetHeartbeat sets the interval of the keep-alive comments of live
// streams and returns a function that restores it.
func SetHeartbeat(d time.Duration) func() {
	old := heartbeat
	heartbeat = d
	return func() { heartbeat = old }
}

// LiveStreams is the number of live streams being served.
func LiveStreams() int64 { return liveStreams.Load() }
