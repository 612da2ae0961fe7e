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
