package main

// --tenant (or $SESSIONSTORE_TENANT): the commands that take it work on the
// rows of that tenant only, through the library's tenant handle
// (store.Tenanter). The handle scopes agent sessions, conversations,
// runtime sessions (with their uploads), search, the change feed,
// governed sessions, spend and audit, so the commands of those facets take
// it (show too), stats (the tenant's counts: TenantStore.Counts), export
// and import (one tenant's rows: archive.ExportOptions.Tenant,
// ImportOptions.Tenant), serve, whose console then shows that tenant's
// rows only (console.Options.Tenant), and hold (the tenant's holds). The
// others (retention policies, sweeps and maintenance) refuse the flag (a
// usage error, saying why for the retention commands) rather than show
// the default tenant's rows under a tenant's name.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/suggest"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// tenantCommands are the commands that work through a tenant handle.
var tenantCommands = []string{"agents", "history", "fork", "rewind", "list", "messages", "artifacts", "traces",
	"runs", "reports", "uploads", "delete", "search", "create", "use", "close", "close-agent",
	"reserve", "settle", "release", "limits", "audit", "show", "stats", "export", "import", "serve", "hold"}

// tenantRefusals say why the retention commands other than hold refuse
// --tenant: their policies and sweeps are the operator's, applied to every
// tenant's rows (store.TenantStore.Retention refuses them too).
var tenantRefusals = map[string]string{
	"cleanup":   "cleanup sweeps every tenant's sessions and only the operator runs it: drop --tenant (a tenant keeps its sessions with sessionctl hold --tenant T)",
	"sweep":     "sweeps apply the store's policies to every tenant's sessions and only the operator runs them: drop --tenant (a tenant keeps its sessions with sessionctl hold --tenant T)",
	"gc":        "gc sweeps every tenant's sessions and only the operator runs it: drop --tenant (a tenant keeps its sessions with sessionctl hold --tenant T)",
	"retention": "retention policies apply to every tenant's sessions and only the operator sets them: drop --tenant (a tenant keeps its sessions with sessionctl hold --tenant T)",
}

// tenantCommandList names tenantCommands for help and errors.
func tenantCommandList() string {
	return strings.Join(tenantCommands[:len(tenantCommands)-1], ", ") + " and " + tenantCommands[len(tenantCommands)-1]
}

// checkTenant refuses --tenant with a malformed name or on a command that
// does not take it.
func (g *globals) checkTenant(command string) error {
	if g.tenant == "" {
		return nil
	}
	if err := store.ValidateTenant(g.tenant); err != nil {
		return fmt.Errorf("--tenant %q: tenant names are 1 to %d letters, digits and _ - . beginning with a letter or digit", g.tenant, store.MaxTenantLength)
	}
	if why, ok := tenantRefusals[command]; ok {
		return errors.New(why)
	}
	if !slices.Contains(tenantCommands, command) {
		return fmt.Errorf("%s does not take --tenant (or $SESSIONSTORE_TENANT): only %s work on a tenant's rows", command, tenantCommandList())
	}
	return nil
}

// tenantCLI is a store whose facets, search, counts and change feed are
// a tenant's (store.TenantView); the maintenance of the search index and
// the restore of exported records are the whole store's. The commands
// that take --tenant use nothing else.
type tenantCLI struct {
	store.TenantView
	whole cliStore
}

// RestoreRecords is the whole store's: an import names the tenant of its
// records itself.
func (t *tenantCLI) RestoreRecords(ctx context.Context, fn func(w store.RecordWriter) error) error {
	return t.whole.RestoreRecords(ctx, fn)
}

// CheckSearchIndex is the whole store's.
func (t *tenantCLI) CheckSearchIndex(ctx context.Context) (store.SearchIndexReport, error) {
	return t.whole.CheckSearchIndex(ctx)
}

// Reindex is the whole store's.
func (t *tenantCLI) Reindex(ctx context.Context, req store.ReindexRequest) (store.ReindexResult, error) {
	return t.whole.Reindex(ctx, req)
}

// tenantWriters are the commands that may write a tenant's first rows
// (create a governed session, import, set spend limits, hold): the
// others refuse a tenant that owns no row as unknown.
var tenantWriters = []string{"create", "import", "limits", "hold"}

// tenantMayBeNew reports whether command may run under a tenant that owns
// no row yet.
func tenantMayBeNew(command string) bool { return slices.Contains(tenantWriters, command) }

// errUnknownTenant is the error of a command run with --tenant naming a
// tenant that owns no row: an unknown tenant is said to be unknown, never
// shown as an empty one (a mistyped name would read as "no sessions").
type errUnknownTenant struct{ name, hint string }

func (e *errUnknownTenant) Error() string {
	return fmt.Sprintf("tenant %s is unknown: no row belongs to it%s (sessionctl tenants lists the tenants)", humanize.Escape(e.name), e.hint)
}

// Unwrap makes the error store.ErrNotFound (exit 3).
func (e *errUnknownTenant) Unwrap() error { return store.ErrNotFound }

// tenantStore wraps st for tenant; unless mayBeNew, a tenant that owns no
// row is an errUnknownTenant.
func tenantStore(ctx context.Context, st cliStore, tenant string, mayBeNew bool) (cliStore, error) {
	tr, ok := st.(store.Tenanter)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("%s stores have no tenants", st.Backend())
	}
	ts, err := tr.Tenant(tenant)
	if err != nil {
		st.Close()
		return nil, err
	}
	if !mayBeNew {
		if err := knownTenant(ctx, tr, tenant); err != nil {
			st.Close()
			return nil, err
		}
	}
	return &tenantCLI{TenantView: store.TenantView{Store: st, Tenant: ts}, whole: st}, nil
}

// knownTenant returns an errUnknownTenant when no row of tr's database
// belongs to tenant.
func knownTenant(ctx context.Context, tr store.Tenanter, tenant string) error {
	names, err := tr.Tenants(ctx)
	if err != nil {
		return err
	}
	if _, found := slices.BinarySearch(names, tenant); !found {
		return &errUnknownTenant{tenant, suggest.DidYouMean(tenant, names)}
	}
	return nil
}

// untenanted returns the store under a tenant's wrapper, for the commands
// that name the tenant to the library themselves (export, import).
func untenanted(st cliStore) cliStore {
	if t, ok := st.(*tenantCLI); ok {
		return t.whole
	}
	return st
}
