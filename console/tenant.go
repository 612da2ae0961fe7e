package console

import (
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// The console of one tenant (Options.Tenant). The console serves the
// pages of the facets the library's tenant handle scopes — agent sessions,
// conversations, runtime sessions (with their uploads), governed sessions
// (with their spend) and the audit trail — through it, and the overview
// and /metrics counted over the tenant's rows (the handle's Totals, its
// runtime counts, use records and audit decisions); the overview names
// the tenant, search (the handle's Search: the tenant's items only) and
// the go-to box (which looks an id up in those facets). Nothing that would
// show rows of other tenants, or figures of the whole database, is
// served: no export, retention or live updates, and no database sizes
// (the overview and /metrics show none in any console).

// tenantFacets are the facets whose pages a tenant's console serves, in
// the order of its navigation.
var tenantFacets = []facet.Name{facet.AgentSessions, facet.Conversations, facet.Runtime, facet.Governance, facet.Audit}

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
	c.st = store.TenantView{Store: c.st, Tenant: ts}
	c.search = ts.Search
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
	views := c.facetViews()
	for _, name := range tenantFacets {
		for _, rt := range views[name].Routes {
			if strings.HasPrefix(rt.Pattern, "/live/") {
				continue // no live mode (c.refresh < 0)
			}
			handle(rt.Pattern, rt.Handler)
		}
	}
	handle("/{$}", c.overview)
	handle("/search", c.searchPage)
	handle("/go", c.goTo)
	m.HandleFunc("GET "+p+"/healthz", c.healthz)
	m.Handle("GET "+p+"/metrics", c.metrics)
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
