package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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
decision; and prints what was stored. The file is created when it does not exist; an
existing database is kept and the demo adds its own sessions to it, unless
--fresh removes it first. Inspect the result with "sessionctl list" and
"sessionctl show ID". On PostgreSQL the store's tables are created in the
schema when missing; --fresh is refused (drop the schema yourself).`,
	examples: []string{
		"sessionctl demo",
		"sessionctl --db /tmp/demo.db demo --fresh && sessionctl --db /tmp/demo.db list",
	},
}

func runDemo(ctx context.Context, g *globals, args []string) int {
	sp := demoSpec
	fs := g.newFlags(sp)
	fresh := fs.Bool("fresh", false, "remove the database file (and its -wal, -shm, -writer.lock) first")
	pos, code, done := g.parse(fs, sp, args)
	if done {
		return code
	}
	if code, bad := g.wantArgs(sp, pos, 0, 0); bad {
		return code
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
	if *fresh {
		for _, suffix := range []string{"", "-wal", "-shm", "-writer.lock"} {
			if err := os.Remove(g.db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return g.fail(sp.name, err)
			}
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
	fmt.Fprintf(out, "\nnext: sessionctl --db %s show %s\n", shellQuote(g.dbName()), id)
	return exitOK
}

// demoGovernance creates a governed session with a budget of 3 and spends
// it, showing the refusals. It returns the session id.
func demoGovernance(ctx context.Context, out io.Writer, st cliStore) (string, error) {
	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         "demo-agent",
		DeclaredIntent:  "summarize the repository",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      3,
	})
	if err != nil {
		return "", fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(out, "\ngoverned session %s\n  agent %s, tools %v, budget %d calls, expires in 10m\n",
		sess.ID, sess.AgentID, sess.AuthorizedTools, sess.CallBudget)
	for _, tool := range []string{"list_dir", "read_file", "delete_file", "read_file", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: "demo-agent", Tools: []string{tool}})
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
	fmt.Fprintf(out, "  stored durably: %d messages, %d tokens, %s\n", info.MessageCount, info.TotalUsage.TotalTokens, usd(info.TotalCost))
	return nil
}

// demoRuntime registers session id with the runtime, stores an upload and
// runs a turn that a client cancels.
func demoRuntime(ctx context.Context, out io.Writer, st cliStore, id string) error {
	rt := st.Runtime()
	s, err := rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: "demo-agent",
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
