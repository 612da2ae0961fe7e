// Package demo writes the records of "sessionctl demo" into a store: a
// governed session whose budget is spent (with the refusals), its
// conversation, its runtime session with an upload and a cancelled turn,
// a cost limit that stops the agent (with the audit trail verified), a
// fork and a compaction of the conversation and of an agent session, a
// search, and the demo's retention policies. Seed returns what each step
// wrote and read back; sessionctl prints it. It is public because the CLI
// imports no internal package, and because a Go program (a test, an
// example, a console to try out) can seed any backend the same way.
//
// Remove and Foreign are the checks of "sessionctl demo --fresh" on a
// SQLite file: what it holds that no demo wrote.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/store"
)

// Agent is the agent of every session the demo writes.
const Agent = "demo-agent"

// App is the application of the demo's agent sessions (user Agent,
// session id the governed session's).
const App = "sessionctl-demo"

// ForkSuffix ends the id of the demo's forks: the conversation's and the
// agent session's fork are the governed session's id + ForkSuffix.
const ForkSuffix = "-retry"

// Store is what Seed writes to: every facet, and the search index.
type Store interface {
	store.Store
	store.Searcher
}

// Result is what Seed wrote and read back, one field per step, in the
// order the steps run. When a step fails, the steps before it are set and
// the rest are nil.
type Result struct {
	Governed         *Governed
	Conversation     *Conversation
	Runtime          *Runtime
	Spend            *Spend
	ConversationFork *ConversationFork
	AgentSession     *AgentSession
	// SearchHits are the demo's answer found by what it says ("durable");
	// none when the search index is turned off.
	SearchHits []store.SearchHit
	// Policies are the retention policies stored (Policies()).
	Policies []store.Policy
}

// Governed is a governed session with a budget of 3 calls, spent by five
// uses: an unauthorized tool and the call past the budget are refused.
type Governed struct {
	// Session is the session as created.
	Session store.Session
	Uses    []Use
	// Final is the session read back after the uses.
	Final store.Session
}

// Use is one use of a governed session's tool.
type Use struct {
	Tool string
	// Refused is the refusal (errors.Is a governance sentinel), nil when
	// the use was allowed.
	Refused error
	// Session is the session after an allowed use.
	Session store.Session
}

// Conversation is the governed session's conversation: four messages
// with a tool call and its result, usage and cost, appended in one
// transaction.
type Conversation struct {
	Appended store.AppendResult
	// Last are the last two messages read back.
	Last []store.Message
	// Info is the conversation read back after the append.
	Info store.ConversationSummary
}

// Runtime is the governed session registered with the runtime, an upload
// and a turn that the client cancels.
type Runtime struct {
	Session    store.RuntimeSession
	Overrides  store.Overrides
	HistoryLen int64
	Upload     store.Upload
	// Generation is the cancelled turn's.
	Generation uint64
	// ContextCause is the cause the turn's context reports.
	ContextCause store.CancelCause
	// Cause is the recorded cause read back (Taken); TakenAgain says a
	// second read found it too (it must not).
	Cause      store.CancelCause
	Taken      bool
	TakenAgain bool
	// Final is the runtime session read back after the turn ended.
	Final store.RuntimeSession
}

// Currency is the currency of the demo's cost limit.
const Currency = "USD"

// Spend is a governed session that may spend 0.05 USD: each model call
// reserves Bound and settles Actual, until a reservation would pass the
// limit.
type Spend struct {
	Session       store.Session
	Bound, Actual store.SpendAmount
	// Settled is the number of calls reserved and settled; call
	// Settled+1 was refused with Refusal (Limit its details).
	Settled int
	Refusal error
	Limit   *store.SpendLimitError
	// Conversation is the governed session's conversation read back: the
	// settled calls' usage is added to it.
	Conversation store.ConversationSummary
	Status       store.SpendStatus
	// Audit is the verification of every audit chain; AuditEvents the
	// number of decisions recorded for Session.
	Audit       store.AuditReport
	AuditEvents int
}

// ConversationFork is the conversation forked after its tool call
// (message 1), answered on its own and compacted over messages 0-1.
type ConversationFork struct {
	From, ID string
	// Compaction is the compaction record's append.
	Compaction store.AppendResult
	// Tail is the summary read: the record and what follows it.
	Tail    store.SummaryTail
	History []store.ConversationNode
}

