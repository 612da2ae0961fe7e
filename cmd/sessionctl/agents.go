package main

// Agent sessions on the command line (ADK-style sessions keyed by app,
// user and session id; store.AgentSessions): "sessionctl agents" lists
// them, shows one with its merged state and last events, pages or follows
// its event log, prints state and deletes one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/view"
)

func runAgents(ctx context.Context, g *globals, args []string) error {
	sp := specs.Agents
	sub, args := sp.Action(args)
	fs := g.newFlags(sp)
	app := fs.String("app", "", "list: only the sessions of application `APP`")
	user := fs.String("user", "", "list: only the sessions of user `USER`")
	idle := cliflags.DurationFlag(fs, "idle", 0, "list: only sessions not updated for `DURATION`")
	limit := fs.Int("limit", 50, fmt.Sprintf("list, events: at most `N` per page (1 to %d)", store.MaxPageSize))
	after := fs.String("after", "", "list: continue after `CURSOR` (printed after a page)")
	all := fs.Bool("all", false, "list: every page")
	last := fs.Int("last", 10, "show, events: only the last `N` events")
	from := fs.Int64("from", 1, "events: the first event sequence number `N`")
	invocation := fs.String("invocation", "", "events: only the events of invocation `ID`")
	followFlag := fs.Bool("follow", false, "events: then print new events as they commit, until interrupted")
	yes := fs.Bool("yes", false, "delete: do not ask")
	asJSON := fs.Bool("json", false, "print one JSON document (events --follow: one object per line)")
	pos, err := g.parseAction(fs, sp, sub, args)
	if err != nil {
		return err
	}
	name := sp.Name + " " + sub
	key := func(min int) (store.SessionKey, error) {
		if len(pos) < min || len(pos) > 3 || (min == 3 && len(pos) != 3) {
			return store.SessionKey{}, g.usageErr(name, "expected %s", map[int]string{1: "APP [USER [SESSION]]", 3: "APP USER SESSION"}[min])
		}
		k := store.SessionKey{App: pos[0]}
		if len(pos) > 1 {
			k.User = pos[1]
		}
		if len(pos) > 2 {
			k.Session = pos[2]
		}
		for i, field := range []string{"app", "user", "session"}[:len(pos)] {
			if err := store.ValidateID(field, pos[i]); err != nil {
				return k, g.usageErr(name, "%v", err)
			}
		}
		return k, nil
	}
	if *limit < 1 || *limit > store.MaxPageSize {
		return g.usageErr(name, "--limit must be between 1 and %d", store.MaxPageSize)
	}
	if *last < 0 || *last > store.MaxPageSize {
		return g.usageErr(name, "--last must be between 0 and %d", store.MaxPageSize)
	}
	switch sub {
	case "list":
		if len(pos) > 0 {
			return g.usageErr(name, "unexpected argument %q (use --app and --user)", pos[0])
		}
		req := store.AgentSessionsPageRequest{App: *app, User: *user, Cursor: *after, Limit: *limit}
		if *idle > 0 {
			req.UpdatedBefore = g.clock().Add(-*idle)
		}
		if _, err := req.Normalize(); err != nil {
			var ie *store.InvalidInputError
			if errors.As(err, &ie) && ie.Field == "cursor" {
				return g.usageErr(name, "--after %q is not a cursor of this listing", *after)
			}
			return g.usageErr(name, "%v", err)
		}
		return g.result(name, g.agentsList(ctx, req, *all, *asJSON))
	case "show":
		k, err := key(3)
		if err != nil {
			return err
		}
		return g.result(name, g.agentsShow(ctx, k, *last, *asJSON))
	case "events":
		k, err := key(3)
		if err != nil {
			return err
		}
		useLast := cliflags.IsSet(fs, "last")
		switch {
		case useLast && (cliflags.IsSet(fs, "from") || cliflags.IsSet(fs, "limit")):
			return g.usageErr(name, "--last does not go with --from or --limit")
		case *from < 1:
			return g.usageErr(name, "--from must be at least 1 (events are numbered from 1)")
		case *followFlag && (cliflags.IsSet(fs, "limit") || *invocation != ""):
			return g.usageErr(name, "--follow does not go with --limit or --invocation")
		case useLast && *invocation != "":
			return g.usageErr(name, "--last does not go with --invocation")
		}
		if *invocation != "" {
			if err := store.ValidateID("invocation", *invocation); err != nil {
				return g.usageErr(name, "%v", err)
			}
		}
		req := agentEventsReq{key: k, from: *from, limit: *limit, last: -1, invocation: *invocation}
		if useLast {
			req.last = *last
		}
		if *followFlag {
			return g.result(name, g.agentsFollow(ctx, req, *asJSON))
		}
		return g.result(name, g.agentsEvents(ctx, req, *asJSON))
	case "state":
		k, err := key(1)
		if err != nil {
			return err
		}
		return g.result(name, g.agentsState(ctx, k, *asJSON))
	case "delete":
		k, err := key(3)
		if err != nil {
			return err
		}
		return g.result(name, g.agentsDelete(ctx, name, k, *yes, *asJSON))
	}
	return nil
}

