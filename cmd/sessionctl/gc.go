package main

import (
	"context"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var gcSpec = spec{
	name: "gc",
	about: `Applies retention to conversations: --older-than deletes conversations not
updated for that long (with their messages, artifacts, traces, runs and
reports), --keep-last keeps only the last N messages of each conversation
(positions of the kept messages do not change). Deletions run in batches
of 1000 conversations, one transaction each, so that other writers are
never held up for long. Then the WAL is checkpointed and truncated; with
--vacuum the database file is also rewritten without its free pages.
--dry-run only counts what would go.`,
	examples: []string{
		"sessionctl gc --older-than 720h --dry-run",
		"sessionctl gc --older-than 2160h --keep-last 500 --vacuum",
	},
}

// gcBatch is how many conversations one deletion transaction removes.
const gcBatch = 1000

// gcJSON is the JSON document of gc.
type gcJSON struct {
	DryRun               bool   `json:"dry_run"`
	UpdatedBefore        string `json:"updated_before,omitempty"`
	DeletedConversations int64  `json:"deleted_conversations"`
	KeepLast             *int   `json:"keep_last"`
	TrimmedConversations int64  `json:"trimmed_conversations"`
	RemovedMessages      int64  `json:"removed_messages"`
	*WALResult
}

func runGC(ctx context.Context, g *globals, args []string) int {
	sp := gcSpec
	fs := g.newFlags(sp)
	olderThan := fs.Duration("older-than", 0, "delete conversations not updated for `DURATION` (e.g. 720h)")
	keepLast := fs.Int("keep-last", -1, "keep only the last `N` messages of each conversation")
	dryRun := fs.Bool("dry-run", false, "count what would be removed, change nothing")
	vacuum := fs.Bool("vacuum", false, "also rewrite the database file without free pages")
	asJSON := fs.Bool("json", false, "print one JSON document")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
	}
	switch {
	case *olderThan < 0:
		return g.usageErr(sp.name, "--older-than must be positive")
	case *keepLast < -1:
		return g.usageErr(sp.name, "--keep-last must not be negative")
	case *olderThan == 0 && *keepLast < 0:
		return g.usageErr(sp.name, "give --older-than, --keep-last or both")
	}
	st, err := g.openExisting(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	doc := gcJSON{DryRun: *dryRun}
	var cutoff time.Time
	if *olderThan > 0 {
		cutoff = g.clock().Add(-*olderThan)
		doc.UpdatedBefore = jsonTime(cutoff)
	}
	if *keepLast >= 0 {
		doc.KeepLast = keepLast
	}
	if *dryRun {
		err = gcCount(ctx, st, cutoff, *keepLast, &doc)
	} else {
		err = gcRun(ctx, st, cutoff, *keepLast, &doc)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return g.fail(sp.name, err)
	}
	if !*dryRun {
		wal, err := checkpoint(ctx, g.db, *vacuum)
		if err != nil {
			return g.fail(sp.name, err)
		}
		doc.WALResult = &wal
	}
	if *asJSON {
		if err := writeJSON(g.stdout, doc); err != nil {
			return g.fail(sp.name, err)
		}
		return exitOK
	}
	w := g.stdout
	verb, trimVerb := "deleted", "removed"
	if *dryRun {
		verb, trimVerb = "would delete", "would remove"
	}
	if *olderThan > 0 {
		fmt.Fprintf(w, "%s %d %s not updated since %s\n", verb, doc.DeletedConversations,
			plural(int(doc.DeletedConversations), "conversation", "conversations"), tableTime(cutoff))
	}
	if *keepLast >= 0 {
		fmt.Fprintf(w, "%s %d %s from %d %s (keeping the last %d of each)\n", trimVerb, doc.RemovedMessages,
			plural(int(doc.RemovedMessages), "message", "messages"), doc.TrimmedConversations,
			plural(int(doc.TrimmedConversations), "conversation", "conversations"), *keepLast)
	}
	if doc.WALResult != nil {
		printWAL(w, *doc.WALResult)
	}
	return exitOK
}

// gcRun deletes and trims.
func gcRun(ctx context.Context, st *sqlstore.Store, cutoff time.Time, keepLast int, doc *gcJSON) error {
	conv := st.Conversations()
	if !cutoff.IsZero() {
		for {
			n, err := conv.DeleteUpdatedBefore(ctx, cutoff, gcBatch)
			if err != nil {
				return err
			}
			doc.DeletedConversations += n
			if n < gcBatch {
				break
			}
		}
	}
	if keepLast >= 0 {
		r, err := conv.TrimAllMessages(ctx, keepLast)
		if err != nil {
			return err
		}
		doc.TrimmedConversations, doc.RemovedMessages = r.Conversations, r.Removed
	}
	return nil
}

// gcCount counts what gcRun would remove, reading summaries only.
func gcCount(ctx context.Context, st *sqlstore.Store, cutoff time.Time, keepLast int, doc *gcJSON) error {
	f := store.ConversationFilter{Limit: store.MaxPageSize}
	for {
		page, err := st.Conversations().List(ctx, f)
		if err != nil {
			return err
		}
		for _, c := range page.Items {
			if !cutoff.IsZero() && c.UpdatedAt.Before(cutoff) {
				doc.DeletedConversations++
				continue
			}
			if keepLast >= 0 && c.MessageCount > int64(keepLast) {
				doc.TrimmedConversations++
				doc.RemovedMessages += c.MessageCount - int64(keepLast)
			}
		}
		if page.Next == "" {
			return nil
		}
		f.After = page.Next
	}
}
