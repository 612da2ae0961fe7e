package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/clitext"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/render"
	"github.com/agentstore/sessionstore/cmd/sessionctl/internal/tablefmt"
	"github.com/agentstore/sessionstore/demo"
	"github.com/agentstore/sessionstore/humanize"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var demoSpec = spec{
	Name: "demo",
	About: `Shows what the store does, on the database of --db (default ./sessions.db):
creates a governed session with a budget of 3 calls and spends it (an
unauthorized tool and the call past the budget are refused); records the
same session's conversation (messages with a tool call, usage and cost);
registers it with the runtime, stores an upload (content-addressed by
SHA-256) and runs a turn that a client cancels (the cause is recorded
durably and read back once); lets a cost limit stop the agent (each model
call reserves an upper bound and settles what it cost, until the next
reservation would pass the limit) and verifies the audit trail of every
decision; branches an agent session's history (a compaction record that
summarises its first events, and a fork that continues on its own); and
prints what was stored. The file is created when it does not
exist; an existing database is kept and the demo adds its own sessions to
it, unless --fresh removes it first.

--fresh removes only a session store that no other process holds (open,
locked or writing), and only one that holds nothing but what earlier demos
wrote; a database with other data is removed only with --yes as well. A
file that is not a session store is never removed. Inspect the result with
"sessionctl list" and "sessionctl show ID". On PostgreSQL the store's
tables are created in the schema when missing; --fresh is refused (drop
the schema yourself).`,
	Examples: []string{
		"sessionctl demo",
		"sessionctl --db /tmp/demo.db demo --fresh && sessionctl --db /tmp/demo.db list",
	},
}

func runDemo(ctx context.Context, g *globals, args []string) error {
	sp := demoSpec
	fs := g.newFlags(sp)
	fresh := fs.Bool("fresh", false, "remove the database file (and its -wal, -shm, -writer.lock) first: only a session store no other process holds")
	yes := fs.Bool("yes", false, "with --fresh, also remove a database holding data the demo did not write")
	if _, err := g.parseArgs(fs, sp, args, 0, 0); err != nil {
		return err
	}
	if *fresh && g.isPG() {
		return g.fail(sp.Name, errNotOnPostgres("demo --fresh", "drop and recreate the schema yourself"))
	}
	var existed bool
	switch err := g.mustExist(ctx); {
	case err == nil:
		existed = true
	case g.isPG():
		var none *errNoStore
		if !errors.As(err, &none) {
			return g.fail(sp.Name, err)
		}
	}
	if *yes && !*fresh {
		return g.usageErr(sp.Name, "--yes goes with --fresh")
	}
	if *fresh && existed {
		if err := removeForDemo(ctx, g.db, *yes); err != nil {
			return g.fail(sp.Name, err)
		}
		existed = false
	}
	st, err := g.openOrCreate(ctx)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	defer st.Close()
	out := g.stdout
	if existed {
		fmt.Fprintf(out, "database: %s (existing; the demo adds its sessions, --fresh starts over)\n", g.dbName())
	} else {
		fmt.Fprintf(out, "database: %s (new)\n", g.dbName())
	}
	res, err := demo.Seed(ctx, st)
	printDemo(out, res)
	if err != nil {
		return g.fail(sp.Name, err)
	}
	id := res.Governed.Session.ID
	fmt.Fprintf(out, "\nnext: sessionctl --db %s show %s\n", clitext.ShellQuote(g.dbName()), id)
	return nil
}

// printDemo prints what the demo wrote and read back, step by step; the
// steps a failure stopped are nil.
func printDemo(out io.Writer, r demo.Result) {
	if r.Governed != nil {
		printDemoGoverned(out, r.Governed)
	}
	if r.Conversation != nil {
		printDemoConversation(out, r.Governed.Session.ID, r.Conversation)
	}
	if r.Runtime != nil {
		printDemoRuntime(out, r.Runtime)
	}
	if r.Spend != nil {
		printDemoSpend(out, r.Governed.Session.ID, r.Spend)
	}
	if r.ConversationFork != nil {
		printDemoConversationFork(out, r.ConversationFork)
	}
	if r.AgentSession != nil {
		printDemoAgentSession(out, r.AgentSession)
	}
	// The search folded into the index what the demo wrote (a command
	// runs no background indexer), so that the console of sessionctl
	// serve, which is read-only and cannot fold, finds it too.
	for _, h := range r.SearchHits {
		fmt.Fprintf(out, "\nsearch: \"durable\" is said in %s #%d of conversation %s (sessionctl search durable, or the console's search box)\n",
			h.Kind, h.Seq, h.SessionID)
	}
	if r.Policies != nil {
		fmt.Fprintf(out, "\nretention: %d policies stored (sessionctl retention); sessionctl sweep --dry-run says what they would remove\n",
			len(r.Policies))
	}
}

