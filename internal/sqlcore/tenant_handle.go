package sqlcore

import (
	"context"
	"iter"

	"github.com/agentstore/sessionstore/store"
)

// TenantHandle is the store.TenantStore both backends return: the facets
// of a Store scoped to one tenant (WithTenant), plus the backend's own
// governed-session facet over the same scoped core.
type TenantHandle struct {
	name    string
	backend string
	core    *Store // scoped to the tenant
	gov     store.Governance
	closed  func() bool
}

var _ store.TenantStore = (*TenantHandle)(nil)

// NewTenantHandle returns the handle on tenant name of s, which the
// caller validated (store.ValidateTenant). governance builds the
// backend's governed-session facet over the scoped core; closed reports
// whether the backend's store is closed (Search and History check it, as
// the backend's own do).
func (s *Store) NewTenantHandle(name, backend string, governance func(core *Store) store.Governance, closed func() bool) *TenantHandle {
	core := s.WithTenant(name)
	return &TenantHandle{name: name, backend: backend, core: core, gov: governance(core), closed: closed}
}

// Tenant returns the tenant's name.
func (t *TenantHandle) Tenant() string { return t.name }

// Backend names the implementation.
func (t *TenantHandle) Backend() string { return t.backend }

// AgentSessions returns the tenant's agent-session facet.
func (t *TenantHandle) AgentSessions() store.AgentSessions { return t.core.AgentSessions() }

// Governance returns the tenant's governed-session facet.
func (t *TenantHandle) Governance() store.Governance { return t.gov }

// Spend returns the tenant's spend facet.
func (t *TenantHandle) Spend() store.Spend { return t.core.Spend() }

// Audit returns the tenant's audit trail.
func (t *TenantHandle) Audit() store.Audit { return t.core.Audit() }

// Conversations returns the tenant's conversation facet.
func (t *TenantHandle) Conversations() store.Conversations { return t.core.Conversations() }

// Runtime returns the tenant's runtime facet.
func (t *TenantHandle) Runtime() store.Runtime { return t.core.Runtime() }

// Events follows the event log of one of the tenant's agent sessions.
func (t *TenantHandle) Events(ctx context.Context, req store.EventFeed) iter.Seq2[store.Batch[store.AgentEvent], error] {
	return t.core.Feed(nil).Events(ctx, req)
}

// Feed is the tenant's change feed; it has no governed-session reader
// (the governed stream is not tenant-scoped), so that stream fails.
func (t *TenantHandle) Feed() store.Feed { return t.core.Feed(nil) }

// Search searches the tenant's documents.
func (t *TenantHandle) Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	if t.closed() {
		return store.SearchResult{}, store.ErrStoreClosed
	}
	return t.core.Search(ctx, q)
}

// History reads the tenant's cross-session history.
func (t *TenantHandle) History(ctx context.Context, req store.HistoryRequest) (store.Page[store.HistoryItem], error) {
	if t.closed() {
		return store.Page[store.HistoryItem]{}, store.ErrStoreClosed
	}
	return t.core.History(ctx, req)
}

// Retention returns the tenant's lifecycle facet: its holds and its
// reads (Accessed); Policies reads the store's policies; the operator's
// methods fail (see store.TenantStore.Retention).
func (t *TenantHandle) Retention() store.Retention { return t.core.Retention() }

// Totals computes the aggregates of the tenant's rows.
func (t *TenantHandle) Totals(ctx context.Context, req store.TotalsRequest) (store.Totals, error) {
	if t.closed() {
		return store.Totals{}, store.ErrStoreClosed
	}
	return t.core.Totals(ctx, req)
}

// Counts counts the tenant's items of every facet.
func (t *TenantHandle) Counts(ctx context.Context) (store.Counts, error) {
	if t.closed() {
		return store.Counts{}, store.ErrStoreClosed
	}
	return t.core.Counts(ctx)
}
