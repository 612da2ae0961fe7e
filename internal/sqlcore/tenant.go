package sqlcore

import "context"

// WithTenant returns a Store over the same database whose facets read and
// write only the rows of tenant: every key it looks up, every list it
// pages and every row it inserts names the tenant. It shares s's turns,
// change feeds and caches; closing s closes it. tenant must be valid
// (store.ValidateTenant): "" is the default tenant, s itself.
//
// So far the agent-session facet is scoped (events.go, scopes.go,
// branches.go, lineage.go); the backends expose only scoped facets through
// their tenant handles (store.TenantStore).
func (s *Store) WithTenant(tenant string) *Store {
	t := *s
	t.tenant = tenant
	if tenant != "" && s.cfg.TenantSQL != "" {
		t.db = tenantDB{DB: s.db, set: s.cfg.TenantSQL, tenant: tenant, bypass: s.rlsBypass}
	}
	return &t
}

// SetRLSBypass tells the Store whether its connections' role bypasses
// row-level security (PostgreSQL: the tables' owner, a superuser or a
// BYPASSRLS role). Then a tenant Store's reads, which name the tenant in
// their statements anyway, run without a transaction that sets the
// tenant first (three round trips fewer for a single-statement read);
// writes still set it (the tenant columns' default). Call it before the
// Store is used, with what the backend found at open.
func (s *Store) SetRLSBypass(bypass bool) { s.rlsBypass = bypass }

// Tenant returns the tenant whose rows the Store reads and writes ("" for
// the default tenant).
func (s *Store) Tenant() string { return s.tenant }

// tenantDB runs every statement of a tenant's Store in a transaction that
// first sets the tenant (Config.TenantSQL): on PostgreSQL, the setting the
// tenant columns take as their default and the row-level security policies
// compare rows with. Single-statement reads run in a read transaction of
// their own, so that a store connected as a role subject to the policies
// sees the tenant's rows.
type tenantDB struct {
	DB
	set    string
	tenant string
	bypass bool // reads need no setting (SetRLSBypass)
}

func (d tenantDB) Write(ctx context.Context, fn func(tx Tx) error) error {
	return d.DB.Write(ctx, func(tx Tx) error {
		if _, err := tx.Exec(d.set, d.tenant); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (d tenantDB) Read(ctx context.Context, fn func(tx Tx) error) error {
	if d.bypass {
		return d.DB.Read(ctx, fn)
	}
	return d.DB.Read(ctx, func(tx Tx) error {
		if _, err := tx.Exec(d.set, d.tenant); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (d tenantDB) Get(ctx context.Context, dest any, query string, args ...any) error {
	if d.bypass {
		return d.DB.Get(ctx, dest, query, args...)
	}
	return d.Read(ctx, func(tx Tx) error { return tx.Get(dest, query, args...) })
}

func (d tenantDB) Select(ctx context.Context, dest any, query string, args ...any) error {
	if d.bypass {
		return d.DB.Select(ctx, dest, query, args...)
	}
	return d.Read(ctx, func(tx Tx) error { return tx.Select(dest, query, args...) })
}

func (d tenantDB) Scan(ctx context.Context, query string, args []any, dest ...any) error {
	if d.bypass {
		return d.DB.Scan(ctx, query, args, dest...)
	}
	return d.Read(ctx, func(tx Tx) error { return tx.Scan(query, args, dest...) })
}

func (d tenantDB) Query(ctx context.Context, query string, args []any, fn func(Rows) error) error {
	if d.bypass {
		return d.DB.Query(ctx, query, args, fn)
	}
	return d.Read(ctx, func(tx Tx) error { return tx.Query(query, args, fn) })
}

// tenantsSQL lists the tenants other than the default that own agent
// sessions or app or user state, governed sessions, agent audit chains,
// agent spend limits, conversations or runtime sessions (each walk is an index range: the key index of live
// sessions, the state tables' and audit_heads' primary keys, the agent
// index of governed sessions and the agent limits' key lead with the
// tenant). A tenant's spend reservations and session chains belong to its
// governed sessions.
const tenantsSQL = `SELECT tenant FROM agent_sessions WHERE tenant <> '' AND retired = 0
	UNION SELECT tenant FROM agent_app_state WHERE tenant <> ''
	UNION SELECT tenant FROM agent_user_state WHERE tenant <> ''
	UNION SELECT tenant FROM governed_sessions WHERE tenant <> ''
	UNION SELECT tenant FROM audit_heads WHERE tenant <> ''
	UNION SELECT tenant FROM spend_limits WHERE tenant <> '' AND session_id IS NULL
	UNION SELECT tenant FROM conversations WHERE tenant <> '' AND tenant <> '_removing'
	UNION SELECT tenant FROM runtime_sessions WHERE tenant <> ''
	ORDER BY 1`

// Tenants returns the tenants other than the default that own rows (see
// store.Tenanter).
func (s *Store) Tenants(ctx context.Context) ([]string, error) {
	var out []string
	if err := s.selectRows(ctx, &out, tenantsSQL); err != nil {
		return nil, err
	}
	return out, nil
}
