package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// PolicyKind names one retention rule. Each kind belongs to one facet of
// the registry (PolicyKinds), except PolicySizeBudget, which spans them.
type PolicyKind string

// The retention rules. A rule removes whole sessions (with everything
// they own, in one transaction) or, for PolicyMessagesKeepLast, the
// oldest messages of a conversation (the kept ones keep their positions).
const (
	// PolicyGovernedEnded removes governed sessions closed or expired
	// for longer than MaxAge (with their request records, spend limits
	// and reservations). A session holding a reservation that is still
	// reserved is kept until the reservation is settled or released.
	PolicyGovernedEnded PolicyKind = "governed_ended"
	// PolicyReservationsClosed removes spend reservations settled,
	// released, expired or refused longer than MaxAge ago. A replay of
	// such a request id is no longer recognised.
	PolicyReservationsClosed PolicyKind = "reservations_closed"
	// PolicyRuntimeIdle removes runtime sessions not active for longer
	// than MaxAge and with no turn running, with their uploads (and the
	// upload bytes no other session refers to).
	PolicyRuntimeIdle PolicyKind = "runtime_idle"
	// PolicyConversationsIdle removes conversations not updated for
	// longer than MaxAge (and, when ReadsCount, not read for that long),
	// with their messages, cost records, artifacts, traces, runs and
	// reports.
	PolicyConversationsIdle PolicyKind = "conversations_idle"
	// PolicyMessagesKeepLast removes the messages of a conversation
	// beyond its last KeepLast; the kept messages keep their positions.
	PolicyMessagesKeepLast PolicyKind = "messages_keep_last"
	// PolicyAgentSessionsIdle removes agent sessions not updated for
	// longer than MaxAge (and, when ReadsCount, not read for that long),
	// with their events and session state.
	PolicyAgentSessionsIdle PolicyKind = "agent_sessions_idle"
	// PolicyOrphanState removes app state of apps, and user state of
	// (app, user) pairs, that no agent session refers to any more.
	PolicyOrphanState PolicyKind = "orphan_state"
	// PolicyAuditCheckpointed cuts each agent's own audit chain at its
	// newest checkpoint made more than MaxAge ago (Audit.Prune's rule,
	// chain by chain): the events before it go once they verify, and the
	// checkpoint stays as the chain's first event. Session chains are
	// kept; a chain without such a checkpoint is kept whole.
	PolicyAuditCheckpointed PolicyKind = "audit_checkpointed"
	// PolicySizeBudget keeps the store under MaxBytes: when it is above,
	// a sweep removes closed and expired governed sessions first (oldest
	// first), then the sessions least recently written to (never one
	// under hold or with a turn running), until it is under.
	PolicySizeBudget PolicyKind = "size_budget"
)

// Parameter names what a policy kind takes.
type Parameter string

// The parameters of the policy kinds.
const (
	ParamMaxAge   Parameter = "max_age"
	ParamKeepLast Parameter = "keep_last"
	ParamMaxBytes Parameter = "max_bytes"
	ParamNone     Parameter = "none"
)

// PolicyKindInfo describes a policy kind.
type PolicyKindInfo struct {
	// Kind is the kind.
	Kind PolicyKind
	// Facet names the facet of the registry (package facet) whose records
	// the kind removes; "" for PolicySizeBudget.
	Facet string
	// Param is what the kind takes.
	Param Parameter
	// ReadsCount reports whether the kind can let reads extend a
	// session's life (Policy.ReadsCount).
	ReadsCount bool
	// About says what the kind removes, in one line.
	About string
}

// policyKinds lists every kind, in the order a sweep applies them.
var policyKinds = []PolicyKindInfo{
	{PolicyGovernedEnded, "governance", ParamMaxAge, false, "governed sessions closed or expired for longer than max_age"},
	{PolicyReservationsClosed, "governance", ParamMaxAge, false, "spend reservations closed (settled, released, expired, refused) longer than max_age ago"},
	{PolicyRuntimeIdle, "runtime", ParamMaxAge, false, "runtime sessions idle for longer than max_age, with their uploads and upload bytes"},
	{PolicyConversationsIdle, "conversations", ParamMaxAge, true, "conversations idle for longer than max_age, with messages, artifacts, traces, runs and reports"},
	{PolicyMessagesKeepLast, "conversations", ParamKeepLast, false, "messages of a conversation beyond its last keep_last"},
	{PolicyAgentSessionsIdle, "agent_sessions", ParamMaxAge, true, "agent sessions idle for longer than max_age, with their events and state"},
	{PolicyOrphanState, "agent_sessions", ParamNone, false, "app and user state no agent session refers to"},
	{PolicyAuditCheckpointed, "audit", ParamMaxAge, false, "audit events of an agent's own chain before its newest checkpoint older than max_age, once verified"},
	{PolicySizeBudget, "", ParamMaxBytes, false, "above max_bytes, ended governed sessions first, then the least recently written sessions"},
}

