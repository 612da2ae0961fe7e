package sqlstore

import (
	"context"

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
	return s.core.NewTenantHandle(name, s.Backend(), func(core *sqlcore.Store) store.Governance {
		return &Governance{s: s, core: core}
	}, s.closed.Load), nil
}

// Tenants returns the tenants other than the default that own rows, in
// byte order (see store.Tenanter).
func (s *Store) Tenants(ctx context.Context) ([]string, error) { return s.core.Tenants(ctx) }
