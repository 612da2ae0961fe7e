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
	"iter"
	"slices"
	"strings"

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

// wrapWords breaks text into lines of at most width bytes at spaces (a
// longer word makes a line of its own).
func wrapWords(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
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

// tenantCLI is a store whose agent-session, conversation and runtime
// facets, governance, spend, audit, retention (holds), search and change
// feed are a tenant's. The feed's governed
// stream, which is not tenant-scoped yet, is refused (errTenantFeed). The
// commands that take --tenant use nothing else.
type tenantCLI struct {
	cliStore
	ts store.TenantStore
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
	return fmt.Sprintf("tenant %s is unknown: no row belongs to it%s (sessionctl tenants lists the tenants)", esc(e.name), e.hint)
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
		names, err := tr.Tenants(ctx)
		if err != nil {
			st.Close()
			return nil, err
		}
		if _, found := slices.BinarySearch(names, tenant); !found {
			st.Close()
			return nil, &errUnknownTenant{tenant, didYouMean(tenant, names)}
		}
	}
	return &tenantCLI{cliStore: st, ts: ts}, nil
}

func (t *tenantCLI) AgentSessions() store.AgentSessions { return t.ts.AgentSessions() }
func (t *tenantCLI) Governance() store.Governance       { return t.ts.Governance() }
func (t *tenantCLI) Spend() store.Spend                 { return t.ts.Spend() }
func (t *tenantCLI) Audit() store.Audit                 { return t.ts.Audit() }

// untenanted returns the store under a tenant's wrapper, for the commands
// that name the tenant to the library themselves (export, import).
func untenanted(st cliStore) cliStore {
	if t, ok := st.(*tenantCLI); ok {
		return t.cliStore
	}
	return st
}

func (t *tenantCLI) Conversations() store.Conversations { return t.ts.Conversations() }

// Retention is the tenant's: its holds (hold --tenant).
func (t *tenantCLI) Retention() store.Retention { return t.ts.Retention() }

// Counts counts the tenant's items (stats).
func (t *tenantCLI) Counts(ctx context.Context) (store.Counts, error) { return t.ts.Counts(ctx) }

func (t *tenantCLI) Runtime() store.Runtime { return t.ts.Runtime() }

func (t *tenantCLI) Search(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	return t.ts.Search(ctx, q)
}

func (t *tenantCLI) History(ctx context.Context, req store.HistoryRequest) (store.Page[store.HistoryItem], error) {
	return t.ts.History(ctx, req)
}

func (t *tenantCLI) Feed() store.Feed { return tenantFeed{t.ts} }

// errTenantFeed is the error of a feed read under --tenant of a stream
// that is not tenant-scoped.
var errTenantFeed = errors.New("governed sessions cannot be followed with --tenant yet")

// tenantFeed is a store.Feed of a tenant: its agent sessions' and
// conversations' streams, and errTenantFeed for governed sessions.
type tenantFeed struct{ ts store.TenantStore }

func refuse[T any]() iter.Seq2[store.Batch[T], error] {
	return func(yield func(store.Batch[T], error) bool) { yield(store.Batch[T]{}, errTenantFeed) }
}

func (f tenantFeed) Messages(ctx context.Context, req store.MessageFeed) iter.Seq2[store.Batch[store.Message], error] {
	return f.ts.Feed().Messages(ctx, req)
}

func (f tenantFeed) Traces(ctx context.Context, req store.TraceFeed) iter.Seq2[store.Batch[store.TraceEvent], error] {
	return f.ts.Feed().Traces(ctx, req)
}

func (f tenantFeed) RunEvents(ctx context.Context, req store.RunEventFeed) iter.Seq2[store.Batch[store.RunEvent], error] {
	return f.ts.Feed().RunEvents(ctx, req)
}

func (f tenantFeed) Events(ctx context.Context, req store.EventFeed) iter.Seq2[store.Batch[store.AgentEvent], error] {
	return f.ts.Events(ctx, req)
}

func (tenantFeed) GovernedSession(context.Context, store.GovernedFeed) iter.Seq2[store.Batch[store.Session], error] {
	return refuse[store.Session]()
}
