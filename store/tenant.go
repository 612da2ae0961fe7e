package store

import (
	"context"
	"iter"
)

// MaxTenantLength is the longest tenant name, in bytes.
const MaxTenantLength = 64

// ValidateTenant checks a tenant name: 1 to MaxTenantLength bytes of ASCII
// letters, digits and the punctuation _ - . that begins with a letter or a
// digit. The empty name is the default tenant, which no tenant handle
// addresses, so it is refused here (ErrInvalidInput) like a malformed one.
func ValidateTenant(name string) error {
	switch {
	case name == "":
		return Invalid("tenant", "must not be empty")
	case len(name) > MaxTenantLength:
		return Invalid("tenant", "too long")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			return Invalid("tenant", "must be letters, digits and _ - . beginning with a letter or digit")
		}
	}
	return nil
}

// TenantStore is a handle on the rows of one tenant of a Store. Every method
// of every facet it returns reads and writes only that tenant's rows: keys
// are unique per tenant (another tenant's session under the same key is
// neither found nor a conflict), lists and pages hold only the tenant's
// rows, and rows written through it belong to it. The rows of the default
// tenant (written by the Store itself) are never visible through a
// TenantStore.
//
// A TenantStore shares its Store's connections: it needs no Close, and it
// fails with ErrStoreClosed once the Store is closed.
//
// Conversation ids (like runtime session and upload ids) are global: they
// are the primary keys of their tables, not unique per tenant. Through a
// handle, another tenant's conversation is ErrNotFound (never its data),
// and creating a conversation (Save, Fork) under an id another tenant
// holds fails with ErrConflict, which tells only that the id is taken:
// use random ids (Fork's default) where tenants must not learn each
// other's ids.
//
// The facets reachable here are the ones scoped so far; the others are
// reached through the Store only (default tenant). The Store's own facets
// of those scoped read and write the default tenant's rows only.
type TenantStore interface {
	// Tenant returns the tenant's name.
	Tenant() string

	// AgentSessions returns the agent-session facet of the tenant.
	AgentSessions() AgentSessions

	// Governance returns the governed-session facet of the tenant. Its
	// ids are global primary keys: another tenant's session is
	// ErrNotFound through it, but a Create with an id another tenant
	// holds fails with ErrConflict (let Create choose a random id). The
	// per-agent cap (CreateRequest.MaxActivePerAgent) counts the tenant's
	// own sessions of the agent.
	Governance() Governance

	// Spend returns the spend facet of the tenant: the limits of its
	// agents (per tenant: another tenant's agent of the same name has
	// limits of its own) and of its sessions, and their reservations.
	Spend() Spend

	// Audit returns the audit trail of the tenant: the chains of its
	// governed sessions and of its agents (an agent's chain is per tenant
	// and agent). Verify, Heads, List, Checkpoint, Prune and Restore see
	// the tenant's chains only.
	Audit() Audit

	// Events follows the event log of one of the tenant's agent sessions
	// as it commits, as Feed.Events does.
	Events(ctx context.Context, req EventFeed) iter.Seq2[Batch[AgentEvent], error]

	// Conversations returns the conversation facet of the tenant: its
	// conversations and everything they hold (messages, usage and cost,
	// artifacts, traces, runs and run events, reports, forks, rewinds,
	// compactions and the retired histories they keep).
	Conversations() Conversations

	// Runtime returns the runtime facet of the tenant: its runtime
	// sessions (model overrides, workspace and owner), their uploads,
	// turns and cancel causes, and the history of the conversation of the
	// same id. Count counts the tenant's sessions; the cap on sessions
	// (the backends' MaxSessions option) is store-wide. Runtime session
	// and upload ids are global, like conversation ids (see above).
	Runtime() Runtime

	// Search finds the tenant's items by their text, as Searcher.Search
	// does: messages, traces, artifacts and runs of its conversations and
	// events of its agent sessions.
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)

	// History returns a user's agent events across the tenant's sessions,
	// as Searcher.History does.
	History(ctx context.Context, req HistoryRequest) (Page[HistoryItem], error)

	// Feed returns the change feed of the tenant: the streams of its
	// conversations (messages, traces, run events) and of its agent
	// sessions (events). Governed sessions are not tenant-scoped yet: the
	// GovernedSession stream of a tenant's feed fails.
	Feed() Feed

	// Retention returns the lifecycle facet of the tenant. Holds are the
	// tenant's: Hold, Release and Holds place, remove and list its own
	// holds only (a hold names a session as the store does; two tenants
	// may hold the same key, each its own session), and a tenant's hold
	// protects only the tenant's own session from the store's sweeps (an
	// id of another tenant may be held, which protects nothing and tells
	// nothing). Accessed records a read of the tenant's own conversation or
	// agent session; another tenant's is ErrNotFound, as elsewhere.
	// Policies returns the store's policies, which apply to every tenant's
	// sessions. Policies, sweeps, their log and their lease are the
	// operator's: they apply to, and count, every tenant's rows, so
	// SetPolicy, RemovePolicy, Sweep (also a dry run), Sweeps, TakeLease
	// and DropLease fail with ErrInvalidInput (field "tenant") and change
	// nothing. The store's own sweep removes every tenant's due sessions
	// and honours every tenant's holds.
	Retention() Retention

	// Totals computes the aggregates of the tenant's governed sessions and
	// conversations, as Totaler.Totals does for a whole store: another
	// tenant's rows (and the default tenant's) are never counted.
	Totals(ctx context.Context, req TotalsRequest) (Totals, error)

	// Counts counts the tenant's items of every facet, as Counter.Counts
	// does for a whole store: another tenant's rows (and the default
	// tenant's) are never counted. The audit trail's decisions by day are
	// the tenant's Audit facet's (AuditCounter).
	Counts(ctx context.Context) (Counts, error)

	// Backend names the implementation, as Store.Backend does.
	Backend() string
}

