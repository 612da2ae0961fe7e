package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentstore/sessionstore/pgstore"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var statsSpec = spec{
	name: "stats",
	about: `Summarizes the database, facet by facet: governed sessions by effective
status, runtime sessions by agent with running turns and uploads (count
and bytes), conversations by state with their messages, tokens and cost,
agent sessions with their applications, users and events and the keys of
their app, user and session state; then the database and WAL file sizes,
pages and free pages, and the schema version. On
PostgreSQL the sizes are those of the whole database (pg_database_size)
and of the store's tables with their indexes; there is no WAL file or page
count to report.`,
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

// convCounts summarizes the conversations.
type convCounts struct {
	Total        int64            `json:"total"`
	ByState      map[string]int64 `json:"by_state"`
	Messages     int64            `json:"messages"`
	TotalTokens  int64            `json:"total_tokens"`
	TotalCostUSD float64          `json:"total_cost_usd"`
}

// rtCounts summarizes the runtime sessions and their uploads.
type rtCounts struct {
	Total        int64            `json:"total"`
	ByAgent      map[string]int64 `json:"by_agent"`
	RunningTurns int64            `json:"running_turns"`
	Uploads      int64            `json:"uploads"`
	UploadBytes  int64            `json:"upload_bytes"`
}

// statsJSON is the JSON document of stats.
type statsJSON struct {
	Path                string       `json:"path"`
	Backend             string       `json:"backend"`
	SchemaVersion       int64        `json:"schema_version"`
	BinarySchemaVersion int64        `json:"binary_schema_version"`
	Governed            statusCounts `json:"governed"`
	Runtime             rtCounts     `json:"runtime"`
	Conversations       convCounts   `json:"conversations"`
	AgentSessions       agentCounts  `json:"agent_sessions"`
	Audit               *auditStats  `json:"audit,omitempty"`
	DatabaseBytes       int64        `json:"database_bytes"`
	// SQLite only: the WAL file and the pages of the database file.
	WALBytes  *int64 `json:"wal_bytes,omitempty"`
	PageSize  *int64 `json:"page_size,omitempty"`
	Pages     *int64 `json:"pages,omitempty"`
	FreePages *int64 `json:"free_pages,omitempty"`
	// PostgreSQL only: the store's tables with their indexes and TOAST.
	StoreBytes *int64 `json:"store_bytes,omitempty"`
}

func runStats(ctx context.Context, g *globals, args []string) error {
	sp := statsSpec
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if err := g.wantArgs(sp, pos, 0, 0); err != nil {
		return err
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
		return nil
	}
	tw := newTable(g.stdout)
	rows := [][2]string{
		{"database", doc.Path},
		{"schema version", fmt.Sprintf("%d (this binary: %d)", doc.SchemaVersion, doc.BinarySchemaVersion)},
	}
	all, err := registeredFacets()
	if err != nil {
		return g.fail(sp.name, err)
	}
	for _, f := range all {
		rows = append(rows, f.ops.statsRows(&doc)...)
	}
	if doc.StoreBytes != nil {
		rows = append(rows,
			[2]string{"database size", humanBytes(doc.DatabaseBytes)},
			[2]string{"store tables", humanBytes(*doc.StoreBytes)})
	} else {
		rows = append(rows,
			[2]string{"database file", humanBytes(doc.DatabaseBytes)},
			[2]string{"wal file", humanBytes(*doc.WALBytes)},
			[2]string{"pages", fmt.Sprintf("%d x %d bytes, %d free", *doc.Pages, *doc.PageSize, *doc.FreePages)})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	if err := tw.Flush(); err != nil {
		return g.fail(sp.name, err)
	}
	return nil
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
	for _, f := range all {
		if err := f.ops.stats(ctx, g, st, &doc); err != nil {
			return doc, fmt.Errorf("%s: %w", f.Title, err)
		}
	}
	if g.isPG() {
		sz, err := pgstore.ReadSizes(ctx, g.db)
		if err != nil {
			return doc, err
		}
		doc.DatabaseBytes, doc.StoreBytes = sz.Database, &sz.Schema
		return doc, nil
	}
	p, err := sqlstore.ReadPageStats(ctx, g.db)
	if err != nil {
		return doc, err
	}
	doc.PageSize, doc.Pages, doc.FreePages, doc.WALBytes = &p.PageSize, &p.PageCount, &p.Freelist, &p.WALBytes
	doc.DatabaseBytes = p.FileBytes
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

// countConversations pages through every conversation summary.
func countConversations(ctx context.Context, conv store.Conversations) (convCounts, error) {
	c := convCounts{ByState: map[string]int64{}}
	f := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := conv.List(ctx, f)
		if err != nil {
			return c, err
		}
		for _, s := range page.Items {
			c.Total++
			c.ByState[string(s.State)]++
			c.Messages += s.MessageCount
			c.TotalTokens += s.TotalUsage.TotalTokens
			c.TotalCostUSD += s.TotalCost
		}
		if page.Next == "" {
			return c, nil
		}
		f.After = page.Next
	}
}

// convCountsText is "3: 2 active, 1 completed" (states in a fixed order).
func convCountsText(c convCounts) string {
	var parts []string
	for _, st := range []store.ConversationState{store.StateActive, store.StatePaused, store.StateCompleted, store.StateError, store.StateUnknown} {
		if n := c.ByState[string(st)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprint(c.Total)
	}
	return fmt.Sprintf("%d: %s", c.Total, strings.Join(parts, ", "))
}

// countRuntime reads every runtime session (for running turns) and its
// upload entries.
func countRuntime(ctx context.Context, st cliStore) (rtCounts, error) {
	rt := st.Runtime()
	c := rtCounts{}
	var err error
	if c.ByAgent, err = rt.CountByAgent(ctx); err != nil {
		return c, err
	}
	req := store.ListIDsRequest{Limit: store.MaxPageSize}
	for {
		page, err := rt.ListIDs(ctx, req)
		if err != nil {
			return c, err
		}
		for _, id := range page.Items {
			s, err := rt.Get(ctx, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return c, err
			}
			c.Total++
			if s.Turn.Running {
				c.RunningTurns++
			}
			ups, err := allUploads(ctx, st, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return c, err
			}
			for _, u := range ups {
				c.Uploads++
				c.UploadBytes += u.SizeBytes
			}
		}
		if page.Next == "" {
			return c, nil
		}
		req.After = page.Next
	}
}

// rtCountsText is "3: 2 agent-a, 1 agent-b; 1 turn running".
func rtCountsText(c rtCounts) string {
	agents := make([]string, 0, len(c.ByAgent))
	for a := range c.ByAgent {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	var parts []string
	for _, a := range agents {
		parts = append(parts, fmt.Sprintf("%d %s", c.ByAgent[a], a))
	}
	s := fmt.Sprint(c.Total)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("%s; %d %s running", s, c.RunningTurns, plural(int(c.RunningTurns), "turn", "turns"))
}
