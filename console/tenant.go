package console

import (
	"fmt"
	"io/fs"
	"net/http"

	"github.com/agentstore/sessionstore/store"
)

// The console of one tenant (Options.Tenant). The library's tenant handle
// scopes the agent-session, governance, spend and audit facets so far, so
// the console serves those facets' pages through it (agent sessions,
// governed sessions with their spend, the audit trail), and nothing that
// would show rows of other tenants: no other facet, no overview counts,
// search, export, retention or metrics, and no live updates (the change
// feed is not tenant-scoped yet). The root redirects to the agent
// sessions.

// tenantStore is a store whose agent-session facet is a tenant's.
type tenantStore struct {
	store.Store
	ts store.TenantStore
}

func (t tenantStore) AgentSessions() store.AgentSessions { return t.ts.AgentSessions() }
func (t tenantStore) Governance() store.Governance       { return t.ts.Governance() }
func (t tenantStore) Spend() store.Spend                 { return t.ts.Spend() }
func (t tenantStore) Audit() store.Audit                 { return t.ts.Audit() }

// scopeToTenant switches c to the pages of tenant name.
func (c *console) scopeToTenant(name string) error {
	tr, ok := c.st.(store.Tenanter)
	if !ok {
		return fmt.Errorf("console: %w: a %s store has no tenants", store.ErrInvalidInput, c.st.Backend())
	}
	ts, err := tr.Tenant(name)
	if err != nil {
		return fmt.Errorf("console: tenant: %w", err)
	}
	c.st = tenantStore{Store: c.st, ts: ts}
	c.tenant = true
	c.refresh = -1 // no live mode: its feed is not tenant-scoped
	return nil
}

// tenantRoutes registers the pages of a tenant's console.
func (c *console) tenantRoutes() {
	m := http.NewServeMux()
	p := c.prefix
	handle := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		m.HandleFunc("GET "+p+pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				c.fail(w, r, err)
			}
		})
	}
	handle("/agents", c.agentList)
	handle("/agents/session", c.agentDetail)
	handle("/governed", c.governedList)
	handle("/governed/{id}", c.governedDetail)
	handle("/audit", c.auditPage)
	m.HandleFunc("GET "+p+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, p+"/agents", http.StatusFound)
	})
	m.HandleFunc("GET "+p+"/healthz", c.healthz)
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", staticHandler(http.FileServerFS(static))))
	if p != "" {
		m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusMovedPermanently)
		})
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, errPageNotFound)
	})
	c.mux = m
}
