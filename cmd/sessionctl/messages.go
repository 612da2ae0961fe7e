package main

import (
	"context"
	"fmt"

	"github.com/agentstore/sessionstore/cmd/sessionctl/cliflags"
	"github.com/agentstore/sessionstore/cmd/sessionctl/jsonout"
	"github.com/agentstore/sessionstore/cmd/sessionctl/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/tablefmt"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// maxMessagesLimit bounds --limit (one page of the store, less the probe
// message that tells whether more follow).
const maxMessagesLimit = store.MaxMessagePage - 1

// messagesJSON is the JSON document of messages. NextFrom is the --from
// of the next page, null on the last page.
type messagesJSON struct {
	ID           string          `json:"id"`
	MessageCount int64           `json:"message_count"`
	Messages     []store.Message `json:"messages"`
	NextFrom     *int64          `json:"next_from"`
}

func runMessages(ctx context.Context, g *globals, args []string) error {
	sp := specs.Messages
	fs := g.newFlags(sp)
	from := fs.Int64("from", 0, "first message position `N`")
	limit := fs.Int("limit", 50, fmt.Sprintf("at most `N` messages (1 to %d)", maxMessagesLimit))
	last := fs.Int("last", 0, "only the last `N` messages (instead of --from and --limit)")
	width := fs.Int("width", 100, "cut message text in tables to `N` characters")
	asJSON := fs.Bool("json", false, "print one JSON document (with --follow: one object per line)")
	followFlag := fs.Bool("follow", false, "then print new messages as they commit, until interrupted")
	pos, err := g.parseArgs(fs, sp, args, 1, 1)
	if err != nil {
		return err
	}
	id := pos[0]
	switch {
	case store.ValidateID("id", id) != nil:
		return g.usageErr(sp.Name, "%v", store.ValidateID("id", id))
	case *from < 0:
		return g.usageErr(sp.Name, "--from must not be negative")
	case *limit < 1 || *limit > maxMessagesLimit:
		return g.usageErr(sp.Name, "--limit must be between 1 and %d", maxMessagesLimit)
	case *last < 0 || *last > maxMessagesLimit:
		return g.usageErr(sp.Name, "--last must be between 0 and %d", maxMessagesLimit)
	case cliflags.IsSet(fs, "last") && (cliflags.IsSet(fs, "from") || cliflags.IsSet(fs, "limit")):
		return g.usageErr(sp.Name, "--last does not go with --from or --limit")
	case *width < 10:
		return g.usageErr(sp.Name, "--width must be at least 10")
	case *followFlag && cliflags.IsSet(fs, "limit"):
		return g.usageErr(sp.Name, "--limit does not go with --follow")
	}
	return g.result(sp.Name, g.withStore(ctx, func(st cliStore) error {
		if *followFlag {
			return followMessages(ctx, g, st, id, *from, *last, cliflags.IsSet(fs, "last"), *width, *asJSON)
		}
		conv := st.Conversations()
		doc := messagesJSON{ID: id}
		switch {
		case cliflags.IsSet(fs, "last") && *last == 0:
			doc.Messages = []store.Message{} // zero means zero, not "all"
		case cliflags.IsSet(fs, "last"):
			doc.Messages, err = conv.LastMessages(ctx, id, *last)
		default:
			doc.Messages, err = conv.Messages(ctx, id, *from, *limit+1)
			if err == nil && len(doc.Messages) > *limit {
				next := doc.Messages[*limit].Seq
				doc.NextFrom = &next
				doc.Messages = doc.Messages[:*limit]
			}
		}
		if err == nil {
			doc.MessageCount, err = conv.MessageCount(ctx, id)
		}
		if err != nil {
			return withID(id, err)
		}
		if *asJSON {
			return jsonout.Write(g.stdout, doc)
		}
		if len(doc.Messages) == 0 {
			fmt.Fprintf(g.stdout, "no messages (the conversation has %d)\n", doc.MessageCount)
			return nil
		}
		tw := tablefmt.NewWriter(g.stdout)
		fmt.Fprintln(tw, "SEQ\tROLE\tCREATED\tTEXT")
		for _, m := range doc.Messages {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Seq, humanize.Escape(m.Role), tablefmt.Time(m.CreatedAt), tablefmt.Clip(render.MessageText(m), *width))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if doc.NextFrom != nil {
			fmt.Fprintf(g.stderr, "more messages follow: add --from %d for the next page\n", *doc.NextFrom)
		}
		return nil
	}))
}

// followMessages prints the conversation's messages from position from
// (or its last ones, with useLast) and then as they commit.
func followMessages(ctx context.Context, g *globals, st store.Store, id string, from int64, last int, useLast bool, width int, asJSON bool) error {
	conv := st.Conversations()
	if useLast {
		// Start at the first of the last messages, or after the last one
		// for --last 0; an empty conversation starts at 0.
		msgs, err := conv.LastMessages(ctx, id, max(last, 1))
		if err != nil {
			return withID(id, err)
		}
		switch {
		case len(msgs) == 0:
			from = 0
		case last == 0:
			from = msgs[len(msgs)-1].Seq + 1
		default:
			from = msgs[0].Seq
		}
	} else if ok, err := conv.Exists(ctx, id); err != nil || !ok {
		if err == nil {
			err = store.ErrNotFound
		}
		return withID(id, err)
	}
	w := []int{5, 9, 20}
	feed := st.Feed().Messages(ctx, store.MessageFeed{ID: id, From: store.Position{Seq: from}, Limit: followLimit})
	err := follow(ctx, g, feed, asJSON, tablefmt.Cols(w, "SEQ", "ROLE", "CREATED", "TEXT"), func(m store.Message) string {
		return tablefmt.Cols(w, fmt.Sprint(m.Seq), humanize.Escape(m.Role), tablefmt.Time(m.CreatedAt), tablefmt.Clip(render.MessageText(m), width))
	})
	return withID(id, followErr("conversation "+id, err))
}
