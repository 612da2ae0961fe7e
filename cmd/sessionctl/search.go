package main

// Search on the command line: "sessionctl search" finds items by what was
// said in them (store.Searcher.Search), "sessionctl reindex" rebuilds the
// search index (store.Searcher.Reindex).

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/store"
)

func runSearch(ctx context.Context, g *globals, args []string) error {
	sp := specs.Search
	fs := g.newFlags(sp)
	kinds := fs.String("kind", "", "only items of `KINDS`, comma-separated (message, event, trace, artifact, run)")
	facetName := fs.String("facet", "", "only items of `FACET` (conversations, agent_sessions)")
	app := fs.String("app", "", "only events of agent sessions of application `APP`")
	user := fs.String("user", "", "only events of agent sessions of user `ID`")
	session := fs.String("session", "", "only items of conversation or agent session `ID`")
	since := fs.String("since", "", "only items at or after `TIME` (RFC 3339)")
	until := fs.String("until", "", "only items before `TIME` (RFC 3339)")
	order := fs.String("order", "rank", "`ORDER` of hits: rank (best first) or time (newest first)")
	limit := fs.Int("limit", store.DefaultSearchLimit, "hits per page, `N`")
	after := fs.String("after", "", "continue after `CURSOR` (printed after a page)")
	window := fs.Int("window", 0, "also print the `N` items before and after each message or event hit")
	scanLimit := fs.Int("scan-limit", 0, "a query of short terms only scans the newest `N` items (0: the library's default)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parseArgs(fs, sp, args, 1, -1)
	if err != nil {
		return err
	}
	q := store.SearchQuery{Query: strings.Join(pos, " "), Facet: *facetName, App: *app, User: *user, Session: *session,
		Order: store.SearchOrder(*order), Limit: *limit, Cursor: *after, Window: *window, ScanLimit: *scanLimit}
	if *kinds != "" {
		for _, k := range strings.Split(*kinds, ",") {
			q.Kinds = append(q.Kinds, store.SearchKind(strings.TrimSpace(k)))
		}
	}
	if q.Since, err = optTime("since", *since); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	if q.Until, err = optTime("until", *until); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	if _, err := q.Normalize(); err != nil {
		return g.usageErr(sp.Name, "%v", err)
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		res, err := st.Search(ctx, q)
		if err != nil {
			return err
		}
		if *asJSON {
			if res.Hits == nil {
				res.Hits = []store.SearchHit{}
			}
			return g.jsonOr(sp.Name, res)
		}
		return render.SearchResult(g.stdout, res)
	}))
}

func runReindex(ctx context.Context, g *globals, args []string) error {
	sp := specs.Reindex
	fs := g.newFlags(sp)
	batch := fs.Int("batch", 1000, "items per write transaction, `N`")
	checkOnly := fs.Bool("check", false, "only compare the index with the content")
	asJSON := fs.Bool("json", false, "print one JSON document")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *batch < 1 {
		return g.usageErr(sp.Name, "--batch must be at least 1")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		if *checkOnly {
			rep, err := st.CheckSearchIndex(ctx)
			if err != nil {
				return err
			}
			var code error
			if !rep.OK() {
				code = exitStatus(exitError)
			}
			if *asJSON {
				if err := jsonout.Write(g.stdout, struct {
					OK bool `json:"ok"`
					store.SearchIndexReport
				}{rep.OK(), rep}); err != nil {
					return err
				}
				return code
			}
			if err := render.SearchIndexReport(g.stdout, rep); err != nil {
				return err
			}
			return code
		}
		p := g.startProgress(true)
		res, err := st.Reindex(ctx, store.ReindexRequest{Batch: *batch, Progress: func(done int64) {
			p.Show("reindex: %d %s", done, clitext.Plural(int(done), "item", "items"))
		}})
		p.Clear()
		if err != nil {
			return err
		}
		if *asJSON {
			return g.jsonOr(sp.Name, res)
		}
		fmt.Fprintf(g.stdout, "reindexed %d %s in %d %s, removed %d index %s without content\n",
			res.Items, clitext.Plural(int(res.Items), "item", "items"), res.Batches, clitext.Plural(int(res.Batches), "batch", "batches"),
			res.Orphans, clitext.Plural(int(res.Orphans), "row", "rows"))
		return nil
	}))
}
