package benchkit

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/session"
)

var text = strings.Repeat("The quick brown fox jumps over the lazy dog. ", 18)

// signature stands for the opaque thought signature Gemini puts on the
// parts of its answers (stored base64-encoded).
var signature = []byte(strings.Repeat("sig\x00\xff", 8))

// Event returns the i-th event of a conversation as ADK's runner stores it:
// built with session.NewEvent (so it carries an empty artifact delta and
// a fresh id and time), in a cycle of four shapes of about 1 KiB of JSON
// on average:
//
//   - i%4 == 0: a model answer of about 800 bytes of text, with usage
//     metadata (and per-modality details), a finish reason, a model version
//     and a state delta of three keys;
//   - i%4 == 1: a model turn that calls a tool: a thought part, a function
//     call with nested arguments and a thought signature, usage metadata;
//   - i%4 == 2: the tool's function response (role user, authored by the
//     agent) with a nested result and a two-key state delta;
//   - i%4 == 3: the final model answer, text and usage, turn complete.
func Event(i int) *session.Event {
	ev := session.NewEvent(context.Background(), fmt.Sprintf("inv-%d", i/4))
	usage := &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: int32(120 + i), CandidatesTokenCount: 60, TotalTokenCount: int32(180 + i),
		PromptTokensDetails: []*genai.ModalityTokenCount{{Modality: genai.MediaModalityText, TokenCount: int32(120 + i)}},
	}
	switch i % 4 {
	case 0:
		ev.Author = "assistant"
		ev.Content = genai.NewContentFromText(text, genai.RoleModel)
		ev.UsageMetadata = usage
		ev.FinishReason = genai.FinishReasonStop
		ev.ModelVersion = "gemini-2.5-flash"
		ev.Actions.StateDelta["turn"] = float64(i)
		ev.Actions.StateDelta["topic"] = "foxes"
		ev.Actions.StateDelta["progress"] = map[string]any{"step": float64(i), "done": false}
	case 1:
		ev.Author = "assistant"
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "I should look the weather up.", Thought: true},
			{FunctionCall: &genai.FunctionCall{ID: fmt.Sprintf("call-%d", i), Name: "get_weather",
				Args: map[string]any{"city": "Paris", "days": 3.0, "units": map[string]any{"temp": "C"}}},
				ThoughtSignature: signature},
		}}
		ev.UsageMetadata = usage
		ev.ModelVersion = "gemini-2.5-flash"
	case 2:
		ev.Author = "assistant"
		ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{ID: fmt.Sprintf("call-%d", i-1), Name: "get_weather",
				Response: map[string]any{"result": map[string]any{"forecast": []any{"sun", "rain", "sun"}, "high": 21.5}}}},
		}}
		ev.Actions.StateDelta["last_tool"] = "get_weather"
		ev.Actions.StateDelta["calls"] = float64(i)
	default:
		ev.Author = "assistant"
		ev.Content = genai.NewContentFromText(text, genai.RoleModel)
		ev.UsageMetadata = usage
		ev.FinishReason = genai.FinishReasonStop
		ev.TurnComplete = true
	}
	return ev
}