// printDemoGoverned: a budget of 3 calls spent, with the refusals.
func printDemoGoverned(out io.Writer, g *demo.Governed) {
	sess := g.Session
	fmt.Fprintf(out, "\ngoverned session %s\n  agent %s, tools %v, budget %d calls, expires in %s\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget, humanize.Duration(sess.TimeLimit))
	for _, u := range g.Uses {
		if u.Refused != nil {
			r, _ := useRefusal(u.Refused)
			fmt.Fprintf(out, "  use %-12s refused (%s): %v\n", u.Tool, r.kind, u.Refused)
			continue
		}
		fmt.Fprintf(out, "  use %-12s allowed: %d of %d calls made\n", u.Tool, u.Session.CallsMade, u.Session.CallBudget)
	}
	fmt.Fprintf(out, "  stored durably: %d of %d calls made, status %s\n", g.Final.CallsMade, g.Final.CallBudget, g.Final.Status)
}

// printDemoConversation: messages with a tool call and its result, usage
// and cost, appended in one transaction.
func printDemoConversation(out io.Writer, id string, c *demo.Conversation) {
	fmt.Fprintf(out, "\nconversation %s\n  appended %d messages in one transaction (positions %d to %d)\n",
		id, c.Appended.MessageCount, c.Appended.FirstSeq, c.Appended.MessageCount-1)
	for _, m := range c.Last {
		fmt.Fprintf(out, "  #%d %-9s %s\n", m.Seq, m.Role, tablefmt.Clip(render.MessageText(m), 70))
	}
	// The spend section below settles its calls into this conversation
	// too: these are its totals so far.
	fmt.Fprintf(out, "  stored durably: %d messages; usage so far %d tokens, %s\n", c.Info.MessageCount, c.Info.TotalUsage.TotalTokens, render.USD(c.Info.TotalCost))
}

// printDemoRuntime: the runtime session, its upload and the turn a
// client cancelled.
func printDemoRuntime(out io.Writer, r *demo.Runtime) {
	s := r.Session
	fmt.Fprintf(out, "\nruntime session %s\n  agent %s, mode %s, owner %s, overrides: %s, history %d messages\n",
		s.ID, s.AgentAlias, s.ChatMode, s.OwnerID, render.Overrides(r.Overrides), r.HistoryLen)
	fmt.Fprintf(out, "  upload %s: %d bytes, sha256 %s...\n", r.Upload.RefID, r.Upload.SizeBytes, r.Upload.SHA256[:16])
	fmt.Fprintf(out, "  turn %d started\n", r.Generation)
	fmt.Fprintf(out, "  turn %d cancelled by the client: the turn's context reports %s\n", r.Generation, r.ContextCause)
	fmt.Fprintf(out, "  recorded cause read back: %s (%v), a second read finds it taken (%v)\n", r.Cause, r.Taken, r.TakenAgain)
	fmt.Fprintf(out, "  stored durably: turn %s, 1 upload\n", render.Turn(r.Final.Turn))
}

// printDemoSpend: a cost limit stopping the agent, and the audit trail
// that recorded every decision.
func printDemoSpend(out io.Writer, id string, s *demo.Spend) {
	fmt.Fprintf(out, "\nspend-limited session %s\n  agent %s, at most 0.05 USD and 100000 tokens per hour\n", s.Session.ID, s.Session.AgentID)
	for call := 1; call <= s.Settled; call++ {
		fmt.Fprintf(out, "  call %d: reserved %s, settled %s (%d tokens)\n", call, humanize.Money(s.Bound.CostMicros, demo.Currency),
			humanize.Money(s.Actual.CostMicros, demo.Currency), s.Actual.TotalTokens())
	}
	if se := s.Limit; se != nil {
		fmt.Fprintf(out, "  call %d: reserve %s refused (%v): %s spent, %s reserved of %s\n", s.Settled+1, humanize.Money(s.Bound.CostMicros, demo.Currency),
			s.Refusal, humanize.Money(se.Spent, se.Currency), humanize.Money(se.Reserved, se.Currency), humanize.Money(se.Limit, se.Currency))
	}
	fmt.Fprintf(out, "  conversation %s now: %d tokens, %s (the settled calls' usage added)\n",
		id, s.Conversation.TotalUsage.TotalTokens, render.USD(s.Conversation.TotalCost))
	cost := s.Status.Limits[0]
	fmt.Fprintf(out, "  stored durably: %s spent of %s, nothing reserved; the agent is stopped\n",
		humanize.Money(cost.Spent, cost.Currency), humanize.Money(cost.Limit, cost.Currency))
	verdict := "verify"
	if !s.Audit.OK() {
		verdict = "DO NOT verify"
	}
	fmt.Fprintf(out, "  audit: %d decisions of this session recorded; %d %s with %d %s %s\n", s.AuditEvents,
		s.Audit.Chains, clitext.Plural(int(s.Audit.Chains), "chain", "chains"), s.Audit.Events, clitext.Plural(int(s.Audit.Events), "event", "events"), verdict)
}

// printDemoConversationFork: the conversation forked after its tool call,
// its compaction record, and the tree.
func printDemoConversationFork(out io.Writer, f *demo.ConversationFork) {
	read := []string{fmt.Sprintf("#%d (the record)", f.Tail.Summary.Seq)}
	for _, m := range f.Tail.Messages {
		read = append(read, fmt.Sprintf("#%d", m.Seq))
	}
	fmt.Fprintf(out, "\nconversation %s\n  forked %s at message 1 (no messages copied), then its own answer at #2\n", f.ID, f.From)
	fmt.Fprintf(out, "  compaction record at message %d summarises messages 0-1 (the originals stay); a summary read returns %s\n",
		f.Compaction.FirstSeq, strings.Join(read, ", "))
	fmt.Fprintf(out, "  the tree (sessionctl history %s):\n", f.ID)
	depths := store.ConversationDepths(f.History)
	for i, n := range f.History {
		fmt.Fprintf(out, "    %s%s: %d messages, %s\n", strings.Repeat("  ", depths[i]), n.ID, n.Messages, n.Status)
	}
}

// printDemoAgentSession: an agent session's history as a tree (a
// compaction record, a fork that goes on on its own), and what a runtime
// reads back ("latest summary + what follows").
func printDemoAgentSession(out io.Writer, a *demo.AgentSession) {
	key, retry := a.Key, a.Fork
	fmt.Fprintf(out, "\nagent session %s/%s/%s\n  6 events, each setting session state step\n", key.App, key.User, key.Session)
	fmt.Fprintf(out, "  compaction record at event %d summarises events 1-4 (the originals stay); a summary read returns %s\n",
		a.Compaction.Event.Seq, eventIDList(a.SummaryRead))
	fmt.Fprintf(out, "  forked at event 5 as %s (no events copied; its state then: step %s), which went on: %s\n",
		retry.Session, a.ForkState.State.Session["step"], eventIDList(a.ForkEvents))
	fmt.Fprintf(out, "  the tree (sessionctl history %s %s %s):\n", retry.App, retry.User, retry.Session)
	depths := store.LineageDepths(a.History)
	for i, n := range a.History {
		fmt.Fprintf(out, "    %*s%s: %d events, %s\n", 2*depths[i], "", n.Key.Session, n.EventCount, n.Status)
	}
}

// eventIDList is "a, b, c".
func eventIDList(evs []store.AgentEvent) string {
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.ID
	}
	return strings.Join(ids, ", ")
}

// removeForDemo removes the database at path and the files beside it for
// demo --fresh (demo.Remove), its refusals in the command's words:
// nothing is removed when a check fails.
func removeForDemo(ctx context.Context, path string, yes bool) error {
	err := demo.Remove(ctx, path, yes)
	var notStore *demo.NotStoreError
	var foreign *demo.ForeignDataError
	var inUse *sqlstore.InUseError
	switch {
	case errors.As(err, &notStore) && notStore.Err != nil:
		return fmt.Errorf("%s is not a session store, demo --fresh does not remove it: %w", path, notStore.Err)
	case errors.As(err, &notStore):
		return fmt.Errorf("%s is not a session store (no %s table): demo --fresh does not remove it", path, migrations.TableName)
	case errors.As(err, &foreign):
		return fmt.Errorf("%s holds data the demo did not write (%s): give --yes as well to remove it, or choose another --db", path, strings.Join(foreign.Found, ", "))
	case errors.As(err, &inUse):
		return fmt.Errorf("%v: demo --fresh does not remove a database another process holds", inUse)
	}
	return err
}
