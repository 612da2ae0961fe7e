package sqlstore

import (
	"context"
	"iter"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Tenanter = (*Store)(nil)

// Tenant returns the handle on the rows of tenant name (see
// store.TenantStore): its facets see only that tenant's rows, and the
// rows they write belong to it. A name that store.ValidateTenant refuses,
// also "", is store.ErrInvalidInput.
//
// On SQLite, the rows of a tenant's session that the handle does not name
// (events, session state, its state log and search documents) take the
// tenant from the session row through triggers (migration 17).
func (s *Store) Tenant(name string) (store.TenantStore, error) {
	if err := store.ValidateTenant(name); err != nil {
		return nil, err
	}
	return &tenantStore{s: s, name: name, core: s.core.WithTenant(name)}, nil
}

// Tenants returns the tenants other than the default that own agent
// sessions or app or user state, in byte order (see store.Tenanter).
func (s *Store) Tenants(ctx context.Context) ([]string, error) { return s.core.Tenants(ctx) }

// tenantStore is the handle Tenant returns.
type tenantStore struct {
	s    *Store
	name string
	core *sqlcore.Store // s.core scoped to the tenant
}

func (t *tenantStore) Tenant() string  { return t.name }
func (t *tenantStore) Backend() string { return t.s.Backend() }

func (t *tenantStore) AgentSessions() store.AgentSessions {
	return t.core.AgentSessions()
}

func (t *tenantStore) Governance() store.Governance { return &Governance{s: t.s, core: t.core} }
func (t *tenantStore) Spend() store.Spend           { return t.core.Spend() }
func (t *tenantStore) Audit() store.Audit           { return t.core.Audit() }

func (t *tenantStore) Events(ctx context.Context, req store.EventFeed) iter.Seq2[store.Batch[store.AgentEvent], error] {
	return t.core.Feed(nil).Events(ctx, req)
}

func (t *tenantStore) Conversations() store.Conversations { return t.core.Conversations() }

// Feed is the tenant's change feed; it has no governed-session reader
// (governed sessions are not tenant-scoped yet), so that stream fails.
func (t *tenantStore) Feed() store.Feed { return t.core.Feed(nil) }

func (t *tenantStore) Runtime() store.Runtime { return t.core.Runtime() }

func (t *tenantStore) Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	if t.s.closed.Load() {
		return store.SearchResult{}, store.ErrStoreClosed
	}
	return t.core.Search(ctx, q)
}

func (t *tenantStore) History(ctx context.Context, req store.HistoryRequest) (store.Page[store.HistoryItem], error) {
	if t.s.closed.Load() {
		return store.Page[store.HistoryItem]{}, store.ErrStoreClosed
	}
	return t.core.History(ctx, req)
}
