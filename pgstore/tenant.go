package pgstore

import (
	"context"
	"iter"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Tenanter = (*Store)(nil)

// tenantSQL sets the tenant of a transaction (as SET LOCAL does): the
// default of every tenant column and what the row-level security policies
// of migration 17 compare rows with.
const tenantSQL = `SELECT set_config('sessionstore.tenant', ?, true)`

// Tenant returns the handle on the rows of tenant name (see
// store.TenantStore): its facets see only that tenant's rows, and the
// rows they write belong to it. A name that store.ValidateTenant refuses,
// also "", is store.ErrInvalidInput.
//
// The handle sets the tenant in every transaction it runs
// (set_config('sessionstore.tenant', name, true), as SET LOCAL does), so
// the rows it inserts take the tenant from their columns' default and a
// store connected as a role subject to the row-level security policies of
// migration 17 (a role granted the tables that does not own them) sees
// only the tenant's rows. The role that owns the tables is not subject to
// the policies and keeps full access for maintenance.
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
