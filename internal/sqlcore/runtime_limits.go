package sqlcore

import (
	"time"

	"github.com/agentstore/sessionstore/store"
)

// MaxUploadLimit is the highest upload size limit a backend accepts (see
// store.MaxUploadLimit).
const MaxUploadLimit = store.MaxUploadLimit

// RuntimeLimits are the runtime facet's settings, the same on every
// backend; each backend sets them through its own options.
type RuntimeLimits struct {
	// MaxSessions is the global cap on runtime sessions (0: none).
	MaxSessions int64
	// MaxUploadBytes is the largest upload accepted.
	MaxUploadBytes int64
	// CancelPoll is how often running turns of a Store are checked for
	// cancels recorded by other processes.
	CancelPoll time.Duration
	// TurnLease is how long a turn of this Store stays live without a
	// renewal (see store.Turns); the Store renews every third of it.
	TurnLease time.Duration
}

// DefaultRuntimeLimits returns the defaults with the backend's poll
// interval.
func DefaultRuntimeLimits(cancelPoll time.Duration) RuntimeLimits {
	return RuntimeLimits{MaxUploadBytes: store.DefaultMaxUploadBytes, CancelPoll: cancelPoll, TurnLease: store.DefaultTurnLease}
}

// Validate reports the first setting out of its bounds.
func (l RuntimeLimits) Validate() error {
	if l.MaxSessions < 0 {
		return store.Invalid("option max_sessions", "must not be negative")
	}
	if l.MaxUploadBytes < 1 || l.MaxUploadBytes > MaxUploadLimit {
		return store.Invalid("option max_upload_bytes", "must be from 1 byte to 512 MiB")
	}
	if l.CancelPoll < time.Millisecond || l.CancelPoll > 10*time.Second {
		return store.Invalid("option cancel_poll_interval", "must be from 1ms to 10s")
	}
	if l.TurnLease < store.MinTurnLease || l.TurnLease > store.MaxTurnLease {
		return store.Invalid("option turn_lease", "must be from 100ms to 24h")
	}
	return nil
}
