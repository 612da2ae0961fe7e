package sqlstore_test

// The fault-point sweep over the conversation facet's writes.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentstore/sessionstore/store"
	"github.com/agentstore/sessionstore/store/storetest"
)

func sweepConversation(id string, msgs ...string) store.Conversation {
	c := store.NewConversation(id)
	c.Config.Name = "sweep " + id
	c.ToolNames = []string{"read_file", "bash"}
	c.LLMConfig = &store.LLMConfig{Provider: "anthropic", Model: "m", APIKey: "sk-never-stored"}
	c.Tasks = []store.Task{{ID: "t1", Content: "do it", Status: store.TaskPending, Priority: store.PriorityHigh}}
	for _, m := range msgs {
		c.Messages = append(c.Messages, store.UserMessage(m))
	}
	return c
}

func saveAll(ctx context.Context, st store.Store, cs ...store.Conversation) error {
	for _, c := range cs {
		if _, err := st.Conversations().Save(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// convSetup: conversation "c" with three messages, a cost record, an
// artifact, a trace, a run with an event and a report; "other" untouched.
func convSetup(ctx context.Context, st store.Store) error {
	if err := saveAll(ctx, st, sweepConversation("c", "one", "two", "three"), sweepConversation("other", "x")); err != nil {
		return err
	}
	conv := st.Conversations()
	cost := 0.25
	if _, err := conv.Append(ctx, store.AppendRequest{ID: "c", Usage: &store.TokenUsage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		Cost: cost, CostRecords: []store.CostRecord{{Model: "m", Provider: "p", PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, CostUSD: &cost}}}); err != nil {
		return err
	}
	if err := conv.PutArtifacts(ctx, "c", store.Artifact{URI: "artifact://1", ID: "1", ToolName: "bash", Content: "output"}); err != nil {
		return err
	}
	if _, err := conv.AppendTraces(ctx, "c", store.TraceEvent{Schema: "v1", Kind: store.TraceToolExecution, Name: "bash", Success: true}); err != nil {
		return err
	}
	if err := conv.PutRuns(ctx, "c", store.RunRecord{Snapshot: store.RunSnapshot{ID: "run-1", Prompt: "p"},
		Events: []store.RunEvent{{Event: json.RawMessage(`{"kind":"start"}`)}}}); err != nil {
		return err
	}
	return conv.AppendReports(ctx, "c", store.VerificationReport{Schema: "v1", Subject: "s", Status: "passed",
		Checks: []store.VerificationCheck{{ID: "c1", Kind: "test", Description: "d", Status: "passed", Required: true}}})
}

func conversationSweepOps() []sweepOp {
	conv := func(st store.Store) store.Conversations { return st.Conversations() }
	cost := 0.5
	return []sweepOp{
		{name: "Save", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).Save(ctx, sweepConversation("new", "a", "b"))
			return err
		}},
		{name: "SaveReplace", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).Save(ctx, sweepConversation("c", "replaced"))
			return err
		}},
		{name: "AppendMessages", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).AppendMessages(ctx, "c", store.UserMessage("four"), store.AssistantMessage("five"))
			return err
		}},
		{name: "AppendWithUsageAndCost", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).Append(ctx, store.AppendRequest{ID: "c", Messages: []store.Message{store.AssistantMessage("six")},
				Usage: &store.TokenUsage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}, Cost: cost,
				CostRecords:  []store.CostRecord{{Model: "m", Provider: "p", TotalTokens: 3, CostUSD: &cost}},
				ContextUsage: &store.ContextUsage{UsedTokens: 100, MaxTokens: 1000}})
			return err
		}},
		{name: "AppendMissing", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).AppendMessages(ctx, "missing", store.UserMessage("x"))
			return err
		}},
		{name: "PopMessage", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).PopMessage(ctx, "c")
			return err
		}},
		{name: "TrimMessages", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).TrimMessages(ctx, "c", 1)
			return err
		}},
		{name: "Delete", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			return conv(st).Delete(ctx, "c")
		}},
		{name: "DeleteUpdatedBefore", setup: convSetup, at: time.Hour, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).DeleteUpdatedBefore(ctx, storetestNow().Add(time.Minute), 0)
			return err
		}},
		{name: "PutArtifacts", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			return conv(st).PutArtifacts(ctx, "c", store.Artifact{URI: "artifact://1", Content: "replaced"}, store.Artifact{URI: "artifact://2", Content: "new"})
		}},
		{name: "AppendTraces", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).AppendTraces(ctx, "c", store.TraceEvent{Schema: "v1", Kind: store.TraceProgramExecution, Name: "go"},
				store.TraceEvent{Schema: "v1", Kind: store.TraceToolExecution, Name: "bash", ExitCode: 1})
			return err
		}},
		{name: "PutRuns", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			return conv(st).PutRuns(ctx, "c", store.RunRecord{Snapshot: store.RunSnapshot{ID: "run-2", Prompt: "q"},
				Events: []store.RunEvent{{Seq: 0, Event: json.RawMessage(`{"a":1}`)}, {Seq: 1, Event: json.RawMessage(`{"b":2}`)}}})
		}},
		{name: "AppendRunEvents", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			_, err := conv(st).AppendRunEvents(ctx, "c", "run-1", store.RunEvent{Event: json.RawMessage(`{"kind":"step"}`)})
			return err
		}},
		{name: "AppendReports", setup: convSetup, run: func(ctx context.Context, st store.Store) error {
			return conv(st).AppendReports(ctx, "c", store.VerificationReport{Schema: "v1", Subject: "t", Status: "failed"})
		}},
	}
}

// storetestNow is the instant storetest.NewClock starts at.
func storetestNow() time.Time { return storetest.NewClock().Now() }
