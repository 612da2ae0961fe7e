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
	// as it commits, as Feed.Events does (the other streams of the change
	// feed are not tenant-scoped yet).
	Events(ctx context.Context, req EventFeed) iter.Seq2[Batch[AgentEvent], error]

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
	// chains or agent spend limits, in byte order: what a maintenance
	// walk of the Store itself (the default tenant) does not see.
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