// PolicyKinds returns every policy kind, in the order a sweep applies
// them.
func PolicyKinds() []PolicyKindInfo { return append([]PolicyKindInfo(nil), policyKinds...) }

// KindInfo returns the description of kind.
func KindInfo(kind PolicyKind) (PolicyKindInfo, bool) {
	for _, k := range policyKinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return PolicyKindInfo{}, false
}

// Policy is one retention rule as stored in the database.
type Policy struct {
	// Kind selects the rule.
	Kind PolicyKind `json:"kind"`
	// MaxAge is how long a record is kept after it became due to go
	// (kinds that take ParamMaxAge); at least a millisecond, or 0 for
	// PolicyGovernedEnded (ended sessions go at the next sweep, as
	// sessionctl cleanup does).
	MaxAge time.Duration `json:"max_age,omitempty"`
	// KeepLast is how many messages a conversation keeps
	// (PolicyMessagesKeepLast).
	KeepLast int64 `json:"keep_last,omitempty"`
	// MaxBytes is the size budget of the store (PolicySizeBudget).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// ReadsCount lets reads recorded with Retention.Accessed extend a
	// session's life (kinds whose PolicyKindInfo.ReadsCount is true). A
	// read moves the session's last-access time only, never its update
	// time.
	ReadsCount bool `json:"reads_count,omitempty"`
	// UpdatedAt is when the policy was last set (set by the store).
	UpdatedAt time.Time `json:"updated_at"`
}

// Validate checks that p is a policy a store accepts.
func (p Policy) Validate() error {
	k, ok := KindInfo(p.Kind)
	if !ok {
		return Invalid("kind", "unknown policy kind")
	}
	switch {
	case p.MaxAge < 0 || p.KeepLast < 0 || p.MaxBytes < 0:
		return Invalid(string(k.Param), "must not be negative")
	case k.Param == ParamMaxAge && p.MaxAge < time.Millisecond && (p.Kind != PolicyGovernedEnded || p.MaxAge != 0):
		return Invalid("max_age", "must be at least 1ms")
	case p.MaxAge%time.Millisecond != 0:
		return Invalid("max_age", "must be whole milliseconds")
	case k.Param != ParamMaxAge && p.MaxAge != 0:
		return Invalid("max_age", "not taken by this kind")
	case k.Param != ParamKeepLast && p.KeepLast != 0:
		return Invalid("keep_last", "not taken by this kind")
	case k.Param == ParamMaxBytes && p.MaxBytes < 1:
		return Invalid("max_bytes", "must be positive")
	case k.Param != ParamMaxBytes && p.MaxBytes != 0:
		return Invalid("max_bytes", "not taken by this kind")
	case p.ReadsCount && !k.ReadsCount:
		return Invalid("reads_count", "not taken by this kind")
	}
	return nil
}

// SessionRef names one session of a facet: ID for governed sessions,
// runtime sessions and conversations; App, UserID and ID for agent
// sessions.
type SessionRef struct {
	// Facet is the facet's name in the registry: "governance",
	// "runtime", "conversations" or "agent_sessions".
	Facet string `json:"facet"`
	// App and UserID complete the key of an agent session; empty for the
	// other facets.
	App    string `json:"app,omitempty"`
	UserID string `json:"user_id,omitempty"`
	// ID is the session's id.
	ID string `json:"id"`
}

// The facets whose sessions can be held (SessionRef.Facet).
const (
	HoldGovernance    = "governance"
	HoldRuntime       = "runtime"
	HoldConversations = "conversations"
	HoldAgentSessions = "agent_sessions"
)

// Validate checks that r names a session of a facet that has sessions.
func (r SessionRef) Validate() error {
	switch r.Facet {
	case HoldGovernance, HoldRuntime, HoldConversations:
		if r.App != "" || r.UserID != "" {
			return Invalid("app", "only agent sessions have an app and a user")
		}
	case HoldAgentSessions:
		if err := ValidateName("app", r.App); err != nil {
			return err
		}
		if err := ValidateName("user_id", r.UserID); err != nil {
			return err
		}
	default:
		return Invalid("facet", "not a facet with sessions")
	}
	return ValidateID("id", r.ID)
}

// String returns r for people: "conversations c1",
// "agent_sessions app/user/session".
func (r SessionRef) String() string {
	if r.Facet == HoldAgentSessions {
		return fmt.Sprintf("%s %s/%s/%s", r.Facet, r.App, r.UserID, r.ID)
	}
	return r.Facet + " " + r.ID
}

