package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// tenantRow is one tenant in tenants' output.
type tenantRow struct {
	Tenant           string `json:"tenant"`
	GovernedSessions int64  `json:"governed_sessions"`
	Conversations    int64  `json:"conversations"`
	RuntimeSessions  int64  `json:"runtime_sessions"`
	AgentSessions    int64  `json:"agent_sessions"`
	AuditChains      int64  `json:"audit_chains"`
}

func runTenants(ctx context.Context, g *globals, args []string) error {
	sp := specs.Tenants
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		rows, err := tenantRows(ctx, st)
		if err != nil {
			return err
		}
		if *asJSON {
			return jsonout.Write(g.stdout, struct {
				Items []tenantRow `json:"items"`
			}{rows})
		}
		if len(rows) == 0 {
			_, err := fmt.Fprintln(g.stdout, "no tenants: every row belongs to the default tenant")
			return err
		}
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "TENANT\tGOVERNED\tCONVERSATIONS\tRUNTIME\tAGENT SESSIONS\tAUDIT CHAINS")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", humanize.Escape(r.Tenant), count(r.GovernedSessions), count(r.Conversations),
				count(r.RuntimeSessions), count(r.AgentSessions), count(r.AuditChains))
		}
		return tw.Flush()
	}))
}

func count(n int64) string { return strconv.FormatInt(n, 10) }

// tenantRows lists the store's tenants with their counts (none when the
// backend has no tenants).
func tenantRows(ctx context.Context, st cliStore) ([]tenantRow, error) {
	tr, ok := st.(store.Tenanter)
	if !ok {
		return nil, fmt.Errorf("%s stores have no tenants", st.Backend())
	}
	names, err := tr.Tenants(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]tenantRow, 0, len(names))
	for _, name := range names {
		ts, err := tr.Tenant(name)
		if err != nil {
			return nil, err
		}
		c, err := ts.Counts(ctx)
		if err != nil {
			return nil, err
		}
		rows = append(rows, tenantRow{Tenant: name, GovernedSessions: c.Governed.Total, Conversations: c.Conversations.Total,
			RuntimeSessions: c.Runtime.Total, AgentSessions: c.AgentSessions.Total, AuditChains: c.Audit.Chains})
	}
	return rows, nil
}
