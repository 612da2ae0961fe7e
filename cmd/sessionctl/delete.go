package main

// Deleting one thing: "sessionctl delete ID" removes a runtime session
// and/or a conversation with everything it owns; "agents delete" an agent
// session. Both confirm first (confirm).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/specs"
	"github.com/agentstore/sessionstore/cmd/sessionctl/termout"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/store"
)

// deleteJSON is the JSON document of delete.
type deleteJSON struct {
	ID           string `json:"id"`
	DryRun       bool   `json:"dry_run"`
	Runtime      bool   `json:"runtime_session"`
	Uploads      int64  `json:"uploads"`
	Conversation bool   `json:"conversation"`
	Messages     int64  `json:"messages"`
}

func runDelete(ctx context.Context, g *globals, args []string) error {
	sp := specs.Delete
	fs := g.newFlags(sp)
	facetFlag := fs.String("facet", "", "delete only `FACET`: conversations or runtime")
	yes := fs.Bool("yes", false, "do not ask")
	dryRun := fs.Bool("dry-run", false, "print what would be deleted, delete nothing")
	asJSON := fs.Bool("json", false, "print one JSON document")
	id, err := g.parseID(fs, sp, args, "id")
	if err != nil {
		return err
	}
	switch *facetFlag {
	case "", specs.FacetConversations, specs.FacetRuntime:
	default:
		return g.usageErr(sp.Name, "--facet must be conversations or runtime, not %q", *facetFlag)
	}
	return g.result(sp.Name, g.deleteOne(ctx, sp.Name, id, *facetFlag, *yes, *dryRun, *asJSON))
}

func (g *globals) deleteOne(ctx context.Context, name, id, only string, yes, dryRun, asJSON bool) error {
	return g.withStore(ctx, func(st cliStore) error {
		doc, f, err := loadFacets(ctx, st, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if len(f.sealed) > 0 { // what it would delete cannot be counted without the key
			return f.sealed[0].err
		}
		out := deleteJSON{ID: id, DryRun: dryRun}
		if f.rt != nil && only != specs.FacetConversations {
			out.Runtime = true
			out.Uploads = doc.Runtime.Uploads
		}
		// Removing a runtime session takes its conversation with it.
		if f.conv != nil && (only != specs.FacetRuntime || out.Runtime) {
			out.Conversation = true
			out.Messages = f.conv.MessageCount
		}
		if !out.Runtime && !out.Conversation {
			what := "runtime session or conversation"
			if only != "" {
				what = map[string]string{specs.FacetConversations: "conversation", specs.FacetRuntime: "runtime session"}[only]
			}
			hint := ""
			if f.gov != nil {
				hint = " (a governed session is removed by close, then cleanup)"
			}
			return fmt.Errorf("session %s: no %s to delete%s: %w", id, what, hint, store.ErrNotFound)
		}
		what := deleteText(out)
		if dryRun {
			return g.say(asJSON, out, "would delete %s\n", humanize.Escape(what))
		}
		if err := g.confirm(name, what, yes); err != nil {
			return err
		}
		if out.Runtime {
			if _, err := st.Runtime().Remove(ctx, id); err != nil {
				return withID(id, err)
			}
		} else if err := st.Conversations().Delete(ctx, id); err != nil {
			return withID(id, err)
		}
		return g.say(asJSON, out, "deleted %s\n", humanize.Escape(what))
	})
}

// deleteText names what a delete removes: "runtime session x with 1
// upload and conversation x with 4 messages".
func deleteText(d deleteJSON) string {
	var parts []string
	if d.Runtime {
		parts = append(parts, fmt.Sprintf("runtime session %s with %d %s", d.ID, d.Uploads, clitext.Plural(int(d.Uploads), "upload", "uploads")))
	}
	if d.Conversation {
		parts = append(parts, fmt.Sprintf("conversation %s with %d %s", d.ID, d.Messages, clitext.Plural(int(d.Messages), "message", "messages")))
	}
	return clitext.JoinAnd(parts)
}

// confirm asks before a destructive command deletes what: with yes it does
// not ask; on a terminal it asks on stderr and reads the answer from stdin
// ("y" or "yes" goes on; anything else is errDeclined, exit 1); when stdin
// is not a terminal the command needs --yes (a usage error, exit 2).
func (g *globals) confirm(name, what string, yes bool) error {
	if yes {
		return nil
	}
	if !g.stdinIsTerminal() {
		return &usageError{fmt.Sprintf("refusing to delete %s without --yes: stdin is not a terminal to ask on", what)}
	}
	fmt.Fprintf(g.stderr, "sessionctl %s: delete %s? [y/N] ", name, humanize.Escape(what))
	line, err := bufio.NewReader(g.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}

// errDeclined: the operator answered no; nothing was deleted.
var errDeclined = errors.New("not confirmed: nothing was deleted")

// usageError is a usage error found while a command runs (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// stdinIsTerminal reports whether stdin is a terminal to ask on (tests
// set g.terminalStdin).
func (g *globals) stdinIsTerminal() bool {
	if g.terminalStdin != nil {
		return *g.terminalStdin
	}
	return termout.IsTerminal(g.stdin)
}
