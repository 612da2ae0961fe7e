package pgstore

import (
	"io"
	"log/slog"
	"time"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

// Option configures a Store.
type Option func(*config)

type config struct {
	clock       func() time.Time
	logger      *slog.Logger
	maxConns    int32
	maxAttempts int
	lockWait    time.Duration
	runtime     sqlcore.RuntimeLimits
	// auditOff (tests only, see export_test.go) appends no audit events:
	// the baseline of the audit trail's benchmarks.
	auditOff bool
	readOnly bool                 // WithReadOnly (readonly.go)
	sweeper  *store.SweeperConfig // WithSweeper (retention.go)
}

func defaultConfig() config {
	return config{
		clock:       time.Now,
		logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		maxAttempts: 10,
		lockWait:    5 * time.Minute,
		runtime:     sqlcore.DefaultRuntimeLimits(DefaultCancelPollInterval),
	}
}

// WithClock injects the clock used for creation times, expiry and rate
// windows. The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.clock = now
		}
	}
}

// WithLogger sets the logger for operational events (retries, migrations).
// The store is silent by default.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithMaxConns bounds the connection pool Open creates (default: pgx's,
// the larger of 4 and the number of CPUs; a pool_max_conns parameter in the
// URL also works). It has no effect with OpenPool.
func WithMaxConns(n int32) Option {
	return func(c *config) { c.maxConns = n }
}

// WithMaxAttempts bounds how many times one transaction is run when
// PostgreSQL aborts it with a serialization failure or a deadlock (default
// 10). The last failure reaches the caller as store.ErrBusy.
func WithMaxAttempts(n int) Option {
	return func(c *config) { c.maxAttempts = n }
}

// WithMigrationLockWait bounds how long Open waits for another process that
// is migrating the same schema (default 5 minutes, whole seconds).
func WithMigrationLockWait(d time.Duration) Option {
	return func(c *config) { c.lockWait = d }
}

func (c *config) validate() error {
	if c.maxConns < 0 {
		return store.Invalid("option max_conns", "must not be negative")
	}
	if c.maxAttempts < 1 {
		return store.Invalid("option max_attempts", "must be at least 1")
	}
	if c.lockWait < time.Second {
		return store.Invalid("option migration_lock_wait", "must be at least 1s")
	}
	return c.runtime.Validate()
}

// invalidOption reports a bad Option value.
func invalidOption(name, reason string) error {
	return store.Invalid("option "+name, reason)
}
