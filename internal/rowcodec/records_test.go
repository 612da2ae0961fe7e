package rowcodec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentstore/sessionstore/store"
)

func TestTraceEventRoundTrip(t *testing.T) {
	ev := store.TraceEvent{Seq: 7, Schema: "a3s.trace_event.v1", Kind: store.TraceToolExecution, Name: "bash",
		Success: true, ExitCode: 1, DurationMS: 12, OutputBytes: 34, MetadataKeys: []string{"k"},
		ArtifactURIs: []string{"a3s://x"}, Details: json.RawMessage(`{ "a" : 1 }`), CreatedAt: time.Now()}
	doc, err := EncodeTraceEvent("events[0]", ev)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), `"seq"`) || strings.Contains(string(doc), `"created_at"`) {
		t.Fatalf("stored form carries the column fields: %s", doc)
	}
	got, err := DecodeTraceEvent(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := ev
	want.Seq, want.CreatedAt, want.Details = 0, time.Time{}, json.RawMessage(`{"a":1}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nwant %+v", got, want)
	}
	ev.Kind = ""
	if _, err := EncodeTraceEvent("events[0]", ev); !isInvalid(err, "events[0].kind") {
		t.Fatalf("trace without kind: %v", err)
	}
}

func TestVerificationReportRoundTrip(t *testing.T) {
	r := store.VerificationReport{Seq: 3, Schema: "v1", Subject: "program:test", Status: store.VerificationPassed,
		ResidualRisks: []string{"r"}, CreatedAt: time.Now()}
	doc, err := EncodeVerificationReport("reports[0]", r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeVerificationReport(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := r
	want.Seq, want.CreatedAt, want.Checks = 0, time.Time{}, []store.VerificationCheck{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nwant %+v", got, want)
	}
	r.Status = ""
	if _, err := EncodeVerificationReport("reports[0]", r); !isInvalid(err, "reports[0].status") {
		t.Fatalf("report without status: %v", err)
	}
	big := store.VerificationReport{Subject: "s", Status: "passed"}
	for range 9 {
		big.ResidualRisks = append(big.ResidualRisks, strings.Repeat("x", store.MaxTextBytes))
	}
	if _, err := EncodeVerificationReport("reports[0]", big); !isInvalid(err, "reports[0]") {
		t.Fatalf("report over MaxDocumentBytes: %v", err)
	}
}

func TestEncodeRunEvents(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.UTC)
	at := time.Date(2025, 1, 1, 0, 0, 0, 1_999_999, time.FixedZone("x", 3600))
	got, docs, err := EncodeRunEvents("events", []store.RunEvent{
		{Seq: 9, Event: json.RawMessage(`{ "type" : "start" }`)},
		{Seq: 2, Timestamp: at, Event: json.RawMessage(`[1, 2]`)},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	if string(docs[0]) != `{"type":"start"}` || string(docs[1]) != `[1,2]` || string(got[0].Event) != string(docs[0]) {
		t.Fatalf("stored forms %s %s, events %s", docs[0], docs[1], got[0].Event)
	}
	if !got[0].Timestamp.Equal(now.Truncate(time.Millisecond)) || got[1].Timestamp != FromMillis(at.UnixMilli()) {
		t.Fatalf("timestamps %v %v", got[0].Timestamp, got[1].Timestamp)
	}
	for _, event := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{`)} {
		_, _, err := EncodeRunEvents("events", []store.RunEvent{{Event: event}}, now)
		if !isInvalid(err, "events[0].event") {
			t.Fatalf("event %q: %v", event, err)
		}
	}
}

func TestDecodeRunSnapshot(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec, body, _, err := store.NormalizeRun("runs[0]", store.RunRecord{Snapshot: store.RunSnapshot{
		ID: "r1", Prompt: "p", ResultText: "ok", Error: "", Extra: json.RawMessage(`{"b": [1]}`)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRunSnapshot(body)
	if err != nil {
		t.Fatal(err)
	}
	s := rec.Snapshot
	if got.Prompt != s.Prompt || got.ResultText != s.ResultText || string(got.Extra) != `{"b":[1]}` || got.ID != "" {
		t.Fatalf("decoded %+v from %s", got, body)
	}
}

// isInvalid reports whether err is an *InvalidInputError naming field.
func isInvalid(err error, field string) bool {
	var inv *store.InvalidInputError
	return errors.As(err, &inv) && inv.Field == field
}
