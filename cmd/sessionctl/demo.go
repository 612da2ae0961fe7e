package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/facet"
	"github.com/agentstore/sessionstore/migrations"
	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var demoSpec = spec{
	name: "demo",
	about: `Shows what the store does, on the database of --db (default ./sessions.db):
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
	examples: []string{
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
		return g.fail(sp.name, errNotOnPostgres("demo --fresh", "drop and recreate the schema yourself"))
	}
	var existed bool
	switch err := g.mustExist(ctx); {
	case err == nil:
		existed = true
	case g.isPG():
		var none *errNoStore
		if !errors.As(err, &none) {
			return g.fail(sp.name, err)
		}
	}
	if *yes && !*fresh {
		return g.usageErr(sp.name, "--yes goes with --fresh")
	}
	if *fresh && existed {
		if err := removeForDemo(ctx, g.db, *yes); err != nil {
			return g.fail(sp.name, err)
		}
		existed = false
	}
	st, err := g.openOrCreate(ctx)
	if err != nil {
		return g.fail(sp.name, err)
	}
	defer st.Close()
	out := g.stdout
	if existed {
		fmt.Fprintf(out, "database: %s (existing; the demo adds its sessions, --fresh starts over)\n", g.dbName())
	} else {
		fmt.Fprintf(out, "database: %s (new)\n", g.dbName())
	}
	id, err := demoGovernance(ctx, out, st)
	if err != nil {
		return g.fail(sp.name, err)
	}
	if err := demoConversation(ctx, out, st, id); err != nil {
		return g.fail(sp.name, err)
	}
	if err := demoRuntime(ctx, out, st, id); err != nil {
		return g.fail(sp.name, err)
	}
	if err := demoSpend(ctx, out, st, id); err != nil { // demo_spend.go
		return g.fail(sp.name, err)
	}
	if err := demoConversationBranches(ctx, out, st, id); err != nil { // demo_conv_branches.go
		return g.fail(sp.name, err)
	}
	if err := demoBranches(ctx, out, st, id); err != nil { // demo_branches.go
		return g.fail(sp.name, err)
	}
	if err := demoSearch(ctx, out, st, id); err != nil {
		return g.fail(sp.name, err)
	}
	if err := demoRetention(ctx, out, st, g.dbName()); err != nil { // retention.go
		return g.fail(sp.name, err)
	}
	fmt.Fprintf(out, "\nnext: sessionctl --db %s show %s\n", shellQuote(g.dbName()), id)
	return nil
}

// demoSearch finds the demo's answer by what it says. A search first
// folds into the index what the demo wrote (a command runs no background
// indexer), so that the console of sessionctl serve, which is read-only
// and cannot fold, finds it too.
func demoSearch(ctx context.Context, out io.Writer, st cliStore, id string) error {
	res, err := st.Search(ctx, store.SearchQuery{Query: "durable", Session: id, Limit: 1})
	if errors.Is(err, store.ErrSearchDisabled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("search: %w", err)
	}
	for _, h := range res.Hits {
		fmt.Fprintf(out, "\nsearch: \"durable\" is said in %s #%d of conversation %s (sessionctl search durable, or the console's search box)\n",
			h.Kind, h.Seq, h.SessionID)
	}
	return nil
}

// demoGovernance creates a governed session with a budget of 3 and spends
// it, showing the refusals. It returns the session id.
func demoGovernance(ctx context.Context, out io.Writer, st cliStore) (string, error) {
	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         demoAgent,
		DeclaredIntent:  "summarize the repository",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      3,
	})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(out, "\ngoverned session %s\n  agent %s, tools %v, budget %d calls, expires in %s\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget, durationText(sess.TimeLimit))
	for _, tool := range []string{"list_dir", "read_file", "delete_file", "read_file", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: demoAgent, Tools: []string{tool}})
		if r, ok := useRefusal(err); ok {
			fmt.Fprintf(out, "  use %-12s refused (%s): %v\n", tool, r.kind, err)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("use: %w", err)
		}
		fmt.Fprintf(out, "  use %-12s allowed: %d of %d calls made\n", tool, s.CallsMade, s.CallBudget)
	}
	final, err := gov.Get(ctx, sess.ID)
	if err != nil {
		return "", fmt.Errorf("get: %w", err)
	}
	fmt.Fprintf(out, "  stored durably: %d of %d calls made, status %s\n", final.CallsMade, final.CallBudget, final.Status)
	return sess.ID, nil
}

// demoConversation records the conversation of session id: messages with
// a tool call and its result, usage and cost, appended in one transaction.
func demoConversation(ctx context.Context, out io.Writer, st cliStore, id string) error {
	conv := st.Conversations()
	c := store.NewConversation(id)
	c.Config.Name = "summarize the repository"
	c.Config.Workspace = "/srv/demo-workspace"
	c.ModelName = "demo-model"
	c.ToolNames = []string{"read_file", "list_dir"}
	if _, err := conv.Save(ctx, c); err != nil {
		return fmt.Errorf("save conversation: %w", err)
	}
	cost := 0.0042
	res, err := conv.Append(ctx, store.AppendRequest{
		ID: id,
		Messages: []store.Message{
			store.UserMessage("Summarize this repository in one sentence."),
			{Role: store.RoleAssistant, Content: []store.ContentBlock{
				store.TextBlock("Let me look at the files."),
				store.ToolUseBlock("call-1", "list_dir", json.RawMessage(`{"path":"."}`)),
			}},
			{Role: store.RoleUser, Content: []store.ContentBlock{
				store.ToolResultBlock("call-1", "README.md go.mod sqlstore/ store/", false),
			}},
			store.AssistantMessage("A durable session store for agent runtimes on embedded SQLite."),
		},
		Usage:       &store.TokenUsage{PromptTokens: 1200, CompletionTokens: 85, TotalTokens: 1285},
		Cost:        cost,
		CostRecords: []store.CostRecord{{Model: "demo-model", Provider: "demo", PromptTokens: 1200, CompletionTokens: 85, TotalTokens: 1285, CostUSD: &cost}},
	})
	if err != nil {
		return fmt.Errorf("append messages: %w", err)
	}
	fmt.Fprintf(out, "\nconversation %s\n  appended %d messages in one transaction (positions %d to %d)\n",
		id, res.MessageCount, res.FirstSeq, res.MessageCount-1)
	last, err := conv.LastMessages(ctx, id, 2)
	if err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	for _, m := range last {
		fmt.Fprintf(out, "  #%d %-9s %s\n", m.Seq, m.Role, clip(messageText(m), 70))
	}
	info, err := conv.Info(ctx, id)
	if err != nil {
		return fmt.Errorf("conversation info: %w", err)
	}
	// The spend section below settles its calls into this conversation
	// too: these are its totals so far.
	fmt.Fprintf(out, "  stored durably: %d messages; usage so far %d tokens, %s\n", info.MessageCount, info.TotalUsage.TotalTokens, usd(info.TotalCost))
	return nil
}

// demoRuntime registers session id with the runtime, stores an upload and
// runs a turn that a client cancels.
func demoRuntime(ctx context.Context, out io.Writer, st cliStore, id string) error {
	rt := st.Runtime()
	s, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: demoAgent,
		WorkspaceDir: "/srv/demo-workspace", ChatMode: store.ChatModeChat, OwnerID: "demo-client"})
	if err != nil {
		return fmt.Errorf("runtime insert: %w", err)
	}
	model := "demo-model-large"
	o, err := rt.SetOverrides(ctx, id, store.Overrides{Model: &model})
	if err != nil {
		return fmt.Errorf("overrides: %w", err)
	}
	n, err := rt.HistoryLen(ctx, id)
	if err != nil {
		return fmt.Errorf("history length: %w", err)
	}
	fmt.Fprintf(out, "\nruntime session %s\n  agent %s, mode %s, owner %s, overrides: %s, history %d messages\n",
		s.ID, s.AgentAlias, s.ChatMode, s.OwnerID, overridesText(o), n)

	content := []byte("Notes for the summary: the store keeps one SQLite file.\n")
	up, err := rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "notes", Marker: "[upload: notes.txt]",
		WorkspacePath: "/srv/demo-workspace/notes.txt", Content: content})
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	fmt.Fprintf(out, "  upload %s: %d bytes, sha256 %s...\n", up.RefID, up.SizeBytes, up.SHA256[:16])

	gen, turnCtx, err := rt.BeginTurn(ctx, id)
	if err != nil {
		return fmt.Errorf("begin turn: %w", err)
	}
	fmt.Fprintf(out, "  turn %d started\n", gen)
	if _, err := rt.Cancel(ctx, id, store.CauseClientRequest); err != nil {
		return fmt.Errorf("cancel turn: %w", err)
	}
	<-turnCtx.Done() // the cause is recorded before the context fires
	cause, _ := store.CancelCauseOf(turnCtx)
	fmt.Fprintf(out, "  turn %d cancelled by the client: the turn's context reports %s\n", gen, cause)
	first, ok1, err := rt.TakeCancelCause(ctx, id, gen)
	if err != nil {
		return fmt.Errorf("take cancel cause: %w", err)
	}
	_, ok2, err := rt.TakeCancelCause(ctx, id, gen)
	if err != nil {
		return fmt.Errorf("take cancel cause: %w", err)
	}
	fmt.Fprintf(out, "  recorded cause read back: %s (%v), a second read finds it taken (%v)\n", first, ok1, ok2)
	if _, err := rt.EndTurn(ctx, id, gen); err != nil {
		return fmt.Errorf("end turn: %w", err)
	}
	final, err := rt.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("runtime get: %w", err)
	}
	fmt.Fprintf(out, "  stored durably: turn %s, 1 upload\n", turnText(final.Turn))
	return nil
}

// The demo's own records: what demoGovernance, demoConversation and
// demoRuntime write. A database holding nothing else was written by demos.
const demoAgent = "demo-agent"

// removeForDemo removes the database at path and the files beside it for
// demo --fresh, after checking that it is a session store (a file that is
// not is never removed), that no other process holds it, and — unless yes
// — that it holds nothing but what earlier demos wrote. Nothing is removed
// when a check fails.
func removeForDemo(ctx context.Context, path string, yes bool) error {
	other, err := nonDemoData(ctx, path)
	if err != nil {
		return err
	}
	if len(other) > 0 && !yes {
		return fmt.Errorf("%s holds data the demo did not write (%s): give --yes as well to remove it, or choose another --db", path, strings.Join(other, ", "))
	}
	err = sqlstore.Remove(path)
	var inUse *sqlstore.InUseError
	if errors.As(err, &inUse) {
		return fmt.Errorf("%v: demo --fresh does not remove a database another process holds", inUse)
	}
	return err
}

// nonDemoData reads the database at path without changing it and
// describes what it holds that the demo does not write ("2 governed
// sessions of other agents", ...); an error when it is not a session store.
func nonDemoData(ctx context.Context, path string) ([]string, error) {
	if _, ok, err := sqlstore.SchemaVersionAt(ctx, path); err != nil {
		return nil, fmt.Errorf("%s is not a session store, demo --fresh does not remove it: %w", path, err)
	} else if !ok {
		return nil, fmt.Errorf("%s is not a session store (no %s table): demo --fresh does not remove it", path, migrations.TableName)
	}
	st, err := sqlstore.Open(ctx, path, sqlstore.WithReadOnly(true))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	all, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	// What the demo wrote: its agent's governed sessions, with a runtime
	// session and a conversation of the same id, and no use records.
	var demo struct{ governed, runtime, conversations, records, agentSessions int64 }
	for s, err := range store.AllGoverned(ctx, st.Governance(), store.ListFilter{AgentID: demoAgent}) {
		if err != nil {
			return nil, err
		}
		demo.governed++
		if r, err := st.Runtime().Get(ctx, s.ID); err == nil && r.AgentAlias == demoAgent {
			demo.runtime++
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		// Its conversation and that conversation's fork (demo_conv_branches.go).
		for _, cid := range []string{s.ID, s.ID + "-retry"} {
			if ok, err := st.Conversations().Exists(ctx, cid); err != nil {
				return nil, err
			} else if ok {
				demo.conversations++
			}
		}
		page, err := st.Governance().(store.UseRecorder).UseRecords(ctx, store.UseRecordsRequest{SessionID: s.ID, Limit: store.MaxPageSize})
		if err != nil {
			return nil, err
		}
		demo.records += int64(len(page.Items))
		// demoBranches' agent session and its fork.
		for _, sid := range []string{s.ID, s.ID + "-retry"} {
			_, err := st.AgentSessions().GetSession(ctx, store.GetAgentSessionRequest{Key: store.SessionKey{App: demoApp, User: demoAgent, Session: sid}})
			if err == nil {
				demo.agentSessions++
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
	}
	var out []string
	for _, c := range []struct {
		n    int64
		what string
	}{
		{all.Governed.Total - demo.governed, "governed sessions of other agents"},
		{demo.records, "recorded request ids"},
		{all.Runtime.Total - demo.runtime, "runtime sessions the demo did not write"},
		{all.Conversations.Total - demo.conversations, "conversations the demo did not write"},
		{all.AgentSessions.Total - demo.agentSessions, "agent sessions the demo did not write"},
		{all.AgentSessions.AppStateKeys, "app state keys"},
		{all.AgentSessions.UserStateKeys, "user state keys"},
	} {
		if c.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	db, err := sqlstore.OpenInspect(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tables, err := sqlstore.TablesOf(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		if _, ok := facet.Owner(t); !ok && !slices.Contains(facet.SchemaTables(), t) && !slices.Contains(facet.MaintenanceTables(), t) &&
			!slices.Contains(facet.IndexTables(), t) && !slices.Contains(facet.SQLiteIndexTables(), t) &&
			!slices.Contains(facet.KeyringTables(), t) {
			out = append(out, "table "+t+" of no facet")
		}
	}
	return out, nil
}

// demoPolicies are the retention policies the demo sets: one per kind
// but the size budget.
var demoPolicies = []store.Policy{
	{Kind: store.PolicyGovernedEnded, MaxAge: 7 * 24 * time.Hour},
	{Kind: store.PolicyReservationsClosed, MaxAge: 30 * 24 * time.Hour},
	{Kind: store.PolicyRuntimeIdle, MaxAge: 7 * 24 * time.Hour},
	{Kind: store.PolicyConversationsIdle, MaxAge: 30 * 24 * time.Hour},
	{Kind: store.PolicyMessagesKeepLast, KeepLast: 2},
	{Kind: store.PolicyAgentSessionsIdle, MaxAge: 30 * 24 * time.Hour},
	{Kind: store.PolicyOrphanState},
	{Kind: store.PolicyAuditCheckpointed, MaxAge: 90 * 24 * time.Hour},
}

// demoRetention stores the demo's retention policies, so that sessionctl
// sweep --dry-run shows what they would remove.
func demoRetention(ctx context.Context, out io.Writer, st cliStore, db string) error {
	for _, p := range demoPolicies {
		if err := st.Retention().SetPolicy(ctx, p); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	fmt.Fprintf(out, "\nretention: %d policies stored (sessionctl retention); sessionctl sweep --dry-run says what they would remove\n",
		len(demoPolicies))
	return nil
}
