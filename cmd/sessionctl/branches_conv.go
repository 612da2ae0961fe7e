package main

// fork, rewind and history for conversations (store.ConversationBranches):
// the same commands as for agent sessions, addressed by one conversation
// id instead of APP USER SESSION. Lineage is the store's fork tree, not
// the conversation's own parent field ("list --parent").

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// convTarget tells whether the positional arguments name one
// conversation (one argument) rather than an agent session (three), and
// checks the id.
func (g *globals) convTarget(sp spec, pos []string) (string, bool, error) {
	if len(pos) != 1 {
		return "", false, nil
	}
	if err := store.ValidateID("id", pos[0]); err != nil {
		return "", true, g.usageErr(sp.Name, "%v", err)
	}
	return pos[0], true, nil
}

// convForkJSON is the JSON document of fork for a conversation.
type convForkJSON struct {
	From         string `json:"from"`
	At           int64  `json:"at"`
	ID           string `json:"id"`
	MessageCount int64  `json:"message_count"`
}

func forkConversation(ctx context.Context, g *globals, sp spec, fs *flag.FlagSet, id string, at int64, as string, asJSON bool) error {
	if as != "" {
		if err := store.ValidateID("id", as); err != nil {
			return g.usageErr(sp.Name, "--as: %v", err)
		}
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		c := st.Conversations()
		if !cliflags.IsSet(fs, "at") {
			last, err := c.LastMessages(ctx, id, 1)
			if err != nil {
				return withID(id, err)
			}
			if len(last) == 0 {
				return store.Invalid("id", "the conversation has no messages to fork")
			}
			at = last[0].Seq
		}
		f, err := c.Fork(ctx, store.ConversationForkRequest{ID: id, At: at, NewID: as})
		if err != nil {
			return withID(id, err)
		}
		return g.say(asJSON, convForkJSON{From: id, At: at, ID: f.ID, MessageCount: f.MessageCount}, "forked conversation %s at message %d as %s (%d %s)\n", id, at, f.ID,
			f.MessageCount, clitext.Plural(int(f.MessageCount), "message", "messages"))
	}))
}

// convRewindJSON is the JSON document of rewind for a conversation.
type convRewindJSON struct {
	ID           string `json:"id"`
	MessageCount int64  `json:"message_count"`
	Version      int64  `json:"version"`
	Superseded   int64  `json:"superseded"`
}

func rewindConversation(ctx context.Context, g *globals, sp spec, fs *flag.FlagSet, id string, to int64, superseded, asJSON bool) error {
	switch {
	case superseded && cliflags.IsSet(fs, "to"):
		return g.usageErr(sp.Name, "--to does not apply with --superseded")
	case !superseded && !cliflags.IsSet(fs, "to"):
		return g.usageErr(sp.Name, "--to N is required (the last message kept; -1: none)")
	case to < -1:
		return g.usageErr(sp.Name, "--to must be -1 or a position")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		c := st.Conversations()
		if superseded {
			runs, err := c.Superseded(ctx, id)
			if err != nil {
				return withID(id, err)
			}
			var rows []string
			for _, r := range runs {
				for _, m := range r.Messages {
					rows = append(rows, fmt.Sprintf("%s\t%d\t%s\t%s", tablefmt.Time(r.RewoundAt), m.Seq, humanize.Escape(m.Role), tablefmt.Clip(render.MessageText(m), 60)))
				}
			}
			return g.result(sp.Name, render.PrintListing(g.stdout, g.stderr, asJSON, render.Listing[string]{Doc: runs, Items: rows, Row: render.Same,
				None: "no superseded messages in " + id, Header: "REWOUND\tSEQ\tROLE\tTEXT"}))
		}
		before, err := c.Info(ctx, id)
		if err != nil {
			return withID(id, err)
		}
		s, err := c.Rewind(ctx, store.ConversationRewindRequest{ID: id, To: to, ExpectVersion: before.Version})
		if err != nil {
			return withID(id, err)
		}
		n := before.MessageCount - s.MessageCount
		return g.say(asJSON, convRewindJSON{ID: id, MessageCount: s.MessageCount, Version: s.Version, Superseded: n}, "rewound conversation %s to message %d: %d %s superseded (sessionctl rewind %s --superseded lists them)\n",
			id, to, n, clitext.Plural(int(n), "message", "messages"), id)
	}))
}

func historyConversation(ctx context.Context, g *globals, sp spec, id string, asJSON bool) error {
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		nodes, err := st.Conversations().History(ctx, id)
		if err != nil {
			return withID(id, err)
		}
		if asJSON {
			return jsonout.Write(g.stdout, nodes)
		}
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "CONVERSATION\tSTATUS\tFORKED AT\tMESSAGES\tCOMPACTED\tCREATED")
		depths := store.ConversationDepths(nodes)
		for i, n := range nodes {
			name := n.ID
			if n.Status != store.NodeLive {
				name = "(" + n.Status + ")" // retired ids are internal
			}
			name = strings.Repeat("  ", depths[i]) + name
			if n.Current {
				name += " *"
			}
			fork := "-"
			if n.Parent != "" {
				fork = fmt.Sprint(n.ForkNext - 1)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, n.Status, fork, n.Messages, compactedText(n.Compactions), tablefmt.Time(n.CreatedAt))
		}
		return tw.Flush()
	}))
}
