package main

// --tenant (or $SESSIONSTORE_TENANT): the commands that take it work on the
// rows of that tenant only, through the library's tenant handle
// (store.Tenanter). So far the handle scopes the agent-session,
// governance, spend and audit facets, so the commands of those take it,
// export and import (one tenant's rows: archive.ExportOptions.Tenant,
// ImportOptions.Tenant), and serve, whose console then shows that
// tenant's agent sessions only (console.Options.Tenant); the others refuse
// the flag (a usage error) rather than show the default tenant's rows
// under a tenant's name.

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
var tenantCommands = []string{"agents", "history", "fork", "rewind", "create", "use", "close", "close-agent",
	"reserve", "settle", "release", "limits", "audit", "export", "import", "serve"}

// tenantCommandList names tenantCommands for help and errors.
func tenantCommandList() string {
	return strings.Join(tenantCommands[:len(tenantCommands)-1], ", ") + " and " + tenantCommands[len(tenantCommands)-1]
}

// wrapWords breaks text into lines of at most width bytes at spaces (a
// longer word is a line of its own).
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
	return append(lines, line)
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
	if !slices.Contains(tenantCommands, command) {
		return fmt.Errorf("%s does not take --tenant (or $SESSIONSTORE_TENANT): only %s work on a tenant's sessions so far", command, tenantCommandList())
	}
	return nil
}

// tenantCLI is a store whose agent-session facet is a tenant's. Its change
// feed follows the tenant's agent sessions and refuses every other stream
// (errTenantFeed), which is not tenant-scoped yet. The commands that take
// --tenant use nothing else.
type tenantCLI struct {
	cliStore
	ts store.TenantStore
}

// tenantStore wraps st for tenant.
func tenantStore(st cliStore, tenant string) (cliStore, error) {
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

func (t *tenantCLI) Feed() store.Feed { return tenantFeed{t.ts} }

// errTenantFeed is the error of a feed read under --tenant of a stream
// that is not tenant-scoped.
var errTenantFeed = errors.New("only agent sessions can be followed with --tenant so far")

// tenantFeed is a store.Feed of a tenant: its agent-session events, and
// errTenantFeed for every other stream.
type tenantFeed struct{ ts store.TenantStore }

func refuse[T any]() iter.Seq2[store.Batch[T], error] {
	return func(yield func(store.Batch[T], error) bool) { yield(store.Batch[T]{}, errTenantFeed) }
}

func (tenantFeed) Messages(context.Context, store.MessageFeed) iter.Seq2[store.Batch[store.Message], error] {
	return refuse[store.Message]()
}

func (tenantFeed) Traces(context.Context, store.TraceFeed) iter.Seq2[store.Batch[store.TraceEvent], error] {
	return refuse[store.TraceEvent]()
}

func (tenantFeed) RunEvents(context.Context, store.RunEventFeed) iter.Seq2[store.Batch[store.RunEvent], error] {
	return refuse[store.RunEvent]()
}

func (f tenantFeed) Events(ctx context.Context, req store.EventFeed) iter.Seq2[store.Batch[store.AgentEvent], error] {
	return f.ts.Events(ctx, req)
}

func (tenantFeed) GovernedSession(context.Context, store.GovernedFeed) iter.Seq2[store.Batch[store.Session], error] {
	return refuse[store.Session]()
}
