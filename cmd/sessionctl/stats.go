package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
)

// statsJSON is the JSON document of stats.
type statsJSON struct {
	Path    string `json:"path"`
	Backend string `json:"backend"`
	// Tenant is --tenant: the counts are that tenant's, and the sizes
	// (the database's) are left out.
	Tenant              string       `json:"tenant,omitempty"`
	SchemaVersion       int64        `json:"schema_version"`
	BinarySchemaVersion int64        `json:"binary_schema_version"`
	Governed            statusCounts `json:"governed"`
	Runtime             rtCounts     `json:"runtime"`
	Conversations       convCounts   `json:"conversations"`
	AgentSessions       agentCounts  `json:"agent_sessions"`
	Audit               *auditStats  `json:"audit,omitempty"`
	DatabaseBytes       *int64       `json:"database_bytes,omitempty"`
	// SQLite only: the WAL file and the pages of the database file.
	WALBytes  *int64 `json:"wal_bytes,omitempty"`
	PageSize  *int64 `json:"page_size,omitempty"`
	Pages     *int64 `json:"pages,omitempty"`
	FreePages *int64 `json:"free_pages,omitempty"`
	// PostgreSQL only: the store's tables with their indexes and TOAST.
	StoreBytes *int64 `json:"store_bytes,omitempty"`
}

func runStats(ctx context.Context, g *globals, args []string) error {
	sp := specs.Stats
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		doc, err := collectStats(ctx, g, st)
		if err != nil {
			return err
		}
		if *asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		tw := tablefmt.NewWriter(g.stdout)
		rows := [][2]string{
			{"database", doc.Path},
			{"schema version", fmt.Sprintf("%d (this binary: %d)", doc.SchemaVersion, doc.BinarySchemaVersion)},
		}
		if doc.Tenant != "" {
			rows = append(rows, [2]string{"tenant", doc.Tenant + " (the counts below are its rows only)"})
		}
		all, err := registeredFacets()
		if err != nil {
			return err
		}
		for _, f := range all {
			rows = append(rows, f.ops.statsRows(&doc)...)
		}
		switch {
		case doc.DatabaseBytes == nil: // a tenant's stats
		case doc.StoreBytes != nil:
			rows = append(rows,
				[2]string{"database size", humanize.Bytes(*doc.DatabaseBytes)},
				[2]string{"store tables", humanize.Bytes(*doc.StoreBytes)})
		default:
			rows = append(rows,
				[2]string{"database file", humanize.Bytes(*doc.DatabaseBytes)},
				[2]string{"wal file", humanize.Bytes(*doc.WALBytes)},
				[2]string{"pages", fmt.Sprintf("%d x %d bytes, %d free", *doc.Pages, *doc.PageSize, *doc.FreePages)})
		}
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return nil
	}))
}

func collectStats(ctx context.Context, g *globals, st cliStore) (statsJSON, error) {
	doc := statsJSON{Path: g.dbName(), Backend: st.Backend()}
	var err error
	if doc.SchemaVersion, doc.BinarySchemaVersion, err = st.SchemaVersion(ctx); err != nil {
		return doc, err
	}
	all, err := registeredFacets()
	if err != nil {
		return doc, err
	}
	counts, err := st.Counts(ctx)
	if err != nil {
		return doc, err
	}
	for _, f := range all {
		f.ops.stats(counts, &doc)
	}
	if g.tenant != "" {
		// The sizes are the whole database's: not a tenant's figures.
		doc.Tenant = g.tenant
		return doc, nil
	}
	if g.isPG() {
		sz, err := pgstore.ReadSizes(ctx, g.db)
		if err != nil {
			return doc, err
		}
		doc.DatabaseBytes, doc.StoreBytes = &sz.Database, &sz.Schema
		return doc, nil
	}
	p, err := sqlstore.ReadPageStats(ctx, g.db)
	if err != nil {
		return doc, err
	}
	doc.PageSize, doc.Pages, doc.FreePages, doc.WALBytes = &p.PageSize, &p.PageCount, &p.Freelist, &p.WALBytes
	doc.DatabaseBytes = &p.FileBytes
	return doc, nil
}
