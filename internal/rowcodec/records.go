package rowcodec

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/internal/jsontext"
	"github.com/agentstore/sessionstore/store"
)

// EncodeTraceEvent validates a trace event to be written (see
// store.TraceEvent.Validate) and returns its stored form: its JSON with
// Details compacted, without Seq and CreatedAt, which are kept in columns.
func EncodeTraceEvent(field string, e store.TraceEvent) ([]byte, error) {
	if err := e.Validate(field); err != nil {
		return nil, err
	}
	d, err := store.NormalizeDocument(field+".details", e.Details)
	if err != nil {
		return nil, err
	}
	e.Details, e.Seq, e.CreatedAt = d, 0, time.Time{}
	return encodeDoc(field, e)
}

// DecodeTraceEvent parses the stored form of a trace event. Seq and
// CreatedAt are left for the caller to set from their columns.
func DecodeTraceEvent(data []byte) (store.TraceEvent, error) {
	var e store.TraceEvent
	err := json.Unmarshal(data, &e)
	return e, err
}

// EncodeVerificationReport validates a verification report to be written
// (see store.VerificationReport.Validate) and returns its stored form: its
// JSON (checks an empty list when there are none), without Seq and
// CreatedAt, which are kept in columns.
func EncodeVerificationReport(field string, r store.VerificationReport) ([]byte, error) {
	if err := r.Validate(field); err != nil {
		return nil, err
	}
	if r.Checks == nil {
		r.Checks = []store.VerificationCheck{}
	}
	r.Seq, r.CreatedAt = 0, time.Time{}
	return encodeDoc(field, r)
}

// DecodeVerificationReport parses the stored form of a verification
// report. Seq and CreatedAt are left for the caller to set from their
// columns.
func DecodeVerificationReport(data []byte) (store.VerificationReport, error) {
	var r store.VerificationReport
	err := json.Unmarshal(data, &r)
	return r, err
}

// EncodeRunEvents validates run events to be appended to a run (see
// store.RunEvent.Validate). It returns them as they are stored, with
// compacted JSON and the timestamp defaulted to now and truncated to
// milliseconds, and each event's stored form, its JSON. Seq is ignored:
// the append numbers the events.
func EncodeRunEvents(field string, events []store.RunEvent, now time.Time) ([]store.RunEvent, [][]byte, error) {
	out := make([]store.RunEvent, len(events))
	docs := make([][]byte, len(events))
	for i, ev := range events {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := ev.Validate(f); err != nil {
			return nil, nil, err
		}
		doc, err := store.NormalizeDocument(f+".event", ev.Event)
		if err != nil {
			return nil, nil, err
		}
		ev.Event = doc
		if ev.Timestamp.IsZero() {
			ev.Timestamp = now
		}
		ev.Timestamp = FromMillis(ToMillis(ev.Timestamp))
		out[i], docs[i] = ev, doc
	}
	return out, docs, nil
}

// DecodeRunSnapshot parses the stored body of a run snapshot (prompt,
// result, error and extra fields, as store.NormalizeRun returns it). ID,
// Status, EventCount and the times are left for the caller to set from
// their columns.
func DecodeRunSnapshot(data []byte) (store.RunSnapshot, error) {
	var s store.RunSnapshot
	err := json.Unmarshal(data, &s)
	return s, err
}

// encodeDoc marshals a stored document and bounds its size by
// store.MaxDocumentBytes. The error is an *store.InvalidInputError.
func encodeDoc(field string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil { // validated values of strings, numbers and compact JSON
		return nil, store.Invalid(field, "cannot be encoded as JSON")
	}
	if len(b) > store.MaxDocumentBytes {
		return nil, store.Invalid(field, "too large")
	}
	return jsontext.PlainHTMLChars(b), nil
}
