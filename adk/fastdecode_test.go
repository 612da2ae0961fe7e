package adk

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"

	"github.com/agentstore/sessionstore/store"
	"google.golang.org/adk/v2/tool/toolconfirmation"

	"github.com/agentstore/sessionstore/adk/internal/benchkit"
)

// runnerSeeds are stored events of the shapes ADK's runner writes (events
// made by session.NewEvent, with an empty artifact delta: text, thoughts,
// function calls and responses, usage metadata, multi-key state deltas),
// one with every member of an event set, and a few older shapes; all of
// them must take the fast path.
func runnerSeeds(t testing.TB) [][]byte {
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
		{ID: "e5", Author: "model", Timestamp: at, InvocationID: "inv-5", Branch: "root.child", IsolationScope: "task-7",
			Actions: session.EventActions{
				StateDelta:    map[string]any{"k": "v", "app:a": 1.0, "user:u": []any{"x", true}},
				ArtifactDelta: map[string]int64{"report.pdf": 3, "neg": -2},
				RequestedToolConfirmations: map[string]toolconfirmation.ToolConfirmation{
					"call-1": {Hint: "really?", Confirmed: true, Payload: map[string]any{"amount": 12.0}},
				},
				SkipSummarization: true, TransferToAgent: "billing", Escalate: true,
			},
			LongRunningToolIDs: []string{"call-1", "call-2"},
			Routes:             []string{"route-a"},
			RequestedInput:     &session.RequestInput{InterruptID: "ask-1", Message: "Your name?", Payload: map[string]any{"hint": "x"}},
			Output:             map[string]any{"result": []any{1.0, "two"}},
			NodeInfo:           &session.NodeInfo{Path: "wf/node@1", MessageAsOutput: true, OutputFor: []string{"wf"}},
			LLMResponse: model.LLMResponse{
				Content: genai.NewContentFromParts([]*genai.Part{
					genai.NewPartFromText("hello"),
					genai.NewPartFromBytes([]byte{0, 1, 2, 255}, "application/octet-stream"),
					{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "lookup", Args: map[string]any{"q": "x"}}, ThoughtSignature: []byte("sig")},
					{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "lookup", Response: map[string]any{"ok": true}}},
					{ExecutableCode: &genai.ExecutableCode{Code: "print(1)", Language: genai.LanguagePython}},
					{PartMetadata: map[string]any{"m": 1.0}},
				}, genai.RoleModel),
				CitationMetadata:  &genai.CitationMetadata{Citations: []*genai.Citation{{Title: "t", URI: "https://example.com"}}},
				GroundingMetadata: &genai.GroundingMetadata{WebSearchQueries: []string{"q1"}},
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{
					PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15, TrafficType: "ON_DEMAND",
					PromptTokensDetails: []*genai.ModalityTokenCount{{Modality: genai.MediaModalityText, TokenCount: 10}},
				},
				CustomMetadata:          map[string]any{"trace": "abc", "n": 3.0},
				LogprobsResult:          &genai.LogprobsResult{ChosenCandidates: []*genai.LogprobsResultCandidate{{LogProbability: -0.25, Token: "hel"}}},
				InputTranscription:      &genai.Transcription{Text: "in", Finished: true},
				OutputTranscription:     &genai.Transcription{Text: "out"},
				ModelVersion:            "model-2026-01",
				TurnComplete:            true,
				SessionResumptionHandle: "resume-123",
				FinishReason:            genai.FinishReasonStop,
				AvgLogprobs:             -0.5,
			},
		},
	}
	for i := range 8 { // the comparison's events: session.NewEvent, four shapes
		events = append(events, benchkit.Event(i))
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
		[]byte(` { "id" : "a" , "turnComplete" : false , "actions" : { "stateDelta" : null, "artifactDelta" : { } } } `),
		[]byte(`{"content":null,"usageMetadata":null,"nodeInfo":{},"output":null,"actions":{"artifactDelta":null}}`),
	)
}

// nearMissSeeds are documents the fast path must leave to encoding/json
// (which decodes some of them and refuses others).
func nearMissSeeds() [][]byte {
	return [][]byte{
		[]byte(`{"id":"a","id":"b","timestamp":"2026-01-01T00:00:00Z","invocationId":"","author":"","actions":{}}`),
		[]byte(`{"ID":"a","timestamp":"2026-01-01T00:00:00Z","invocationId":"","author":"","actions":{}}`),
		[]byte(`{"id":"a","timestamp":1767225600.5,"invocationId":"","author":"","actions":{}}`),
		[]byte(`{"id":"a\ud800","timestamp":"2026-01-01T00:00:00Z","actions":{"stateDelta":{"k":1e400}}}`),
		[]byte(`{"content":null,"usageMetadata":{"totalTokenCount":2147483648},"id":"\xff"}`),
		[]byte(` { "id" : "a" , "turnComplete" : false , "actions" : { "stateDelta" : { "k" : -0.5e-3 , "k" : [ ] } } } `),
		[]byte(`{"actions":{"artifactDelta":{"a":1.5}}}`),
		[]byte(`{"actions":{"artifactDelta":{"a":"1"}}}`),
		[]byte(`{"avgLogprobs":"x"}`),
		[]byte(`{"routes":"x"}`),
		[]byte(`{"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]}}`),
		[]byte(`{"content":{"parts":[{"thoughtSignature":"not base64!"}]}}`),
		[]byte(`{"unknown":1}`),
	}
}

