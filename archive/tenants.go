package archive

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/store"
)

// Tenants in the document (version 6). The top-level sections hold the
// rows of one tenant: the default tenant's, or, when the document's head
// names a "tenant" (an export of ExportOptions.Tenant), that tenant's. A
// whole export of a store with tenants then lists every other tenant in
// "tenants", last: an array of objects, each the tenant's name ("tenant",
// first) followed by its sections under the same keys as the top level.
//
// Per-tenant sections rather than a tenant field on every record: every
// section's writer and reader stays as it is (each runs against the
// tenant's facets, or writes through the tenant's record writer), a
// record reads the same in every version, and an import switches tenants
// once per tenant rather than once per record. The tenants come last so
// that, where the tenant columns take their default from a setting of the
// transaction (PostgreSQL), the default tenant's records are all written
// before the first tenant's.
//
// Only the facets scoped by tenant handles have sections in a tenant's
// part (tenantFacets); a tenant's part that holds another facet's section
// is refused.

// tenantFacets are the facets a tenant's part of the document holds: the
// ones a store.TenantStore offers.
var tenantFacets = []facet.Name{facet.Governance, facet.Runtime, facet.Conversations, facet.AgentSessions, facet.Audit}

// tenantScoped reports whether the facet of f has sections in a tenant's
// part of the document.
func tenantScoped(f registered) bool { return slices.Contains(tenantFacets, f.Name) }

// tenantOf returns the view of st for tenant.
func tenantOf(st store.Store, tenant string) (store.Store, error) {
	tr, ok := st.(store.Tenanter)
	if !ok {
		return nil, store.Invalid("tenant", fmt.Sprintf("a %s store has no tenants", st.Backend()))
	}
	ts, err := tr.Tenant(tenant)
	if err != nil {
		return nil, err
	}
	return store.TenantView{Store: st, Tenant: ts}, nil
}

// writeSections writes the sections of all that the tenant filter keeps
// (every facet for the default tenant, the tenant-scoped ones for a
// tenant).
func (x *exporter) writeSections(ctx context.Context, all []registered, tenant bool) error {
	for _, f := range all {
		if tenant && !tenantScoped(f) {
			continue
		}
		x.section, x.done = f.Title, x.counts.at(f.Name)
		x.report()
		if err := f.export(ctx, x); err != nil {
			return fmt.Errorf("%s: %w", f.Title, err)
		}
		if x.out.err != nil {
			return x.out.err
		}
	}
	return nil
}

// writeTenants writes the "tenants" part: every tenant of the store but
// the default, each from its own view.
func (x *exporter) writeTenants(ctx context.Context, all []registered) error {
	tr, ok := x.st.(store.Tenanter)
	if !ok {
		return nil
	}
	tenants, err := tr.Tenants(ctx)
	if err != nil || len(tenants) == 0 {
		return err
	}
	def := x.st
	defer func() { x.st = def }()
	x.out.open("tenants", '[')
	for _, name := range tenants {
		view, err := tenantOf(def, name)
		if err != nil {
			return err
		}
		x.st = view
		x.out.open("", '{')
		x.out.value("tenant", name)
		if err := x.writeSections(ctx, all, true); err != nil {
			return fmt.Errorf("tenant %s: %w", name, err)
		}
		x.out.close('}')
	}
	x.out.close(']')
	return x.out.err
}

// forTenant switches the importer to tenant's records: its writer (none
// in a dry run, where the name is only checked).
func (x *importer) forTenant(tenant string) error {
	if err := store.ValidateTenant(tenant); err != nil {
		return err
	}
	x.tenant = tenant
	if x.w == nil {
		return nil
	}
	tw, ok := x.w.(store.TenantRecordWriter)
	if !ok {
		return store.Invalid("tenant", "the store cannot restore tenants' records")
	}
	w, err := tw.ForTenant(tenant)
	if err != nil {
		return err
	}
	x.w = w
	return nil
}

// restoreTenants reads the "tenants" part of a document of the given
// version: each tenant's sections, restored to that tenant.
func restoreTenants(ctx context.Context, x *importer, all []registered, in *jsonIn, version int) error {
	if version < 6 {
		return store.Invalid("file", fmt.Sprintf("unknown field %q (tenants came with version 6)", "tenants"))
	}
	if x.into != "" {
		return store.Invalid("tenant", "the document holds several tenants' rows: export one tenant (export --tenant) to import it into a tenant")
	}
	if x.tenant != "" {
		return store.Invalid("file", "a document of one tenant has no tenants part")
	}
	seen := map[string]bool{}
	return in.array(func(i int) error {
		if _, err := in.delim('{', false); err != nil {
			return err
		}
		k, more, err := in.key()
		if err != nil {
			return err
		}
		if !more || k != "tenant" {
			return store.Invalid(fmt.Sprintf("tenants[%d]", i), "must begin with the tenant's name (\"tenant\")")
		}
		var name string
		if err := in.decode(&name); err != nil {
			return err
		}
		if seen[name] {
			return store.Invalid(fmt.Sprintf("tenants[%d]", i), fmt.Sprintf("tenant %q appears twice", name))
		}
		seen[name] = true
		if err := x.forTenant(name); err != nil {
			return fmt.Errorf("tenants[%d]: %w", i, err)
		}
		for {
			k, more, err := in.key()
			if err != nil {
				return err
			}
			if !more {
				return nil
			}
			restore := restoreOfTenant(all, k)
			if restore == nil {
				return store.Invalid(fmt.Sprintf("tenants[%d]", i), fmt.Sprintf("field %q is not a section of a tenant's rows", k))
			}
			if err := restore(ctx, x, in, version); err != nil {
				return fmt.Errorf("tenant %s: %w", name, err)
			}
		}
	})
}

// restoreOfTenant is restoreOf for the sections of a tenant's part.
func restoreOfTenant(all []registered, k string) restoreFunc {
	var scoped []registered
	for _, f := range all {
		if tenantScoped(f) {
			scoped = append(scoped, f)
		}
	}
	return restoreOf(scoped, k)
}

// headTenant reads the "tenant" of a document's head (one tenant's
// export): its sections are that tenant's, restored to it (or to
// ImportOptions.Tenant). It must come before the sections.
func (x *importer) headTenant(in *jsonIn, version, sections int) error {
	var name string
	if err := in.decode(&name); err != nil {
		return err
	}
	if version < 6 {
		return store.Invalid("file", fmt.Sprintf("unknown field %q (tenants came with version 6)", "tenant"))
	}
	if sections > 0 || x.tenant != "" && x.into == "" {
		return store.Invalid("tenant", "must come once, before the sections")
	}
	if err := store.ValidateTenant(name); err != nil {
		return err
	}
	if x.into != "" {
		return nil // restored to the tenant the import names
	}
	return x.forTenant(name)
}

// emptySection reads the section k of a tenant's document, which must be
// empty: a facet no tenant handle scopes yet has no rows of a tenant.
func emptySection(in *jsonIn, k string) error {
	var items []json.RawMessage
	if err := in.decode(&items); err != nil {
		return err
	}
	if len(items) > 0 {
		return store.Invalid("tenant", fmt.Sprintf("section %q: its facet is not scoped by tenants yet, so its rows cannot be restored to a tenant", k))
	}
	return nil
}
