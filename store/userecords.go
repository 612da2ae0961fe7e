package store

import (
	"context"
	"time"
)

// UseRecord is the recorded outcome of a Use that carried a request id
// (see UseRequest.RequestID): what a replay of that id returns.
type UseRecord struct {
	SessionID string   `json:"session_id"`
	RequestID string   `json:"request_id"`
	Tools     []string `json:"tools"`
	// Outcome is "ok" for an allowed call, else the refusal's kind:
	// "closed", "expired", "budget", "tool" or "rate".
	Outcome string `json:"outcome"`
	// CallsMade is the session's call count right after an allowed call
	// (0 for a refusal, or for a record that kept no counters).
	CallsMade int64     `json:"calls_made"`
	CreatedAt time.Time `json:"created_at"`
}

// Use outcomes of a UseRecord.
const (
	UseOK      = "ok"
	UseClosed  = "closed"
	UseExpired = "expired"
	UseBudget  = "budget"
	UseTool    = "tool"
	UseRate    = "rate"
)

// UseRecordsRequest pages through a governed session's use records.
type UseRecordsRequest struct {
	// SessionID is the governed session. Required.
	SessionID string
	// Cursor is the Next of the previous page; empty for the first page.
	Cursor string
	// Limit bounds the page; 0 means DefaultPageSize, at most MaxPageSize.
	Limit int
}

// Normalize validates r and applies the default limit.
func (r UseRecordsRequest) Normalize() (UseRecordsRequest, error) {
	if err := ValidateID("session_id", r.SessionID); err != nil {
		return r, err
	}
	f, err := ListFilter{Limit: r.Limit}.Normalize()
	r.Limit = f.Limit
	return r, err
}

// UseRecorder is implemented by the Governance facets of the backends
// that can list the use records of a session (both sqlstore and pgstore):
// a read for inspection tools, kept out of the Governance interface so
// that other implementations need not provide it.
type UseRecorder interface {
	// UseRecords returns a page of the session's use records, oldest
	// first (by time, then request id). A session without records, or a
	// missing one, gives an empty page.
	UseRecords(ctx context.Context, req UseRecordsRequest) (Page[UseRecord], error)
	// RecentRefusals returns the latest refused use records of every
	// session, newest first, at most limit (0 means DefaultPageSize, at
	// most MaxPageSize). It reads the whole table of records: it is for
	// inspection, not for a hot path.
	RecentRefusals(ctx context.Context, limit int) ([]UseRecord, error)
	// UseOutcomes counts the use records of every session created at or
	// after since, by outcome and by UTC day, in day then outcome order.
	UseOutcomes(ctx context.Context, since time.Time) ([]UseOutcomeCount, error)
}

// UseOutcomeCount is the number of use records of one outcome on one UTC
// day.
type UseOutcomeCount struct {
	Day     time.Time `json:"day"` // midnight UTC
	Outcome string    `json:"outcome"`
	Count   int64     `json:"count"`
}