// Tenanter is implemented by a Store whose rows can belong to tenants
// (both backends of this module).
type Tenanter interface {
	// Tenant returns the handle on the rows of tenant name; a name that
	// ValidateTenant refuses (also "") is ErrInvalidInput.
	Tenant(name string) (TenantStore, error)

	// Tenants returns the tenants other than the default that own agent
	// sessions or app or user state, governed sessions, agent audit
	// chains, agent spend limits, conversations or runtime sessions, in
	// byte order: what a maintenance walk of the Store itself (the
	// default tenant) does not see.
	Tenants(ctx context.Context) ([]string, error)
}

// TenantRecordWriter is implemented by a RecordWriter (of both backends of
// this module) that can write the records of a tenant in the same
// transaction: an import restores each tenant's records to its tenant.
type TenantRecordWriter interface {
	// ForTenant returns the writer of tenant's records; a name that
	// ValidateTenant refuses (also "") is ErrInvalidInput. The records of
	// the default tenant are written before any tenant's.
	ForTenant(tenant string) (RecordWriter, error)
}

// TenantView is a Store seen through one of its tenants, for code written
// against Store (or Searcher's Search and History, Counter, Totaler) that
// should read and write one tenant's rows only: its facets (agent
// sessions, governance, spend, audit, conversations, runtime, retention),
// its change feed, search, history, counts and totals are Tenant's, with
// the guarantees and limits TenantStore documents. What has no tenant
// scope is the whole Store's: the schema version, the health check,
// snapshots (a snapshot reads every tenant's rows), Backend and Close.
type TenantView struct {
	// Store is the whole store; Tenant is one of its tenants
	// (Tenanter.Tenant).
	Store
	Tenant TenantStore
}

// AgentSessions returns the tenant's agent-session facet.
func (v TenantView) AgentSessions() AgentSessions { return v.Tenant.AgentSessions() }

// Governance returns the tenant's governed-session facet.
func (v TenantView) Governance() Governance { return v.Tenant.Governance() }

// Spend returns the tenant's spend facet.
func (v TenantView) Spend() Spend { return v.Tenant.Spend() }

// Audit returns the tenant's audit trail.
func (v TenantView) Audit() Audit { return v.Tenant.Audit() }

// Conversations returns the tenant's conversation facet.
func (v TenantView) Conversations() Conversations { return v.Tenant.Conversations() }

// Runtime returns the tenant's runtime facet.
func (v TenantView) Runtime() Runtime { return v.Tenant.Runtime() }

// Retention returns the tenant's lifecycle facet (its own holds).
func (v TenantView) Retention() Retention { return v.Tenant.Retention() }

// Feed returns the tenant's change feed.
func (v TenantView) Feed() Feed { return v.Tenant.Feed() }

// Search finds the tenant's items by their text.
func (v TenantView) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	return v.Tenant.Search(ctx, q)
}

// History returns a user's agent events across the tenant's sessions.
func (v TenantView) History(ctx context.Context, req HistoryRequest) (Page[HistoryItem], error) {
	return v.Tenant.History(ctx, req)
}

// Counts counts the tenant's items of every facet.
func (v TenantView) Counts(ctx context.Context) (Counts, error) { return v.Tenant.Counts(ctx) }

// Totals computes the aggregates of the tenant's governed sessions and
// conversations.
func (v TenantView) Totals(ctx context.Context, req TotalsRequest) (Totals, error) {
	return v.Tenant.Totals(ctx, req)
}

var (
	_ Store   = TenantView{}
	_ Counter = TenantView{}
	_ Totaler = TenantView{}
)
