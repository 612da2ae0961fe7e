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
// On SQLite, a session's events, session state and state log are written
// with the handle's tenant by every INSERT (the session was found under
// it); its search documents and a tenant conversation's child rows take
// the tenant from their parent row through triggers (migrations 17, 18).
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