// Hold keeps one session whatever the policies say.
type Hold struct {
	SessionRef
	// Reason says why, for people.
	Reason string `json:"reason,omitempty"`
	// CreatedAt is when the hold was placed.
	CreatedAt time.Time `json:"created_at"`
}

// DefaultSweepBatchRows bounds the rows one sweep transaction removes
// (SweepOptions.BatchRows): a batch holds whole sessions, and a
// conversation with more rows than a batch is removed over several
// transactions of at most a batch each (hidden from every reader from the
// first; a sweep interrupted mid-way leaves it hidden, and the next sweep
// finishes it). Other sessions with more rows go alone in a batch.
// 100 keeps a governed Use's p99 during a sweep of 1,000,000 rows within
// twice its idle p99 (measured 1.75x, about 11,000 rows/s on SQLite at
// synchronous=FULL; 250 rows gave 2.5x at 18,000 rows/s): see
// BenchmarkSweep in sqlstore.
const DefaultSweepBatchRows = 100

// SweepOptions are the settings of one sweep.
type SweepOptions struct {
	// DryRun counts what the sweep would remove and changes nothing.
	DryRun bool
	// BatchRows bounds the rows of one transaction (0:
	// DefaultSweepBatchRows).
	BatchRows int
	// Policies, when not nil, replace the stored policies for this sweep
	// (sessionctl gc and cleanup use it for their one-off rules). Holds
	// are respected all the same.
	Policies []Policy
	// Holder names the sweeper in the log of sweeps ("" : "sweep").
	Holder string
	// Pause is waited between two batches, so that other writers get
	// the database (0: none).
	Pause time.Duration
	// Progress, when set, is called as each policy starts (with zero
	// counts) and after each of its batches, with what the policy has
	// removed so far. It runs on the sweep's goroutine.
	Progress func(soFar KindSweep)
}

// KindSweep is what a sweep removed (or would remove) under one policy.
type KindSweep struct {
	// Kind is the policy.
	Kind PolicyKind `json:"kind"`
	// Sessions counts the sessions removed (for PolicyMessagesKeepLast,
	// the conversations trimmed; for PolicyReservationsClosed, the
	// reservations; for PolicyOrphanState, the apps and (app, user)
	// pairs whose state went).
	Sessions int64 `json:"sessions"`
	// Rows counts every database row removed, the sessions' own rows
	// included.
	Rows int64 `json:"rows"`
	// Held counts the sessions due under this policy that a hold kept.
	Held int64 `json:"held"`
}

// FacetSweep is what a sweep did in one facet.
type FacetSweep struct {
	// Facet is the facet's name in the registry.
	Facet string `json:"facet"`
	// Kinds are the facet's policies that were set, in PolicyKinds order.
	Kinds []KindSweep `json:"kinds"`
	// Note says why the facet has no policy, when it has none.
	Note string `json:"note,omitempty"`
}

// SweepReport is the outcome of one sweep.
type SweepReport struct {
	// DryRun is set when nothing was changed.
	DryRun bool `json:"dry_run"`
	// StartedAt and FinishedAt bound the sweep (the store's clock).
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Facets holds one entry per facet of the registry, in its order.
	Facets []FacetSweep `json:"facets"`
	// Budget is what the size budget removed (Kind PolicySizeBudget), nil
	// without one.
	Budget *KindSweep `json:"budget,omitempty"`
	// Batches counts the write transactions the sweep ran.
	Batches int `json:"batches"`
	// SizeBefore and SizeAfter are the bytes the store's data used
	// before and after (SQLite: pages in use; PostgreSQL: an estimate
	// from the relation sizes).
	SizeBefore int64 `json:"size_before"`
	SizeAfter  int64 `json:"size_after"`
	// BytesFreed is the space given back to the file system (SQLite's
	// incremental vacuum; 0 on a database not in incremental auto-vacuum
	// mode, and on PostgreSQL).
	BytesFreed int64 `json:"bytes_freed"`
	// Reclaimable is the space still free inside the database after the
	// sweep (SQLite: free pages; PostgreSQL: an estimate of what a VACUUM
	// would reclaim).
	Reclaimable int64 `json:"reclaimable"`
}

// Kind returns the report of kind, and whether the sweep applied it.
func (r SweepReport) Kind(kind PolicyKind) (KindSweep, bool) {
	if kind == PolicySizeBudget {
		if r.Budget == nil {
			return KindSweep{}, false
		}
		return *r.Budget, true
	}
	for _, f := range r.Facets {
		for _, k := range f.Kinds {
			if k.Kind == kind {
				return k, true
			}
		}
	}
	return KindSweep{}, false
}

