package sqlcore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentstore/sessionstore/internal/rowcodec"
	"github.com/agentstore/sessionstore/store"
)

// UseRecords returns a page of a governed session's recorded Use outcomes
// (see store.UseRecorder). The cursor is "<created_at_ms>:<request id>".
func (s *Store) UseRecords(ctx context.Context, req store.UseRecordsRequest) (store.Page[store.UseRecord], error) {
	var page store.Page[store.UseRecord]
	req, err := req.Normalize()
	if err != nil {
		return page, err
	}
	toolsJSON := s.useToolsJSON()
	afterMS, afterID := int64(-1<<62), ""
	if req.Cursor != "" {
		ms, id, ok := strings.Cut(req.Cursor, ":")
		n, perr := strconv.ParseInt(ms, 10, 64)
		if !ok || perr != nil {
			return page, store.Invalid("cursor", "not a cursor of this listing")
		}
		afterMS, afterID = n, id
	}
	query := `SELECT session_id, request_id, ` + toolsJSON + `, outcome, detail, created_at_ms FROM governed_use_requests
		WHERE session_id = ? AND (created_at_ms > ? OR (created_at_ms = ? AND request_id > ?)) AND tenant = ?
		ORDER BY created_at_ms, request_id LIMIT ?`
	page.Items = []store.UseRecord{}
	err = s.db.Query(ctx, query, []any{req.SessionID, afterMS, afterMS, afterID, s.tenant, req.Limit + 1}, func(r Rows) error {
		rec, err := scanUseRecord(r)
		page.Items = append(page.Items, rec)
		return err
	})
	if err != nil {
		return store.Page[store.UseRecord]{}, err
	}
	if len(page.Items) > req.Limit {
		page.Items = page.Items[:req.Limit]
		last := page.Items[len(page.Items)-1]
		page.Next = strconv.FormatInt(rowcodec.ToMillis(last.CreatedAt), 10) + ":" + last.RequestID
	}
	return page, nil
}

// useToolsJSON selects the tools of a use record as a JSON array.
func (s *Store) useToolsJSON() string {
	if s.d.Name == "postgres" {
		return "array_to_json(tools)::text" // TEXT[] there, a JSON array on SQLite
	}
	return "tools"
}

// scanUseRecord reads a row of (session_id, request_id, tools as JSON,
// outcome, detail, created_at_ms).
func scanUseRecord(r Rows) (store.UseRecord, error) {
	var rec store.UseRecord
	var tools, detail string
	var ms int64
	if err := r.Scan(&rec.SessionID, &rec.RequestID, &tools, &rec.Outcome, &detail, &ms); err != nil {
		return rec, err
	}
	if err := json.Unmarshal([]byte(tools), &rec.Tools); err != nil {
		return rec, fmt.Errorf("%w: use record tools: %w", store.ErrCorrupt, err)
	}
	if rec.Tools == nil {
		rec.Tools = []string{}
	}
	if rec.Outcome == rowcodec.UseOutcomeOK {
		if u, recorded, err := rowcodec.DecodeUseSuccess(detail); err == nil && recorded {
			rec.CallsMade = u.CallsMade
		}
	}
	rec.CreatedAt = rowcodec.FromMillis(ms)
	return rec, nil
}

// RecentRefusals returns the latest refused use records of every session
// (see store.UseRecorder).
func (s *Store) RecentRefusals(ctx context.Context, limit int) ([]store.UseRecord, error) {
	f, err := store.ListFilter{Limit: limit}.Normalize()
	if err != nil {
		return nil, err
	}
	query := `SELECT session_id, request_id, ` + s.useToolsJSON() + `, outcome, detail, created_at_ms FROM governed_use_requests
		WHERE outcome <> ? AND tenant = ? ORDER BY created_at_ms DESC, session_id, request_id LIMIT ?`
	out := []store.UseRecord{}
	err = s.db.Query(ctx, query, []any{rowcodec.UseOutcomeOK, s.tenant, f.Limit}, func(r Rows) error {
		rec, err := scanUseRecord(r)
		out = append(out, rec)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// msPerDay is one UTC day in milliseconds.
const msPerDay = 24 * 60 * 60 * 1000

// UseOutcomes counts use records by outcome and UTC day (see
// store.UseRecorder).
func (s *Store) UseOutcomes(ctx context.Context, since time.Time) ([]store.UseOutcomeCount, error) {
	query := `SELECT created_at_ms / ` + strconv.Itoa(msPerDay) + ` AS day, outcome, count(*) FROM governed_use_requests
		WHERE created_at_ms >= ? AND tenant = ? GROUP BY day, outcome ORDER BY day, outcome`
	out := []store.UseOutcomeCount{}
	err := s.db.Query(ctx, query, []any{rowcodec.ToMillis(since), s.tenant}, func(r Rows) error {
		var c store.UseOutcomeCount
		var day int64
		if err := r.Scan(&day, &c.Outcome, &c.Count); err != nil {
			return err
		}
		c.Day = rowcodec.FromMillis(day * msPerDay)
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