// agentListJSON is the JSON document of agents list.
type agentListJSON = pageJSON[view.AgentSession]

// agentsList lists the agent sessions req selects, one page (or every
// page with all).
func (g *globals) agentsList(ctx context.Context, req store.AgentSessionsPageRequest, all, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		items, next, err := readPages(all, req.Cursor, func(after string) (store.Page[store.AgentSession], error) {
			req.Cursor = after
			return store.ListAgentSessionsPage(ctx, st.AgentSessions(), req)
		})
		if err != nil {
			return err
		}
		doc := agentListJSON{Items: views(items, view.NewAgentSession), Next: next}
		return render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[view.AgentSession]{Doc: doc, Items: doc.Items, None: "no agent sessions",
			Header: "APP\tUSER\tSESSION\tVERSION\tEVENTS\tSTATE KEYS\tUPDATED", More: "more agent sessions follow", Next: doc.Next,
			Row: func(v view.AgentSession) string {
				up, _ := humanize.ParseTime("updated_at", v.UpdatedAt)
				return fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%d\t%s", humanize.Escape(v.App), humanize.Escape(v.User), humanize.Escape(v.Session), v.Version, v.EventCount, v.StateKeys, tablefmt.Time(up))
			}})
	})
}

// agentShowJSON is the JSON document of agents show.
type agentShowJSON struct {
	view.AgentSession
	// State is the merged state (app: and user: prefixes, as ADK reads it).
	State  map[string]json.RawMessage `json:"state"`
	Events []store.AgentEvent         `json:"events"`
}

// agentsShow prints one session, its merged state and its last events.
func (g *globals) agentsShow(ctx context.Context, k store.SessionKey, last int, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		s, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: k, IncludeEvents: last > 0, Recent: last})
		if err != nil {
			return agentKeyErr(k, err)
		}
		doc := agentShowJSON{AgentSession: view.NewAgentSession(s), State: store.DefaultStatePrefixes.Merge(s.State), Events: nonNilSlice(s.Events)}
		if asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		w := g.stdout
		fmt.Fprintf(w, "agent session %s\n", humanize.Escape(keyText(k)))
		tw := tablefmt.NewWriter(w)
		fmt.Fprintf(tw, "  version\t%d\n", s.Version)
		fmt.Fprintf(tw, "  events\t%d\n", s.EventCount)
		fmt.Fprintf(tw, "  created\t%s\n", tablefmt.Time(s.CreatedAt))
		fmt.Fprintf(tw, "  updated\t%s\n", tablefmt.Time(s.UpdatedAt))
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "\nstate (%d %s, merged):\n", len(doc.State), clitext.Plural(len(doc.State), "key", "keys"))
		if err := render.StateTable(g.stdout, doc.State, ""); err != nil {
			return err
		}
		if last == 0 {
			return nil
		}
		fmt.Fprintf(w, "\nlast %d %s:\n", len(s.Events), clitext.Plural(len(s.Events), "event", "events"))
		if err := render.EventTable(g.stdout, s.Events); err != nil {
			return err
		}
		if s.EventCount > int64(len(s.Events)) {
			fmt.Fprintf(w, "(sessionctl agents events %s %s %s --from 1 for the whole log)\n", clitext.ShellQuote(k.App), clitext.ShellQuote(k.User), clitext.ShellQuote(k.Session))
		}
		return nil
	})
}

// agentKeyErr names the session in a not-found error.
func agentKeyErr(k store.SessionKey, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("agent session %s: %w", keyText(k), err)
	}
	return err
}

type agentEventsReq struct {
	key        store.SessionKey
	from       int64
	limit      int
	last       int // -1: not asked for
	invocation string
}

// agentEventsJSON is the JSON document of agents events. NextFrom is the
// --from of the next page, null on the last page.
type agentEventsJSON struct {
	App        string             `json:"app"`
	User       string             `json:"user"`
	Session    string             `json:"session"`
	EventCount int64              `json:"event_count"`
	Events     []store.AgentEvent `json:"events"`
	NextFrom   *int64             `json:"next_from"`
}

