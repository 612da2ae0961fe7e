package main

// Branching agent sessions on the command line (store.AgentBranches):
// "sessionctl fork" forks a session at an event, "sessionctl rewind"
// rewinds one (reversibly), "sessionctl history" prints the tree a
// session belongs to. Lineage here is the store's fork tree; it is not
// the a3s conversation's own parent field, which "list --parent" filters
// on.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/store"
)

// sessionKeyArgs parses APP USER SESSION.
func (g *globals) sessionKeyArgs(sp spec, pos []string) (store.SessionKey, error) {
	if err := g.wantArgs(sp, pos, 3, 3); err != nil {
		return store.SessionKey{}, err
	}
	k := store.SessionKey{App: pos[0], User: pos[1], Session: pos[2]}
	for i, field := range []string{"app", "user", "session"} {
		if err := store.ValidateID(field, pos[i]); err != nil {
			return k, g.usageErr(sp.Name, "%v", err)
		}
	}
	return k, nil
}

// forkJSON is the JSON document of fork.
type forkJSON struct {
	From       store.SessionKey `json:"from"`
	At         int64            `json:"at"`
	Key        store.SessionKey `json:"key"`
	EventCount int64            `json:"event_count"`
}

func runFork(ctx context.Context, g *globals, args []string) error {
	sp := specs.Fork
	fs := g.newFlags(sp)
	at := fs.Int64("at", -1, "fork after event `N` (a conversation: message position N; 0: no events; default: the last)")
	as := fs.String("as", "", "the fork's session id `ID` (default: random)")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if cliflags.IsSet(fs, "at") && *at < 0 {
		return g.usageErr(sp.Name, "--at must not be negative")
	}
	if id, ok, err := g.convTarget(sp, pos); ok || err != nil {
		if err != nil {
			return err
		}
		return forkConversation(ctx, g, sp, fs, id, *at, *as, *asJSON) // branches_conv.go
	}
	key, err := g.sessionKeyArgs(sp, pos)
	if err != nil {
		return err
	}
	if *as != "" {
		if err := store.ValidateID("session", *as); err != nil {
			return g.usageErr(sp.Name, "--as: %v", err)
		}
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		as2 := st.AgentSessions()
		point := *at
		if point < 0 {
			cur, err := as2.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
			if err != nil {
				return err
			}
			point = cur.EventCount
		}
		f, err := as2.Fork(ctx, store.ForkRequest{Key: key, At: point, Session: *as})
		if err != nil {
			return err
		}
		return g.say(*asJSON, forkJSON{From: key, At: point, Key: f.Key, EventCount: f.EventCount}, "forked %s at event %d as %s (%d %s)\n", key.Session, point, f.Key.Session,
			f.EventCount, clitext.Plural(int(f.EventCount), "event", "events"))
	}))
}

// rewindJSON is the JSON document of rewind.
type rewindJSON struct {
	Key        store.SessionKey `json:"key"`
	EventCount int64            `json:"event_count"`
	Version    int64            `json:"version"`
	Superseded int64            `json:"superseded"`
}

func runRewind(ctx context.Context, g *globals, args []string) error {
	sp := specs.Rewind
	fs := g.newFlags(sp)
	to := fs.Int64("to", -1, "keep the events up to `N` (0: none; a conversation: the messages up to position N, -1: none)")
	superseded := fs.Bool("superseded", false, "list the superseded events instead")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if id, ok, err := g.convTarget(sp, pos); ok || err != nil {
		if err != nil {
			return err
		}
		return rewindConversation(ctx, g, sp, fs, id, *to, *superseded, *asJSON) // branches_conv.go
	}
	key, err := g.sessionKeyArgs(sp, pos)
	if err != nil {
		return err
	}
	switch {
	case *superseded && cliflags.IsSet(fs, "to"):
		return g.usageErr(sp.Name, "--to does not apply with --superseded")
	case !*superseded && *to < 0:
		return g.usageErr(sp.Name, "--to N is required (0 or more)")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		as := st.AgentSessions()
		if *superseded {
			runs, err := as.Superseded(ctx, key)
			if err != nil {
				return err
			}
			var rows []string
			for _, r := range runs {
				for _, ev := range r.Events {
					rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s\t%s", tablefmt.Time(r.RewoundAt), ev.Seq, ev.ID, ev.InvocationID, jsonout.Time(ev.Timestamp)))
				}
			}
			return g.result(sp.Name, render.PrintListing(g.stdout, g.stderr, *asJSON, render.Listing[string]{Doc: runs, Items: rows, Row: render.Same,
				None: "no superseded events in " + key.Session, Header: "REWOUND\tSEQ\tEVENT\tINVOCATION\tTIMESTAMP"}))
		}
		before, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key})
		if err != nil {
			return err
		}
		s, err := as.Rewind(ctx, store.RewindRequest{Key: key, To: *to, ExpectedVersion: before.Version})
		if err != nil {
			return err
		}
		n := before.EventCount - s.EventCount
		return g.say(*asJSON, rewindJSON{Key: key, EventCount: s.EventCount, Version: s.Version, Superseded: n}, "rewound %s to event %d: %d %s superseded (sessionctl rewind --superseded lists them)\n",
			key.Session, s.EventCount, n, clitext.Plural(int(n), "event", "events"))
	}))
}

func runHistory(ctx context.Context, g *globals, args []string) error {
	sp := specs.History
	fs := g.newFlags(sp)
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, err := g.parse(fs, sp, args)
	if err != nil {
		return err
	}
	if id, ok, err := g.convTarget(sp, pos); ok || err != nil {
		if err != nil {
			return err
		}
		return historyConversation(ctx, g, sp, id, *asJSON) // branches_conv.go
	}
	key, err := g.sessionKeyArgs(sp, pos)
	if err != nil {
		return err
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		nodes, err := st.AgentSessions().History(ctx, key)
		if err != nil {
			return err
		}
		if *asJSON {
			return jsonout.Write(g.stdout, nodes)
		}
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "SESSION\tSTATUS\tFORKED AT\tEVENTS\tCOMPACTED\tCREATED")
		depths := store.LineageDepths(nodes)
		for i, n := range nodes {
			name := strings.Repeat("  ", depths[i]) + n.Key.Session
			if n.Current {
				name += " *"
			}
			fork := "-"
			if n.Parent != 0 {
				fork = fmt.Sprint(n.ForkSeq)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, n.Status, fork, n.EventCount, compactedText(n.Compactions), tablefmt.Time(n.CreatedAt))
		}
		return tw.Flush()
	}))
}

// compactedText lists the ranges a node's compaction records summarise
// (an agent session's or a conversation's): "1-40@41 ..." ("-" for none).
func compactedText(c map[int64]store.CompactionRange) string {
	if len(c) == 0 {
		return "-"
	}
	var parts []string
	for _, seq := range slices.Sorted(maps.Keys(c)) {
		r := c[seq]
		parts = append(parts, fmt.Sprintf("%d-%d@%d", r.From, r.To, seq))
	}
	return strings.Join(parts, " ")
}
