package pgstore

import (
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Bounds of the runtime options.
const (
	// DefaultCancelPollInterval is how often a store that runs turns checks
	// the database for cancels recorded by other processes when no
	// notification arrived. Cancels, supersedes and ends of turns are
	// announced with NOTIFY on commit and checked at once by every store
	// that listens; the poll is the fallback for a listener connection
	// that is down (or a notification lost with it).
	DefaultCancelPollInterval = 500 * time.Millisecond
	// MaxUploadLimit is the highest upload size limit WithMaxUploadBytes
	// accepts (the same as sqlstore's).
	MaxUploadLimit = 512 << 20
)

type runtimeConfig struct {
	maxSessions    int64         // 0: no global cap
	maxUploadBytes int64         // per upload
	cancelPoll     time.Duration // cross-process cancel poll interval
}

func defaultRuntimeConfig() runtimeConfig {
	return runtimeConfig{
		maxUploadBytes: store.DefaultMaxUploadBytes,
		cancelPoll:     DefaultCancelPollInterval,
	}
}

// WithMaxSessions caps the number of runtime sessions in the database (all
// processes together): an Insert at the cap fails with
// store.ErrTooManySessions. 0, the default, means no cap.
func WithMaxSessions(n int64) Option {
	return func(c *config) { c.runtime.maxSessions = n }
}

// WithMaxUploadBytes sets the size limit of one upload (default
// store.DefaultMaxUploadBytes, 32 MiB; at most MaxUploadLimit).
func WithMaxUploadBytes(n int64) Option {
	return func(c *config) { c.runtime.maxUploadBytes = n }
}

// WithCancelPollInterval sets how often the store checks for cancels of its
// running turns recorded by other processes (default
// DefaultCancelPollInterval; 1 ms to 10 s). The check runs only while the
// store has running turns. Cancels made through the same store fire at once;
// cancels from other processes arrive by LISTEN/NOTIFY at once, and the poll
// catches anything a lost listener connection missed.
func WithCancelPollInterval(d time.Duration) Option {
	return func(c *config) { c.runtime.cancelPoll = d }
}

func (c *runtimeConfig) validate() error {
	if c.maxSessions < 0 {
		return invalidOption("max_sessions", "must not be negative")
	}
	if c.maxUploadBytes < 1 || c.maxUploadBytes > MaxUploadLimit {
		return invalidOption("max_upload_bytes", "must be from 1 byte to 512 MiB")
	}
	if c.cancelPoll < time.Millisecond || c.cancelPoll > 10*time.Second {
		return invalidOption("cancel_poll_interval", "must be from 1ms to 10s")
	}
	return nil
}
