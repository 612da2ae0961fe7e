package adk_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/agentstore/sessionstore/adk"
)

// fullEvent sets every field ADK's Event defines (ADK's own database
// service drops several of them: ModelVersion, FinishReason, logprobs,
// transcriptions, the session resumption handle, ...).
func fullEvent() *session.Event {
	return &session.Event{
		ID:             "event-full",
		Timestamp:      time.Date(2026, 2, 3, 4, 5, 6, 789_000_000, time.UTC),
		InvocationID:   "inv-full",
		Branch:         "root.child",
		IsolationScope: "task-7",
		Author:         "assistant",
		Actions: session.EventActions{
			StateDelta:    map[string]any{"k": "v", "app:a": float64(1), "user:u": []any{"x", true}},
			ArtifactDelta: map[string]int64{"report.pdf": 3},
			RequestedToolConfirmations: map[string]toolconfirmation.ToolConfirmation{
				"call-1": {Hint: "really?", Confirmed: true, Payload: map[string]any{"amount": float64(12)}},
			},
			SkipSummarization: true,
			TransferToAgent:   "billing",
			Escalate:          true,
		},
		LongRunningToolIDs: []string{"call-1", "call-2"},
		Routes:             []string{"route-a", "route-b"},
		RequestedInput: &session.RequestInput{
			InterruptID:    "ask-1",
			Message:        "Your name?",
			ResponseSchema: &jsonschema.Schema{Type: "string", Description: "a name"},
			Payload:        map[string]any{"hint": "first name"},
		},
		Output:   map[string]any{"result": []any{float64(1), "two"}},
		NodeInfo: &session.NodeInfo{Path: "wf/node@1", MessageAsOutput: true, OutputFor: []string{"wf"}},
		LLMResponse: model.LLMResponse{
			Content: genai.NewContentFromParts([]*genai.Part{
				genai.NewPartFromText("hello"),
				genai.NewPartFromBytes([]byte{0, 1, 2, 255}, "application/octet-stream"),
				genai.NewPartFromFunctionCall("lookup", map[string]any{"q": "x"}),
			}, genai.RoleModel),
			CitationMetadata:  &genai.CitationMetadata{Citations: []*genai.Citation{{Title: "t", URI: "https://example.com"}}},
			GroundingMetadata: &genai.GroundingMetadata{WebSearchQueries: []string{"q1"}},
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{
				PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15,
			},
			CustomMetadata: map[string]any{"trace": "abc", "n": float64(3)},
			LogprobsResult: &genai.LogprobsResult{ChosenCandidates: []*genai.LogprobsResultCandidate{
				{LogProbability: -0.25, Token: "hel"},
			}},
			InputTranscription:      &genai.Transcription{Text: "in", Finished: true},
			OutputTranscription:     &genai.Transcription{Text: "out"},
			ModelVersion:            "model-2026-01",
			TurnComplete:            true,
			Interrupted:             true,
			SessionResumptionHandle: "resume-123",
			ErrorCode:               "E1",
			ErrorMessage:            "something",
			FinishReason:            genai.FinishReasonStop,
			AvgLogprobs:             -0.5,
		},
	}
}

// TestEventKeepsEveryField appends a fully populated event and reads it
// back through a second service on the same file: it must compare equal
// field by field.
func TestEventKeepsEveryField(t *testing.T) {
	svc, path := openService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ev := fullEvent()
	if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
		t.Fatal(err)
	}
	want := fullEvent()
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Fatalf("AppendEvent changed the event (-want +got):\n%s", diff)
	}
	other, err := adk.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := other.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Session.Events().Len(); n != 1 {
		t.Fatalf("%d events", n)
	}
	if diff := cmp.Diff(want, got.Session.Events().At(0)); diff != "" {
		t.Fatalf("stored event differs (-want +got):\n%s", diff)
	}
	// The delta reached the three scopes.
	st := got.Session.State()
	for k, v := range map[string]any{"k": "v", "app:a": float64(1), "user:u": []any{"x", true}} {
		g, err := st.Get(k)
		if err != nil || !cmp.Equal(g, v) {
			t.Fatalf("state %q = %v (%v), want %v", k, g, err, v)
		}
	}
}