// AgentSession is an agent session of six events with state changes, a
// compaction record over events 1-4, and a fork at event 5 that goes on
// with its own event.
type AgentSession struct {
	Key        store.SessionKey
	Compaction store.AppendEventResult
	// SummaryRead are the events a summary read returns.
	SummaryRead []store.AgentEvent
	Fork        store.SessionKey
	// ForkState is the fork as created (its state at event 5);
	// ForkEvents its events after its own append.
	ForkState  store.AgentSession
	ForkEvents []store.AgentEvent
	History    []store.LineageNode
}

// Policies are the retention policies the demo sets: one per kind but the
// size budget.
func Policies() []store.Policy {
	return []store.Policy{
		{Kind: store.PolicyGovernedEnded, MaxAge: 7 * 24 * time.Hour},
		{Kind: store.PolicyReservationsClosed, MaxAge: 30 * 24 * time.Hour},
		{Kind: store.PolicyRuntimeIdle, MaxAge: 7 * 24 * time.Hour},
		{Kind: store.PolicyConversationsIdle, MaxAge: 30 * 24 * time.Hour},
		{Kind: store.PolicyMessagesKeepLast, KeepLast: 2},
		{Kind: store.PolicyAgentSessionsIdle, MaxAge: 30 * 24 * time.Hour},
		{Kind: store.PolicyOrphanState},
		{Kind: store.PolicyAuditCheckpointed, MaxAge: 90 * 24 * time.Hour},
	}
}

// Seed writes the demo's records into st, beside whatever it holds (each
// run writes sessions of new ids), and returns what each step wrote and
// read back. The search step first folds into the index what the demo
// wrote, so that a read-only reader (the console) finds it too.
func Seed(ctx context.Context, st Store) (Result, error) {
	var r Result
	var err error
	if r.Governed, err = seedGoverned(ctx, st); err != nil {
		return Result{}, err
	}
	id := r.Governed.Session.ID
	steps := []func() error{
		func() (err error) { r.Conversation, err = seedConversation(ctx, st, id); return err },
		func() (err error) { r.Runtime, err = seedRuntime(ctx, st, id); return err },
		func() (err error) { r.Spend, err = seedSpend(ctx, st, id); return err },
		func() (err error) { r.ConversationFork, err = seedConversationFork(ctx, st, id); return err },
		func() (err error) { r.AgentSession, err = seedAgentSession(ctx, st, id); return err },
		func() (err error) { r.SearchHits, err = seedSearch(ctx, st, id); return err },
		func() (err error) { r.Policies, err = seedRetention(ctx, st); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return r, err
		}
	}
	return r, nil
}