// fastDecodeSeeds are both sets, for the fuzzer.
func fastDecodeSeeds(t testing.TB) [][]byte { return append(runnerSeeds(t), nearMissSeeds()...) }

// TestFastDecodeCommonShape: every shape ADK's runner writes takes the
// fast path and decodes exactly as with encoding/json; the near misses
// fall back (and decodeEvent still agrees with encoding/json).
func TestFastDecodeCommonShape(t *testing.T) {
	for i, data := range runnerSeeds(t) {
		var fast session.Event
		if !fastDecodeEvent(data, &fast, nil) {
			t.Errorf("runner seed %d: fell back: %s", i, data)
		}
		compareDecoders(t, data)
	}
	for i, data := range nearMissSeeds() {
		var fast session.Event
		if fastDecodeEvent(data, &fast, nil) {
			t.Errorf("near miss %d: took the fast path: %s", i, data)
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
	if fastDecodeEvent(data, &fast, nil) {
		if slowErr != nil {
			t.Fatalf("fast decoder accepted what encoding/json refuses (%v): %q", slowErr, data)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decoders differ on %q:\nfast %#v\njson %#v", data, fast, slow)
		}
	}
	// With a slab of one of each struct: a second part or content is
	// allocated on its own.
	var slabbed session.Event
	if fastDecodeEvent(data, &slabbed, newDecodeSlab(1)) && !reflect.DeepEqual(slabbed, slow) {
		t.Fatalf("decoders differ on %q with a slab:\nfast %#v\njson %#v", data, slabbed, slow)
	}
	got, err := decodeEvent(data, func() string { return "the fuzzed event" })
	if (err != nil) != (slowErr != nil) {
		t.Fatalf("decodeEvent error %v, encoding/json %v: %q", err, slowErr, data)
	}
	if err == nil && !reflect.DeepEqual(*got, slow) {
		t.Fatalf("decodeEvent differs from encoding/json on %q", data)
	}
}

// benchDecoder is one way of decoding a stored event, measured by
// BenchmarkDecodeEvent.
type benchDecoder struct {
	name   string
	decode func(data []byte, ev *session.Event) error
}

// benchDecoders are the decoders BenchmarkDecodeEvent compares; a build
// with GOEXPERIMENT=jsonv2 adds the toolchain's encoding/json/v2
// (fastdecode_v2_bench_test.go).
var benchDecoders = []benchDecoder{
	{"fast", func(data []byte, ev *session.Event) error {
		if !fastDecodeEvent(data, ev, nil) {
			return errors.New("fell back")
		}
		return nil
	}},
	{"encoding-json", func(data []byte, ev *session.Event) error { return json.Unmarshal(data, ev) }},
}

// BenchmarkDecodeEvent compares the fast decoder with encoding/json (and,
// built with GOEXPERIMENT=jsonv2, with encoding/json/v2) on the events of
// the comparison, the four shapes ADK's runner writes (benchkit.Event),
// each measured on its own and the four in turn:
//
//	cd adk && go test -run '^$' -bench DecodeEvent
//	cd adk && GOEXPERIMENT=jsonv2 go test -run '^$' -bench DecodeEvent
func BenchmarkDecodeEvent(b *testing.B) {
	shapes := []string{"text", "call", "response", "final"}
	var all [][]byte
	for i := range 4 {
		ev := benchkit.Event(i)
		ev.Timestamp = ev.Timestamp.Truncate(time.Microsecond) // as stored
		data, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, data)
	}
	run := func(b *testing.B, dec benchDecoder, docs [][]byte) {
		b.ReportAllocs()
		n, size := 0, 0
		for b.Loop() {
			data := docs[n%len(docs)]
			n++
			size += len(data)
			var ev session.Event
			if err := dec.decode(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(size / max(n, 1)))
	}
	for _, dec := range benchDecoders {
		b.Run("shape=all/decoder="+dec.name, func(b *testing.B) { run(b, dec, all) })
	}
	for i, shape := range shapes {
		for _, dec := range benchDecoders {
			b.Run("shape="+shape+"/decoder="+dec.name, func(b *testing.B) { run(b, dec, all[i:i+1]) })
		}
	}
}

// BenchmarkDecodeEventAlternating times the decoders of benchDecoders on
// the four shapes in alternating slices of 200 decodes each, so that a
// shared, noisy machine slows them alike, and reports each decoder's time
// per event as a ratio to the fast decoder's (medians over the slices):
//
//	cd adk && GOEXPERIMENT=jsonv2 go test -run '^$' -bench DecodeEventAlternating -benchtime 20x
func BenchmarkDecodeEventAlternating(b *testing.B) {
	var docs [][]byte
	for i := range 4 {
		ev := benchkit.Event(i)
		ev.Timestamp = ev.Timestamp.Truncate(time.Microsecond)
		data, err := json.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, data)
	}
	const slice = 200
	perEvent := make([][]float64, len(benchDecoders))
	for b.Loop() {
		for d, dec := range benchDecoders {
			start := time.Now()
			for i := range slice {
				var ev session.Event
				if err := dec.decode(docs[i%len(docs)], &ev); err != nil {
					b.Fatal(err)
				}
			}
			perEvent[d] = append(perEvent[d], float64(time.Since(start).Nanoseconds())/slice)
		}
	}
	for d, dec := range benchDecoders {
		var ratios []float64
		for i := range perEvent[d] {
			ratios = append(ratios, perEvent[d][i]/perEvent[0][i])
		}
		b.ReportMetric(benchkit.Median(perEvent[d]), dec.name+"-ns/event")
		if d > 0 {
			b.ReportMetric(benchkit.Median(ratios), dec.name+"÷fast")
		}
	}
	b.ReportMetric(benchkit.LoadAverage(), "load")
}

// FuzzDecodeValue: decodeValue (a stored state value) agrees with
// encoding/json on every input, value and error alike.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{`1`, `-0.5e-3`, `"x\u00e9"`, `null`, `true`, `{"a":[1,"b",{"c":null}]}`, `[]`, `{}`,
		` [1, 2] `, `{"a":1,"a":2}`, `1e400`, `"\xff"`, `[1,]`, `{"a"}`, `01`, `"\ud800"`, `[[[[[[]]]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want any
		wantErr := json.Unmarshal(data, &want)
		got, err := decodeValue(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("decodeValue error %v, encoding/json %v: %q", err, wantErr, data)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeValue %#v, encoding/json %#v: %q", got, want, data)
		}
	})
}

// TestFastDecodeLongStrings: a string longer than the vector search's
// threshold decodes as encoding/json decodes it, whatever byte sits at
// any position (a control byte, a quote, a backslash, bytes of UTF-8 or
// not), and hasControl finds a control byte wherever it is.
func TestFastDecodeLongStrings(t *testing.T) {
	base := []byte("abcdefghijklmnopqrstuvwx") // 24 bytes: three words
	for pos := range base {
		for c := 0; c < 256; c++ {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			if got, want := hasControl(b), c < 0x20; got != want {
				t.Fatalf("hasControl with %#x at %d = %v, want %v", c, pos, got, want)
			}
			data := []byte(`{"author":"user","content":{"role":"user","parts":[{"text":"` + string(b) + `"}]}}`)
			compareDecoders(t, data)
		}
	}
}

// TestReadEventsAreIndependent: the events of one read share a slab of
// structs and their documents' memory, yet writing to one event (an
// appended part, a changed text, a new state or artifact key) changes no
// other, and every event equals its own decoding with encoding/json.
func TestReadEventsAreIndependent(t *testing.T) {
	seeds := runnerSeeds(t)
	evs := make([]store.AgentEvent, len(seeds))
	for i, data := range seeds {
		evs[i] = store.AgentEvent{Data: data}
	}
	out := make([]*session.Event, len(evs))
	if err := readEvents(evs, out, 0, len(evs)); err != nil {
		t.Fatal(err)
	}
	want := func(i int) session.Event {
		var ev session.Event
		if err := json.Unmarshal(seeds[i], &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	for i := range out {
		if !reflect.DeepEqual(*out[i], want(i)) {
			t.Fatalf("event %d differs from encoding/json's", i)
		}
	}
	for i, ev := range out {
		if ev.Content != nil {
			ev.Content.Parts = append(ev.Content.Parts, &genai.Part{Text: "appended"})
			ev.Content.Parts[0] = &genai.Part{Text: "replaced"}
			ev.Content.Role = "changed"
		}
		if ev.UsageMetadata != nil {
			ev.UsageMetadata.TotalTokenCount = -1
		}
		if ev.Actions.StateDelta == nil {
			ev.Actions.StateDelta = map[string]any{}
		}
		ev.Actions.StateDelta["written"] = true
		if ev.Actions.ArtifactDelta == nil {
			ev.Actions.ArtifactDelta = map[string]int64{}
		}
		ev.Actions.ArtifactDelta["written"] = 1
		for j := i + 1; j < len(out); j++ {
			if !reflect.DeepEqual(*out[j], want(j)) {
				t.Fatalf("writing to event %d changed event %d", i, j)
			}
		}
	}
}