// TestAppendFillsIDAndTimestamp: an event without id or timestamp gets
// them from ADK's platform providers; timestamps are kept to the
// nanosecond, as ADK's in-memory service keeps them, and read back
// exactly.
func TestAppendFillsIDAndTimestamp(t *testing.T) {
	svc, _ := openService(t)
	fixed := time.Date(2026, 7, 8, 9, 10, 11, 123_456_789, time.UTC)
	ctx := platform.WithTimeProvider(context.Background(), func() time.Time { return fixed })
	ctx = platform.WithUUIDProvider(ctx, func() string { return "uuid-from-provider" })
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u"})
	if err != nil {
		t.Fatal(err)
	}
	if created.Session.ID() != "uuid-from-provider" {
		t.Fatalf("generated session id %q, want the provider's", created.Session.ID())
	}
	ev := &session.Event{Author: "user"}
	if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
		t.Fatal(err)
	}
	if ev.ID != "uuid-from-provider" || !ev.Timestamp.Equal(fixed) {
		t.Fatalf("event id %q, timestamp %v", ev.ID, ev.Timestamp)
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	stored := got.Session.Events().At(0)
	if stored.ID != ev.ID || !stored.Timestamp.Equal(ev.Timestamp) {
		t.Fatalf("stored id %q, timestamp %v", stored.ID, stored.Timestamp)
	}
	// An explicit timestamp below the microsecond is kept as given.
	ev2 := &session.Event{ID: "e2", Timestamp: fixed.Add(time.Second + 1)}
	if err := svc.AppendEvent(ctx, got.Session, ev2); err != nil {
		t.Fatal(err)
	}
	if !ev2.Timestamp.Equal(fixed.Add(time.Second + 1)) {
		t.Fatalf("timestamp %v changed by the append", ev2.Timestamp)
	}
	again, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: created.Session.ID()})
	if err != nil {
		t.Fatal(err)
	}
	if ts := again.Session.Events().At(1).Timestamp; !ts.Equal(ev2.Timestamp) || ts.Nanosecond()%1000 != 790 {
		t.Fatalf("stored timestamp %v, want %v (nanoseconds kept)", ts, ev2.Timestamp)
	}
}

// TestGetWindows checks NumRecentEvents and After, alone and together,
// including an After between two events of the same second.
func TestGetWindows(t *testing.T) {
	svc, _ := openService(t)
	ctx := context.Background()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		ev := &session.Event{ID: string(rune('a' + i)), Author: "user", Timestamp: base.Add(time.Duration(i) * 100 * time.Millisecond)}
		if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(req *session.GetRequest) string {
		t.Helper()
		req.AppName, req.UserID, req.SessionID = "app", "u", "s"
		got, err := svc.Get(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for ev := range got.Session.Events().All() {
			out += ev.ID
		}
		return out
	}
	for _, c := range []struct {
		req  session.GetRequest
		want string
	}{
		{session.GetRequest{}, "abcdefghij"},
		{session.GetRequest{NumRecentEvents: 3}, "hij"},
		{session.GetRequest{NumRecentEvents: -4}, "abcdefghij"}, // ADK: not positive means no limit
		{session.GetRequest{After: base.Add(250 * time.Millisecond)}, "defghij"},
		{session.GetRequest{After: base.Add(300 * time.Millisecond)}, "defghij"},
		{session.GetRequest{After: base.Add(300*time.Millisecond + time.Nanosecond)}, "efghij"},
		{session.GetRequest{NumRecentEvents: 2, After: base}, "ij"},
		{session.GetRequest{NumRecentEvents: 5, After: base.Add(800 * time.Millisecond)}, "ij"},
	} {
		if got := ids(&c.req); got != c.want {
			t.Errorf("Get(recent %d, after %v) = %q, want %q", c.req.NumRecentEvents, c.req.After, got, c.want)
		}
	}
}
