package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var statsSpec = spec{
	name: "stats",
	about: `Summarizes the database: governed sessions by effective status, the
database and WAL file sizes, pages and free pages, and the schema version.`,
	examples: []string{
		"sessionctl stats",
		"sessionctl stats --json | jq .governed.active",
	},
}

// statusCounts counts governed sessions by effective status.
type statusCounts struct {
	Total   int64 `json:"total"`
	Active  int64 `json:"active"`
	Closed  int64 `json:"closed"`
	Expired int64 `json:"expired"`
}

// statsJSON is the JSON document of stats.
type statsJSON struct {
	Path                string       `json:"path"`
	SchemaVersion       int64        `json:"schema_version"`
	BinarySchemaVersion int64        `json:"binary_schema_version"`
	Governed            statusCounts `json:"governed"`
	DatabaseBytes       int64        `json:"database_bytes"`
	WALBytes            int64        `json:"wal_bytes"`
	PageSize            int64        `json:"page_size"`
	Pages               int64        `json:"pages"`
	FreePages           int64        `json:"free_pages"`
}

func runStats(ctx context.Context, g *globals, args []string) int {
	sp := statsSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()
	doc, err := collectStats(ctx, g, st)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	tw := newTable(g.stdout)
	gc := doc.Governed
	rows := [][2]string{
		{"database", doc.Path},
		{"schema version", fmt.Sprintf("%d (this binary: %d)", doc.SchemaVersion, doc.BinarySchemaVersion)},
		{"governed sessions", fmt.Sprintf("%d: %d active, %d closed, %d expired", gc.Total, gc.Active, gc.Closed, gc.Expired)},
		{"database file", humanBytes(doc.DatabaseBytes)},
		{"wal file", humanBytes(doc.WALBytes)},
		{"pages", fmt.Sprintf("%d x %d bytes, %d free", doc.Pages, doc.PageSize, doc.FreePages)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return g.fail(sp.name, err)
	}
	return exitOK
}

func collectStats(ctx context.Context, g *globals, st *sqlstore.Store) (statsJSON, error) {
	doc := statsJSON{Path: g.db}
	var err error
	if doc.SchemaVersion, doc.BinarySchemaVersion, err = st.SchemaVersion(ctx); err != nil {
		return doc, err
	}
	if doc.Governed, err = countGoverned(ctx, st.Governance()); err != nil {
		return doc, err
	}
	db, err := openRaw(g.db, true)
	if err != nil {
		return doc, err
	}
	defer db.Close()
	p, err := readPageStats(ctx, db)
	if err != nil {
		return doc, mapRawErr(err)
	}
	doc.PageSize, doc.Pages, doc.FreePages = p.PageSize, p.PageCount, p.Freelist
	doc.DatabaseBytes = fileSize(g.db)
	doc.WALBytes = fileSize(g.db + "-wal")
	return doc, nil
}

// countGoverned pages through every governed session.
func countGoverned(ctx context.Context, gov store.Governance) (statusCounts, error) {
	var c statusCounts
	f := store.ListFilter{Limit: store.MaxPageSize}
	for {
		page, err := gov.List(ctx, f)
		if err != nil {
			return c, err
		}
		for _, s := range page.Items {
			c.Total++
			switch s.Status {
			case store.StatusActive:
				c.Active++
			case store.StatusClosed:
				c.Closed++
			case store.StatusExpired:
				c.Expired++
			}
		}
		if page.Next == "" {
			return c, nil
		}
		f.After = page.Next
	}
}
