package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/internal/jsontext"
)

// Bounds of per-conversation records.
const (
	// MaxArtifactBytes bounds the content of one artifact.
	MaxArtifactBytes = 16 << 20
	// MaxRecordsPerCall bounds the artifacts, trace events, runs, run
	// events or reports of one call.
	MaxRecordsPerCall = 10_000
)

// Artifact is a tool output kept aside from the model-visible history,
// addressed by URI within its conversation. Putting an artifact with an
// existing URI replaces it.
type Artifact struct {
	// URI addresses the artifact, e.g. "a3s://tool-output/read/abc". Required.
	URI string `json:"uri"`
	// ID is the runtime's artifact id.
	ID string `json:"id"`
	// ToolName is the tool that produced the output.
	ToolName string `json:"tool_name"`
	// Content is the full output.
	Content string `json:"content"`
	// OriginalBytes and ShownBytes are the output's size and how much of
	// it the model saw.
	OriginalBytes int64 `json:"original_bytes"`
	ShownBytes    int64 `json:"shown_bytes"`
	// CreatedAt is when the URI was first stored, UpdatedAt when it was last
	// replaced. Set by the store.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Validate checks an artifact to be written.
func (a *Artifact) Validate(field string) error {
	if err := checkShort(field+".uri", a.URI); err != nil {
		return err
	}
	for name, v := range map[string]string{".id": a.ID, ".tool_name": a.ToolName} {
		if err := checkText(field+name, v); err != nil {
			return err
		}
	}
	if len(a.Content) > MaxArtifactBytes {
		return Invalid(field+".content", "too large")
	}
	if !validText(a.Content) {
		return Invalid(field+".content", "must be valid UTF-8 without NUL")
	}
	if a.OriginalBytes < 0 || a.ShownBytes < 0 {
		return Invalid(field, "sizes must not be negative")
	}
	return nil
}

// Trace event kinds written by runtimes.
const (
	TraceToolExecution    = "tool_execution"
	TraceProgramExecution = "program_execution"
)

// TraceEvent is a compact execution fact (a tool or program run). Trace
// events are appended (AppendTraces) or replaced as a whole (SaveTraces);
// Seq and CreatedAt are assigned by the store.
type TraceEvent struct {
	// Seq is the event's 0-based position in its conversation. Set by the
	// store.
	Seq int64 `json:"seq,omitzero"`
	// Schema names the event format, e.g. "a3s.trace_event.v1".
	Schema string `json:"schema"`
	// Kind is TraceToolExecution, TraceProgramExecution or another kind.
	// Required.
	Kind        string `json:"kind"`
	Name        string `json:"name"`
	Success     bool   `json:"success"`
	ExitCode    int64  `json:"exit_code"`
	DurationMS  int64  `json:"duration_ms"`
	OutputBytes int64  `json:"output_bytes"`
	// MetadataKeys and ArtifactURIs summarize the tool's metadata.
	MetadataKeys []string `json:"metadata_keys,omitempty"`
	ArtifactURIs []string `json:"artifact_uris,omitempty"`
	// Details is a JSON summary kept verbatim (compacted), or nil.
	Details json.RawMessage `json:"details,omitempty"`
	// CreatedAt is when the event was stored. Set by the store.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// Validate checks a trace event to be appended or saved: its fields, and
// its JSON (without Seq and CreatedAt, which the store sets) within
// MaxDocumentBytes. The error is an *InvalidInputError.
func (e *TraceEvent) Validate(field string) error {
	if err := checkShort(field+".kind", e.Kind); err != nil {
		return err
	}
	for name, v := range map[string]string{".schema": e.Schema, ".name": e.Name} {
		if err := checkText(field+name, v); err != nil {
			return err
		}
	}
	if e.DurationMS < 0 || e.OutputBytes < 0 {
		return Invalid(field, "duration and size must not be negative")
	}
	if err := checkNames(field+".metadata_keys", e.MetadataKeys); err != nil {
		return err
	}
	if err := checkNames(field+".artifact_uris", e.ArtifactURIs); err != nil {
		return err
	}
	d, err := NormalizeDocument(field+".details", e.Details)
	if err != nil {
		return err
	}
	doc := *e
	doc.Details, doc.Seq, doc.CreatedAt = d, 0, time.Time{}
	_, err = encodeDoc(field, doc)
	return err
}

// Run statuses written by runtimes.
const (
	RunCreated   = "created"
	RunPlanning  = "planning"
	RunExecuting = "executing"
	RunVerifying = "verifying"
	RunCompleted = "completed"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

// RunRecord is one agent run: its status snapshot and its replayable events.
type RunRecord struct {
	Snapshot RunSnapshot `json:"snapshot"`
	Events   []RunEvent  `json:"events"`
}

// RunSnapshot is the status of a run.
type RunSnapshot struct {
	// ID identifies the run within its conversation. Required.
	ID string `json:"id"`
	// Status is one of the Run* statuses (or another); empty means
	// RunCreated.
	Status     string `json:"status"`
	Prompt     string `json:"prompt"`
	ResultText string `json:"result_text,omitempty"`
	Error      string `json:"error,omitempty"`
	// EventCount is the cumulative number of events the run recorded
	// (events may have been trimmed by the runtime; it never decreases
	// through AppendRunEvents).
	EventCount int64 `json:"event_count"`
	// CreatedAt and UpdatedAt are kept as given (millisecond precision);
	// when zero, the store's clock is used. AppendRunEvents sets UpdatedAt
	// to the store's clock.
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Extra is a JSON object of further snapshot fields (bindings, change
	// sets, ...) kept verbatim (compacted), or nil.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// RunEvent is one replayable runtime event of a run.
type RunEvent struct {
	// Seq is the event's sequence number within the run. PutRuns keeps
	// the given numbers (strictly increasing); AppendRunEvents assigns them.
	Seq int64 `json:"sequence"`
	// Timestamp is when the event happened (millisecond precision); when
	// zero, the store's clock is used.
	Timestamp time.Time `json:"timestamp"`
	// Event is the runtime event as JSON, kept verbatim (compacted).
	// Required.
	Event json.RawMessage `json:"event"`
}

// NormalizeRun validates a run record for PutRuns and applies the
// defaults: status, times (truncated to milliseconds), event count,
// compacted documents. It returns the snapshot's stored form
// (without the fields the store keeps in columns) and each event's JSON.
func NormalizeRun(field string, r RunRecord, now time.Time) (RunRecord, []byte, [][]byte, error) {
	s := r.Snapshot
	if err := checkShort(field+".snapshot.id", s.ID); err != nil {
		return r, nil, nil, err
	}
	if s.Status == "" {
		s.Status = RunCreated
	}
	if err := checkShort(field+".snapshot.status", s.Status); err != nil {
		return r, nil, nil, err
	}
	for name, v := range map[string]string{".prompt": s.Prompt, ".result_text": s.ResultText, ".error": s.Error} {
		if err := checkText(field+".snapshot"+name, v); err != nil {
			return r, nil, nil, err
		}
	}
	if s.EventCount < 0 {
		return r, nil, nil, Invalid(field+".snapshot.event_count", "must not be negative")
	}
	extra, err := NormalizeDocument(field+".snapshot.extra", s.Extra)
	if err != nil {
		return r, nil, nil, err
	}
	s.Extra = extra
	if s.CreatedAt.IsZero() {
		s.CreatedAt = now
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = now
	}
	s.CreatedAt, s.UpdatedAt = truncMS(s.CreatedAt), truncMS(s.UpdatedAt)
	if len(r.Events) > MaxRecordsPerCall {
		return r, nil, nil, Invalid(field+".events", "too many entries")
	}
	events, docs, err := normalizeRunEvents(field+".events", r.Events, now)
	if err != nil {
		return r, nil, nil, err
	}
	if n := int64(len(events)); s.EventCount < n {
		s.EventCount = n
	}
	body := RunSnapshot{Prompt: s.Prompt, ResultText: s.ResultText, Error: s.Error, Extra: s.Extra}
	doc, err := encodeDoc(field+".snapshot", body)
	if err != nil {
		return r, nil, nil, err
	}
	return RunRecord{Snapshot: s, Events: events}, doc, docs, nil
}

// Validate checks one run event to be written: Event must be a JSON
// document other than null. Seq is not checked here (PutRuns requires the
// events of a run to be numbered strictly increasing, see NormalizeRun;
// AppendRunEvents numbers them itself). The error is an
// *InvalidInputError.
func (ev *RunEvent) Validate(field string) error {
	_, err := ev.document(field)
	return err
}

// document validates the event and returns its JSON, compacted.
func (ev *RunEvent) document(field string) (json.RawMessage, error) {
	if ev.Event == nil {
		return nil, Invalid(field+".event", "must not be empty")
	}
	doc, err := NormalizeDocument(field+".event", ev.Event)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, Invalid(field+".event", "must not be null")
	}
	return doc, nil
}

// normalizeRunEvents validates the events of a run record: sequence
// numbers non-negative and strictly increasing, each event valid. It
// returns them with compacted JSON and times defaulted to now and truncated
// to milliseconds, and each event's JSON.
func normalizeRunEvents(field string, events []RunEvent, now time.Time) ([]RunEvent, [][]byte, error) {
	out := make([]RunEvent, len(events))
	docs := make([][]byte, len(events))
	for i, ev := range events {
		f := fmt.Sprintf("%s[%d]", field, i)
		if ev.Seq < 0 {
			return nil, nil, Invalid(f+".sequence", "must not be negative")
		}
		if i > 0 && ev.Seq <= out[i-1].Seq {
			return nil, nil, Invalid(f+".sequence", "must be strictly increasing")
		}
		doc, err := ev.document(f)
		if err != nil {
			return nil, nil, err
		}
		ev.Event = doc
		if ev.Timestamp.IsZero() {
			ev.Timestamp = now
		}
		ev.Timestamp = truncMS(ev.Timestamp)
		out[i], docs[i] = ev, doc
	}
	return out, docs, nil
}

// Verification statuses.
const (
	VerificationPassed      = "passed"
	VerificationFailed      = "failed"
	VerificationNeedsReview = "needs_review"
	VerificationSkipped     = "skipped"
)

// VerificationReport is a structured verification of a subject (a program,
// a change) made of checks.
type VerificationReport struct {
	// Seq is the report's 0-based position in its conversation. Set by the
	// store.
	Seq int64 `json:"seq,omitzero"`
	// Schema names the report format, e.g. "a3s.verification_report.v1".
	Schema string `json:"schema"`
	// Subject is what was verified. Required.
	Subject string `json:"subject"`
	// Status is one of the Verification* statuses (or another). Required.
	Status        string              `json:"status"`
	Checks        []VerificationCheck `json:"checks"`
	ResidualRisks []string            `json:"residual_risks,omitempty"`
	EffectDigest  string              `json:"effect_digest,omitempty"`
	// CreatedAt is when the report was stored. Set by the store.
	CreatedAt time.Time `json:"created_at,omitzero"`
}

// VerificationCheck is one check of a verification report.
type VerificationCheck struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	Description    string   `json:"description"`
	Status         string   `json:"status"`
	Required       bool     `json:"required"`
	SuggestedTools []string `json:"suggested_tools,omitempty"`
	EvidenceURIs   []string `json:"evidence_uris,omitempty"`
	ResidualRisk   string   `json:"residual_risk,omitempty"`
}

// Validate checks a report to be appended or saved: its fields, and its
// JSON (without Seq and CreatedAt, which the store sets) within
// MaxDocumentBytes. The error is an *InvalidInputError.
func (r *VerificationReport) Validate(field string) error {
	if err := checkShort(field+".subject", r.Subject); err != nil {
		return err
	}
	if err := checkShort(field+".status", r.Status); err != nil {
		return err
	}
	for name, v := range map[string]string{".schema": r.Schema, ".effect_digest": r.EffectDigest} {
		if err := checkText(field+name, v); err != nil {
			return err
		}
	}
	if len(r.Checks) > MaxListItems {
		return Invalid(field+".checks", "too many entries")
	}
	for i, c := range r.Checks {
		f := fmt.Sprintf("%s.checks[%d]", field, i)
		for name, v := range map[string]string{".id": c.ID, ".kind": c.Kind, ".description": c.Description, ".status": c.Status, ".residual_risk": c.ResidualRisk} {
			if err := checkText(f+name, v); err != nil {
				return err
			}
		}
		if err := checkNames(f+".suggested_tools", c.SuggestedTools); err != nil {
			return err
		}
		if err := checkNames(f+".evidence_uris", c.EvidenceURIs); err != nil {
			return err
		}
	}
	if len(r.ResidualRisks) > MaxListItems {
		return Invalid(field+".residual_risks", "too many entries")
	}
	for _, s := range r.ResidualRisks {
		if err := checkText(field+".residual_risks", s); err != nil {
			return err
		}
	}
	doc := *r
	doc.Seq, doc.CreatedAt = 0, time.Time{}
	if doc.Checks == nil {
		doc.Checks = []VerificationCheck{} // as stored
	}
	_, err := encodeDoc(field, doc)
	return err
}

func checkNames(field string, names []string) error {
	if len(names) > MaxListItems {
		return Invalid(field, "too many entries")
	}
	for _, n := range names {
		if err := checkText(field, n); err != nil {
			return err
		}
	}
	return nil
}

// encodeDoc marshals a stored document and bounds its size.
func encodeDoc(field string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Invalid(field, "cannot be encoded as JSON: "+errorReason(err))
	}
	if len(b) > MaxDocumentBytes {
		return nil, Invalid(field, "too large")
	}
	return jsontext.PlainHTMLChars(b), nil
}
