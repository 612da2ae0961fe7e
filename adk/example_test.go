package adk_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentstore/sessionstore/adk"
	"github.com/agentstore/sessionstore/store"
)

// scriptedModel stands in for an LLM, offline: it asks for the lookup
// tool with a new query each turn until a tool answer carries an error,
// then gives up with a text answer.
type scriptedModel struct{}

func (scriptedModel) Name() string { return "scripted" }

func (scriptedModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		calls := 0
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					calls++
				}
				if p.FunctionResponse != nil && p.FunctionResponse.Response["error"] != nil {
					yield(&model.LLMResponse{Content: genai.NewContentFromText(
						fmt.Sprintf("Stopping after %d lookups: %v.", calls-1, p.FunctionResponse.Response["error"]),
						genai.RoleModel)}, nil)
					return
				}
			}
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromFunctionCall("lookup",
			map[string]any{"query": fmt.Sprintf("topic %d", calls+1)}, genai.RoleModel)}, nil)
	}
}

type lookupArgs struct {
	Query string `json:"query"`
}

type lookupResult struct {
	Answer string `json:"answer"`
}

// An ADK runner keeps its sessions in the store, and a governed session
// with a budget of two tool calls guards the agent's tools: a before-tool
// callback charges every call with Governance().Use, and once the budget
// is spent it answers the model with an error instead of running the tool.
// The budget is enforced by the store in one transaction, so it holds
// across processes sharing the file.
func Example_governedRunner() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "adk-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	svc, err := adk.Open(ctx, filepath.Join(dir, "sessions.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	gov := svc.Store().Governance()

	budget, err := gov.Create(ctx, store.CreateRequest{
		AgentID:         "researcher",
		AuthorizedTools: []string{"lookup"},
		TimeLimit:       time.Hour,
		CallBudget:      2,
	})
	if err != nil {
		log.Fatal(err)
	}

	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks a topic up."},
		func(ctx agent.Context, args lookupArgs) (lookupResult, error) {
			return lookupResult{Answer: "facts about " + args.Query}, nil
		})
	if err != nil {
		log.Fatal(err)
	}

	// chargeBudget runs before every tool call.
	chargeBudget := func(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
		id, err := ctx.State().Get("governed_session")
		if err != nil {
			return nil, err
		}
		_, err = gov.Use(ctx, store.UseRequest{SessionID: id.(string), AgentID: "researcher", Tools: []string{t.Name()}})
		switch {
		case err == nil:
			return nil, nil // within budget: run the tool
		case errors.Is(err, store.ErrBudgetExceeded), errors.Is(err, store.ErrExpired), errors.Is(err, store.ErrToolNotAuthorized):
			return map[string]any{"error": err.Error()}, nil // refused: skip the tool
		default:
			return nil, err
		}
	}

	researcher, err := llmagent.New(llmagent.Config{
		Name:                "researcher",
		Model:               scriptedModel{},
		Instruction:         "Research the user's question.",
		Tools:               []tool.Tool{lookup},
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{chargeBudget},
	})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "research", Agent: researcher, SessionService: svc})
	if err != nil {
		log.Fatal(err)
	}

	created, err := svc.Create(ctx, &session.CreateRequest{
		AppName: "research", UserID: "ada",
		State: map[string]any{"governed_session": budget.ID},
	})
	if err != nil {
		log.Fatal(err)
	}
	msg := genai.NewContentFromText("Tell me about three topics.", genai.RoleUser)
	for ev, err := range r.Run(ctx, "ada", created.Session.ID(), msg, agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				fmt.Printf("%s calls %s(%v)\n", ev.Author, p.FunctionCall.Name, p.FunctionCall.Args["query"])
			case p.FunctionResponse != nil:
				fmt.Printf("%s answers %v\n", p.FunctionResponse.Name, p.FunctionResponse.Response)
			case p.Text != "":
				fmt.Printf("%s says %q\n", ev.Author, p.Text)
			}
		}
	}

	// Everything the runner did is in the file.
	stored, err := svc.Get(ctx, &session.GetRequest{AppName: "research", UserID: "ada", SessionID: created.Session.ID()})
	if err != nil {
		log.Fatal(err)
	}
	spent, err := gov.Get(ctx, budget.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d events stored; %d of %d tool calls spent\n", stored.Session.Events().Len(), spent.CallsMade, spent.CallBudget)

	// Output:
	// researcher calls lookup(topic 1)
	// lookup answers map[answer:facts about topic 1]
	// researcher calls lookup(topic 2)
	// lookup answers map[answer:facts about topic 2]
	// researcher calls lookup(topic 3)
	// lookup answers map[error:session budget exceeded]
	// researcher says "Stopping after 2 lookups: session budget exceeded."
	// 8 events stored; 2 of 2 tool calls spent
}
