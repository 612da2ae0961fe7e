package pgstore

import (
	"context"

	"github.com/agentstore/sessionstore/internal/sqlcore"
	"github.com/agentstore/sessionstore/store"
)

var _ store.Tenanter = (*Store)(nil)

// tenantSQL sets the tenant of a transaction (as SET LOCAL does): the
// default of every tenant column and what the row-level security policies
// of migration 17 compare rows with.
const tenantSQL = `SELECT set_config('sessionstore.tenant', ?, true)`

// bypassRLSSQL reports whether the session's role is subject to none of
// the row-level security policies of the store's schema: a superuser or
// BYPASSRLS role, or the owner of every table that has policies (and
// does not force them on its owner).
const bypassRLSSQL = `SELECT r.rolsuper OR r.rolbypassrls OR NOT EXISTS (
		SELECT 1 FROM pg_class c
		WHERE c.relnamespace = to_regnamespace(current_schema())
		  AND c.relkind = 'r' AND c.relrowsecurity
		  AND (c.relowner <> r.oid OR c.relforcerowsecurity))
	FROM pg_roles r WHERE r.rolname = current_user`

// bypassesRLS reports whether the store's connections bypass row-level
// security: then a tenant handle's reads, which name the tenant in their
// statements anyway, need no transaction that sets the tenant first.
func (s *Store) bypassesRLS(ctx context.Context) (bool, error) {
	var bypass bool
	if err := s.pool.QueryRow(ctx, bypassRLSSQL).Scan(&bypass); err != nil {
		return false, mapErr(err)
	}
	return bypass, nil
}

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
// only the tenant's rows. A store whose role bypasses the policies
// (bypassesRLS) reads without setting it: its statements name the tenant. The role that owns the tables is not subject to
// the policies and keeps full access for maintenance.
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