func seedGoverned(ctx context.Context, st Store) (*Governed, error) {
	gov := st.Governance()
	sess, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         Agent,
		DeclaredIntent:  "summarize the repository",
		AuthorizedTools: []string{"read_file", "list_dir"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      3,
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	g := &Governed{Session: sess}
	for _, tool := range []string{"list_dir", "read_file", "delete_file", "read_file", "read_file"} {
		s, err := gov.Use(ctx, store.UseRequest{SessionID: sess.ID, AgentID: Agent, Tools: []string{tool}})
		if err != nil && !store.IsUseRefusal(err) { // a refusal is shown; a failure stops the demo
			return nil, fmt.Errorf("use: %w", err)
		}
		g.Uses = append(g.Uses, Use{Tool: tool, Refused: err, Session: s})
	}
	if g.Final, err = gov.Get(ctx, sess.ID); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	return g, nil
}

func seedConversation(ctx context.Context, st Store, id string) (*Conversation, error) {
	conv := st.Conversations()
	c := store.NewConversation(id)
	c.Config.Name = "summarize the repository"
	c.Config.Workspace = "/srv/demo-workspace"
	c.ModelName = "demo-model"
	c.ToolNames = []string{"read_file", "list_dir"}
	if _, err := conv.Save(ctx, c); err != nil {
		return nil, fmt.Errorf("save conversation: %w", err)
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
		return nil, fmt.Errorf("append messages: %w", err)
	}
	out := &Conversation{Appended: res}
	if out.Last, err = conv.LastMessages(ctx, id, 2); err != nil {
		return nil, fmt.Errorf("read messages: %w", err)
	}
	if out.Info, err = conv.Info(ctx, id); err != nil {
		return nil, fmt.Errorf("conversation info: %w", err)
	}
	return out, nil
}

func seedRuntime(ctx context.Context, st Store, id string) (*Runtime, error) {
	rt := st.Runtime()
	var out Runtime
	var err error
	if out.Session, err = rt.Insert(ctx, store.NewRuntimeSession{ID: id, AgentAlias: Agent,
		WorkspaceDir: "/srv/demo-workspace", ChatMode: store.ChatModeChat, OwnerID: "demo-client"}); err != nil {
		return nil, fmt.Errorf("runtime insert: %w", err)
	}
	model := "demo-model-large"
	if out.Overrides, err = rt.SetOverrides(ctx, id, store.Overrides{Model: &model}); err != nil {
		return nil, fmt.Errorf("overrides: %w", err)
	}
	if out.HistoryLen, err = rt.HistoryLen(ctx, id); err != nil {
		return nil, fmt.Errorf("history length: %w", err)
	}
	content := []byte("Notes for the summary: the store keeps one SQLite file.\n")
	if out.Upload, err = rt.PutUpload(ctx, store.PutUploadRequest{SessionID: id, RefID: "notes", Marker: "[upload: notes.txt]",
		WorkspacePath: "/srv/demo-workspace/notes.txt", Content: content}); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	gen, turnCtx, err := rt.BeginTurn(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("begin turn: %w", err)
	}
	out.Generation = gen
	if _, err := rt.Cancel(ctx, id, store.CauseClientRequest); err != nil {
		return nil, fmt.Errorf("cancel turn: %w", err)
	}
	<-turnCtx.Done() // the cause is recorded before the context fires
	out.ContextCause, _ = store.CancelCauseOf(turnCtx)
	if out.Cause, out.Taken, err = rt.TakeCancelCause(ctx, id, gen); err != nil {
		return nil, fmt.Errorf("take cancel cause: %w", err)
	}
	if _, out.TakenAgain, err = rt.TakeCancelCause(ctx, id, gen); err != nil {
		return nil, fmt.Errorf("take cancel cause: %w", err)
	}
	if _, err := rt.EndTurn(ctx, id, gen); err != nil {
		return nil, fmt.Errorf("end turn: %w", err)
	}
	if out.Final, err = rt.Get(ctx, id); err != nil {
		return nil, fmt.Errorf("runtime get: %w", err)
	}
	return &out, nil
}

// seedSpend settles its calls into the conversation of id too, in the
// same transaction as each settlement.
func seedSpend(ctx context.Context, st Store, id string) (*Spend, error) {
	sess, err := st.Governance().Create(ctx, store.CreateRequest{
		AgentID:         Agent,
		DeclaredIntent:  "answer questions with a paid model",
		AuthorizedTools: []string{"read_file"},
		TimeLimit:       10 * time.Minute,
		CallBudget:      100,
		SpendLimits: []store.SpendLimit{{Metric: store.MetricCost, Limit: 50_000, Currency: Currency},
			{Metric: store.MetricTotalTokens, Window: store.WindowHour, Limit: 100_000}},
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	out := &Spend{Session: sess,
		Bound:  store.SpendAmount{InputTokens: 4000, OutputTokens: 1000, CostMicros: 20_000},
		Actual: store.SpendAmount{InputTokens: 3100, OutputTokens: 420, CostMicros: 13_000}}
	for call := 1; ; call++ {
		rid := fmt.Sprintf("model-call-%d", call)
		_, err := st.Spend().Reserve(ctx, store.ReserveRequest{SessionID: sess.ID, AgentID: Agent, RequestID: rid,
			Amount: out.Bound, Currency: Currency, TTL: 2 * time.Minute})
		if errors.As(err, &out.Limit) {
			out.Refusal = err
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reserve: %w", err)
		}
		if _, err := st.Spend().Settle(ctx, store.SettleRequest{SessionID: sess.ID, AgentID: Agent, RequestID: rid,
			Actual: out.Actual, Conversation: id}); err != nil {
			return nil, fmt.Errorf("settle: %w", err)
		}
		out.Settled = call
	}
	if out.Conversation, err = st.Conversations().Info(ctx, id); err != nil {
		return nil, fmt.Errorf("conversation info: %w", err)
	}
	if out.Status, err = st.Spend().Status(ctx, sess.ID); err != nil {
		return nil, fmt.Errorf("spend status: %w", err)
	}
	if out.Audit, err = st.Audit().Verify(ctx); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	events, err := st.Audit().List(ctx, store.AuditFilter{AgentID: Agent, SessionID: sess.ID})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	out.AuditEvents = len(events.Items)
	return out, nil
}

func seedConversationFork(ctx context.Context, st Store, id string) (*ConversationFork, error) {
	conv := st.Conversations()
	out := &ConversationFork{From: id, ID: id + ForkSuffix}
	if _, err := conv.Fork(ctx, store.ConversationForkRequest{ID: id, At: 1, NewID: out.ID}); err != nil {
		return nil, fmt.Errorf("fork conversation: %w", err)
	}
	if _, err := conv.AppendMessages(ctx, out.ID, store.AssistantMessage("Without listing: a session store.")); err != nil {
		return nil, fmt.Errorf("append to the fork: %w", err)
	}
	var err error
	if out.Compaction, err = conv.Compact(ctx, store.ConversationCompactRequest{ID: out.ID, Range: store.CompactionRange{From: 0, To: 1},
		Summary: store.AssistantMessage("Asked for a one-sentence summary; a tool call was started.")}); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if out.Tail, err = conv.SummaryTail(ctx, out.ID, 0); err != nil {
		return nil, fmt.Errorf("summary read: %w", err)
	}
	if out.History, err = conv.History(ctx, out.ID); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return out, nil
}

func seedAgentSession(ctx context.Context, st Store, id string) (*AgentSession, error) {
	as := st.AgentSessions()
	key := store.SessionKey{App: App, User: Agent, Session: id}
	if _, err := as.CreateSession(ctx, store.CreateAgentSessionRequest{Key: key,
		State: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage("0")}}}); err != nil {
		return nil, fmt.Errorf("create agent session: %w", err)
	}
	for i := 1; i <= 6; i++ {
		ev := store.AgentEvent{ID: fmt.Sprintf("turn-%d", i), InvocationID: fmt.Sprintf("inv-%d", (i+1)/2),
			Data: json.RawMessage(fmt.Sprintf(`{"author":"agent","text":"step %d"}`, i))}
		delta := store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(fmt.Sprint(i))}}
		if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: key, Event: ev, Delta: delta}); err != nil {
			return nil, fmt.Errorf("append event: %w", err)
		}
	}
	out := &AgentSession{Key: key, Fork: key}
	out.Fork.Session = id + ForkSuffix
	var err error
	if out.Compaction, err = as.Compact(ctx, store.CompactRequest{Key: key, Range: store.CompactionRange{From: 1, To: 4},
		Summary: store.AgentEvent{ID: "summary-1", Data: json.RawMessage(`{"author":"agent","text":"steps 1-4 done"}`)}}); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	got, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: key, IncludeEvents: true, FromLatestSummary: true})
	if err != nil {
		return nil, fmt.Errorf("summary read: %w", err)
	}
	out.SummaryRead = got.Events
	if out.ForkState, err = as.Fork(ctx, store.ForkRequest{Key: key, At: 5, Session: out.Fork.Session}); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if _, err := as.AppendEvent(ctx, store.AppendEventRequest{Key: out.Fork,
		Event: store.AgentEvent{ID: "retry-6", Data: json.RawMessage(`{"author":"agent","text":"step 6, another way"}`)},
		Delta: store.ScopedState{Session: map[string]json.RawMessage{"step": json.RawMessage(`"6b"`)}}}); err != nil {
		return nil, fmt.Errorf("append to the fork: %w", err)
	}
	fk, err := as.GetSession(ctx, store.GetAgentSessionRequest{Key: out.Fork, IncludeEvents: true})
	if err != nil {
		return nil, fmt.Errorf("read the fork: %w", err)
	}
	out.ForkEvents = fk.Events
	if out.History, err = as.History(ctx, out.Fork); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return out, nil
}

// seedSearch finds the demo's answer by what it says: none when the
// search index is turned off.
func seedSearch(ctx context.Context, st Store, id string) ([]store.SearchHit, error) {
	res, err := st.Search(ctx, store.SearchQuery{Query: "durable", Session: id, Limit: 1})
	if errors.Is(err, store.ErrSearchDisabled) {
		return []store.SearchHit{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	return res.Hits, nil
}

// seedRetention stores the demo's retention policies, so that a dry run
// of a sweep shows what they would remove.
func seedRetention(ctx context.Context, st Store) ([]store.Policy, error) {
	policies := Policies()
	for _, p := range policies {
		if err := st.Retention().SetPolicy(ctx, p); err != nil {
			return nil, fmt.Errorf("retention: %w", err)
		}
	}
	return policies, nil
}
