package store

import (
	"context"
	"time"
)

// Store is a complete session store: one database holding every facet of an
// agent session. Each facet is reached through its own accessor so that the
// method sets stay small and names never collide.
type Store interface {
	// Governance returns the governed-session facet: budgets, allow-lists,
	// rate and time limits.
	Governance() Governance

	// Conversations returns the conversation-persistence facet: session
	// data, message history, artifacts, traces, runs and reports.
	Conversations() Conversations

	// Runtime returns the runtime-bookkeeping facet: runtime sessions,
	// model overrides, uploads, turns and cancellation.
	Runtime() Runtime

	// AgentSessions returns the agent-session facet: sessions keyed by
	// (app, user, session), event logs and app/user/session state.
	AgentSessions() AgentSessions

	// Feed returns the change feed: what is committed to a conversation's
	// messages, traces and run events, an agent session's event log or a
	// governed session's state, delivered as it commits (see Feed).
	Feed() Feed

	// Spend returns the spend facet: limits on tokens and money of
	// governed sessions and agents, and the reservations against them.
	Spend() Spend

	// Audit returns the audit trail of governance decisions: one hash
	// chain per agent.
	Audit() Audit

	// Retention returns the lifecycle of the store: retention policies,
	// holds and sweeps.
	Retention() Retention

	// Snapshotter runs a group of reads against one snapshot of the
	// database (ReadSnapshot).
	Snapshotter

	// SchemaVersion returns the database's applied schema version and the
	// latest version this binary knows (current > latest is a database
	// written by a newer binary; Open refuses it with ErrSchemaTooNew).
	SchemaVersion(ctx context.Context) (current, latest int64, err error)

	// HealthCheck verifies that the backing database answers a real query
	// and can be written: it probes a write (an in-place update of a row
	// of the migration table) and rolls it back, so it changes nothing. A
	// database the store can read but not write is ErrReadOnly, also when
	// it became read-only after the store opened; any other
	// failure matches ErrStorage with its kind (or ErrBusy).
	HealthCheck(ctx context.Context) error

	// Backend names the implementation: "sqlite" (package sqlstore) or
	// "postgres" (package pgstore).
	Backend() string

	// Close releases the store's resources. Calls made after Close fail
	// with ErrStoreClosed.
	Close() error
}

// Clock returns the current time. Backends take one so that expiry and rate
// windows can be tested without sleeping.
type Clock func() time.Time

// inMillis returns t in UTC truncated to whole milliseconds: the precision
// of every time a backend stores (see the package documentation).
func inMillis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