// agentsEvents prints a page of a session's event log.
func (g *globals) agentsEvents(ctx context.Context, req agentEventsReq, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		as := st.AgentSessions()
		doc := agentEventsJSON{App: req.key.App, User: req.key.User, Session: req.key.Session}
		if req.last >= 0 {
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: req.key, IncludeEvents: req.last > 0, Recent: req.last})
			if err != nil {
				return agentKeyErr(req.key, err)
			}
			doc.EventCount, doc.Events = s.EventCount, nonNilSlice(s.Events)
		} else {
			lr := store.ListEventsRequest{Key: req.key, InvocationID: req.invocation, Limit: req.limit}
			if req.from > 1 {
				lr.Cursor = store.EventCursor(req.from - 1)
			}
			page, err := as.ListEvents(ctx, lr)
			if err != nil {
				return agentKeyErr(req.key, err)
			}
			doc.Events = nonNilSlice(page.Items)
			if page.Next != "" && len(page.Items) > 0 {
				next := page.Items[len(page.Items)-1].Seq + 1
				doc.NextFrom = &next
			}
			s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: req.key})
			if err != nil {
				return agentKeyErr(req.key, err)
			}
			doc.EventCount = s.EventCount
		}
		if asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		if len(doc.Events) == 0 {
			_, err := fmt.Fprintf(g.stdout, "no events (the session has %d)\n", doc.EventCount)
			return err
		}
		if err := render.EventTable(g.stdout, doc.Events); err != nil {
			return err
		}
		if doc.NextFrom != nil {
			fmt.Fprintf(g.stderr, "more events follow: add --from %d for the next page\n", *doc.NextFrom)
		}
		return nil
	})
}

// agentsFollow prints a session's events from req.from (or its last
// req.last) on, then as they are appended.
func (g *globals) agentsFollow(ctx context.Context, req agentEventsReq, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		s, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: req.key})
		if err != nil {
			return agentKeyErr(req.key, err)
		}
		from := req.from
		if req.last >= 0 {
			from = max(s.EventCount-int64(req.last)+1, 1)
		}
		w := []int{5, 20, 12, 27}
		feed := st.Feed().Events(ctx, store.EventFeed{Key: req.key, From: store.Position{Seq: from}, Limit: followLimit})
		err = follow(ctx, g, feed, asJSON, tablefmt.Cols(w, "SEQ", "ID", "INVOCATION", "TIMESTAMP", "DATA"), func(e store.AgentEvent) string {
			return tablefmt.Cols(w, fmt.Sprint(e.Seq), humanize.Escape(e.ID), tablefmt.OrDash(humanize.Escape(e.InvocationID)), e.Timestamp.UTC().Format(render.EventTimeLayout), tablefmt.Clip(render.JSONText(e.Data), 80))
		})
		return agentKeyErr(req.key, followErr("agent session "+keyText(req.key), err))
	})
}

// agentsState prints the app state, and the user and session state when
// named.
func (g *globals) agentsState(ctx context.Context, k store.SessionKey, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		s, err := st.AgentSessions().GetState(ctx, k)
		if err != nil {
			return agentKeyErr(k, err)
		}
		if asJSON {
			doc := struct {
				App     map[string]json.RawMessage `json:"app"`
				User    map[string]json.RawMessage `json:"user,omitempty"`
				Session map[string]json.RawMessage `json:"session,omitempty"`
			}{App: nonNilMap(s.App), User: s.User, Session: s.Session}
			if k.User != "" {
				doc.User = nonNilMap(s.User)
			}
			if k.Session != "" {
				doc.Session = nonNilMap(s.Session)
			}
			return jsonout.Write(g.stdout, doc)
		}
		scopes := []struct {
			name string
			m    map[string]json.RawMessage
			on   bool
		}{{"app", s.App, true}, {"user", s.User, k.User != ""}, {"session", s.Session, k.Session != ""}}
		for i, sc := range scopes {
			if !sc.on {
				continue
			}
			if i > 0 {
				fmt.Fprintln(g.stdout)
			}
			fmt.Fprintf(g.stdout, "%s state (%d %s):\n", sc.name, len(sc.m), clitext.Plural(len(sc.m), "key", "keys"))
			if err := render.StateTable(g.stdout, sc.m, ""); err != nil {
				return err
			}
		}
		return nil
	})
}

// nonNilMap makes JSON print {} rather than null.
func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// agentsDelete deletes one agent session after confirmation.
func (g *globals) agentsDelete(ctx context.Context, name string, k store.SessionKey, yes, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		as := st.AgentSessions()
		s, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: k})
		if err != nil {
			return agentKeyErr(k, err)
		}
		what := fmt.Sprintf("agent session %s with %d %s and %d session state %s", keyText(k), s.EventCount,
			clitext.Plural(int(s.EventCount), "event", "events"), len(s.State.Session), clitext.Plural(len(s.State.Session), "key", "keys"))
		if err := g.confirm(name, what, yes); err != nil {
			return err
		}
		if err := as.DeleteSession(ctx, k); err != nil {
			return agentKeyErr(k, err)
		}
		return g.say(asJSON, map[string]any{"deleted": view.NewAgentSession(s)}, "deleted %s\n", humanize.Escape(what))
	})
}

// keyText names an agent session in messages.
func keyText(k store.SessionKey) string {
	return fmt.Sprintf("%s (app %s, user %s)", k.Session, k.App, k.User)
}