// Total returns the sessions and rows the sweep removed, over every
// policy.
func (r SweepReport) Total() (sessions, rows int64) {
	for _, f := range r.Facets {
		for _, k := range f.Kinds {
			sessions += k.Sessions
			rows += k.Rows
		}
	}
	if r.Budget != nil {
		sessions += r.Budget.Sessions
		rows += r.Budget.Rows
	}
	return sessions, rows
}

// SweepRecord is one sweep of the log.
type SweepRecord struct {
	// ID orders the log.
	ID int64 `json:"id"`
	// Holder names the sweeper.
	Holder string `json:"holder"`
	// Report is what the sweep did (up to its error, if any).
	Report SweepReport `json:"report"`
	// Error is the error that ended the sweep early, "" if none.
	Error string `json:"error,omitempty"`
}

// ErrLeaseHeld is returned by TakeLease when another sweeper holds the
// lease.
var ErrLeaseHeld = errors.New("store: the sweep lease is held by another sweeper")

// LeaseHeldError details ErrLeaseHeld.
type LeaseHeldError struct {
	// Holder is the current holder; Expires is when its lease ends.
	Holder  string
	Expires time.Time
}

func (e *LeaseHeldError) Error() string { return ErrLeaseHeld.Error() }

// Unwrap returns ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Retention is the lifecycle of the store: retention policies stored in
// the database, holds, sweeps and the lease of the background sweeper.
type Retention interface {
	// SetPolicy stores p (replacing the policy of its kind) so that
	// every process sees it.
	SetPolicy(ctx context.Context, p Policy) error
	// RemovePolicy removes the policy of kind; it reports whether there
	// was one.
	RemovePolicy(ctx context.Context, kind PolicyKind) (bool, error)
	// Policies returns the stored policies, in PolicyKinds order.
	Policies(ctx context.Context) ([]Policy, error)

	// Hold keeps the session ref names (which need not exist yet)
	// whatever the policies say, until Release. Holding a held session
	// again replaces its reason. A hold belongs to the tenant it is
	// placed through (the default tenant on a Store, a tenant through its
	// TenantStore) and protects that tenant's session only.
	Hold(ctx context.Context, ref SessionRef, reason string) error
	// Release removes the tenant's hold on ref; it reports whether there
	// was one.
	Release(ctx context.Context, ref SessionRef) (bool, error)
	// Holds returns the holds of the tenant (the default tenant's on a
	// Store; see TenantStore.Retention), ordered by facet and key.
	Holds(ctx context.Context) ([]Hold, error)

	// Accessed records a read of a conversation or agent session: its
	// last-access time moves to now (never back), its update time does
	// not. Only policies with ReadsCount look at it. A missing session is
	// ErrNotFound.
	Accessed(ctx context.Context, ref SessionRef) error

	// Sweep applies the policies: it removes what is due in bounded
	// batches of short write transactions, each removing whole sessions,
	// and reports what it removed per facet. Real sweeps are logged
	// (Sweeps). Sweeps of several processes may run at once: each
	// record is removed by one of them, and their counts add up.
	Sweep(ctx context.Context, opts SweepOptions) (SweepReport, error)
	// Sweeps returns the last limit sweeps of the log, newest first.
	Sweeps(ctx context.Context, limit int) ([]SweepRecord, error)

	// TakeLease takes or renews the sweep lease for holder until now+ttl.
	// A lease whose holder did not renew it in time is taken over. It is
	// ErrLeaseHeld (a *LeaseHeldError) when another holder's lease runs.
	TakeLease(ctx context.Context, holder string, ttl time.Duration) error
	// DropLease gives the lease up if holder holds it.
	DropLease(ctx context.Context, holder string) error
}

// SweeperConfig configures a background sweeper (see a backend's WithSweeper option).
type SweeperConfig struct {
	// Interval is the time between two sweeps (real time).
	Interval time.Duration
	// Holder names the sweeper in the lease and the log; "" picks a
	// random name.
	Holder string
	// LeaseTTL is how long the lease lasts without renewal, on the
	// store's clock (0: twice Interval, at least one minute). A sweeper
	// renews it before each sweep; another sweeper takes it over once it
	// has run out.
	LeaseTTL time.Duration
	// Options are the options of each sweep (DryRun is ignored).
	Options SweepOptions
	// OnSweep, when set, is called after each attempt: with the report of
	// a sweep, or with the error that stopped it (ErrLeaseHeld when
	// another sweeper holds the lease).
	OnSweep func(SweepReport, error)
}
