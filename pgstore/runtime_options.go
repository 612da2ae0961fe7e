package pgstore

import (
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
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
	// accepts.
	MaxUploadLimit = sqlcore.MaxUploadLimit
)

// WithMaxSessions caps the number of runtime sessions in the database (all
// processes together): an Insert at the cap fails with
// store.ErrTooManySessions. 0, the default, means no cap.
func WithMaxSessions(n int64) Option {
	return func(c *config) { c.runtime.MaxSessions = n }
}

// WithMaxUploadBytes sets the size limit of one upload (default
// store.DefaultMaxUploadBytes, 32 MiB; at most MaxUploadLimit).
func WithMaxUploadBytes(n int64) Option {
	return func(c *config) { c.runtime.MaxUploadBytes = n }
}

// WithCancelPollInterval sets how often the store checks for cancels of its
// running turns recorded by other processes (default
// DefaultCancelPollInterval; 1 ms to 10 s). The check runs only while the
// store has running turns. Cancels made through the same store fire at once;
// cancels from other processes arrive by LISTEN/NOTIFY at once, and the poll
// catches anything a lost listener connection missed.
func WithCancelPollInterval(d time.Duration) Option {
	return func(c *config) { c.runtime.CancelPoll = d }
}

// WithTurnLease sets how long a turn this store began stays live without
// the store renewing it (default store.DefaultTurnLease, 30s; 100ms to
// 24h). The store renews the leases of its turns every third of it while
// it is open; when its process dies, its running turns read as stale once
// the lease has lapsed (see store.Turns).
func WithTurnLease(d time.Duration) Option {
	return func(c *config) { c.runtime.TurnLease = d }
}
