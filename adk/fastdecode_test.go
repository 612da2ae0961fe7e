package adk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
)

func storeEvent(data []byte) store.AgentEvent { return store.AgentEvent{Seq: 1, Data: data} }

// fastDecodeSeeds are stored events of the shapes the service writes, and
// near misses.
func fastDecodeSeeds(t testing.TB) [][]byte {
	at := time.Date(2026, 7, 8, 9, 10, 11, 123_456_000, time.UTC)
	events := []*session.Event{
		{ID: "e1", InvocationID: "inv-1", Author: "model", Timestamp: at,
			LLMResponse: model.LLMResponse{
				Content:       genai.NewContentFromText(strings.Repeat("The quick brown fox. ", 40), genai.RoleModel),
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 120, CandidatesTokenCount: 60, TotalTokenCount: 180},
				TurnComplete:  true,
			},
			Actions: session.EventActions{StateDelta: map[string]any{"turn": 3.0, "s": "x\u00e9\"\n", "n": nil, "o": map[string]any{"a": []any{1.0, "b"}}}},
		},
		{ID: "e2", Author: "user", Timestamp: at, Branch: "a.b",
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: "user", Parts: []*genai.Part{{Text: "hi"}, {Text: "why", Thought: true}}}, Partial: true}},
		{ID: "e3", Author: "tool", Timestamp: at, Actions: session.EventActions{StateDelta: map[string]any{}, Escalate: true, TransferToAgent: "other"},
			LLMResponse: model.LLMResponse{ErrorCode: "E", ErrorMessage: "bad \u2028 thing", ModelVersion: "m-1", Interrupted: true}},
		{ID: "e4", Author: "model", Timestamp: at,
			LLMResponse: model.LLMResponse{Content: genai.NewContentFromFunctionCall("f", map[string]any{"x": 1.0}, genai.RoleModel)}},
	}
	var out [][]byte
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{"id":"a","id":"b","timestamp":"2026-01-01T00:00:00Z","invocationId":"","author":"","actions":{}}`),
		[]byte(`{"ID":"a","timestamp":"2026-01-01T00:00:00Z","invocationId":"","author":"","actions":{}}`),
		[]byte(`{"id":"a","timestamp":1767225600.5,"invocationId":"","author":"","actions":{}}`),
		[]byte(`{"id":"a\ud800","timestamp":"2026-01-01T00:00:00Z","actions":{"stateDelta":{"k":1e400}}}`),
		[]byte(`{"content":null,"usageMetadata":{"totalTokenCount":2147483648},"id":"\xff"}`),
		[]byte(` { "id" : "a" , "turnComplete" : false , "actions" : { "stateDelta" : { "k" : -0.5e-3 , "k" : [ ] } } } `),
	)
}

// TestFastDecodeCommonShape: the events the service writes take the fast
// path, and decode exactly as with encoding/json; the near misses fall
// back (and decodeEvent still agrees with encoding/json).
func TestFastDecodeCommonShape(t *testing.T) {
	seeds := fastDecodeSeeds(t)
	for i, data := range seeds {
		var fast session.Event
		ok := fastDecodeEvent(data, &fast)
		if want := i < 3; ok != want {
			t.Errorf("seed %d: fast path %v, want %v: %s", i, ok, want, data)
		}
		compareDecoders(t, data)
	}
}

// FuzzFastDecodeEvent: whenever the fast decoder accepts a document,
// encoding/json accepts it too and decodes the same event; and
// decodeEvent (fast path or not) always agrees with encoding/json.
func FuzzFastDecodeEvent(f *testing.F) {
	for _, s := range fastDecodeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { compareDecoders(t, data) })
}

func compareDecoders(t *testing.T, data []byte) {
	t.Helper()
	var slow session.Event
	slowErr := json.Unmarshal(data, &slow)
	var fast session.Event
	if fastDecodeEvent(data, &fast) {
		if slowErr != nil {
			t.Fatalf("fast decoder accepted what encoding/json refuses (%v): %q", slowErr, data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoders differ on %q:\nfast %#v\njson %#v", data, fast, slow)
		}
	}
	got, err := decodeEvent(storeEvent(data))
	if (err != nil) != (slowErr != nil) {
		t.Fatalf("decodeEvent error %v, encoding/json %v: %q", err, slowErr, data)
	}
	if err == nil && !reflect.DeepEqual(*got, slow) {
		t.Fatalf("decodeEvent differs from encoding/json on %q", data)
	}
}

// BenchmarkDecodeEvent compares the fast decoder with encoding/json on a
// stored model event of about 1 KiB:
//
//	cd adk && go test -run '^$' -bench DecodeEvent
func BenchmarkDecodeEvent(b *testing.B) {
	data, err := json.Marshal(&session.Event{ID: "ev-1795435808641964683-3", InvocationID: "inv-0", Author: "assistant",
		Timestamp: time.Date(2026, 7, 8, 9, 10, 11, 123_456_000, time.UTC),
		LLMResponse: model.LLMResponse{
			Content:       genai.NewContentFromText(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 18), genai.RoleModel),
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 120, CandidatesTokenCount: 60, TotalTokenCount: 180},
			TurnComplete:  true,
		},
		Actions: session.EventActions{StateDelta: map[string]any{"turn": 3.0}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decoder=fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev session.Event
			if !fastDecodeEvent(data, &ev) {
				b.Fatal("fell back")
			}
		}
	})
	b.Run("decoder=encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ev session.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
