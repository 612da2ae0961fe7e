package sqlcore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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
	toolsJSON := "tools"
	if s.d.Name == "postgres" {
		toolsJSON = "array_to_json(tools)::text" // TEXT[] there, a JSON array on SQLite
	}
	afterMS, afterID := int64(-1<<62), ""
	if req.Cursor != "" {
		ms, id, ok := strings.Cut(req.Cursor, ":")
		n, perr := strconv.ParseInt(ms, 10, 64)
		if !ok || perr != nil {
			return page, store.Invalid("cursor", "not a cursor of this listing")
		}
		afterMS, afterID = n, id
	}
	query := `SELECT request_id, ` + toolsJSON + `, outcome, detail, created_at_ms FROM governed_use_requests
		WHERE session_id = ? AND (created_at_ms > ? OR (created_at_ms = ? AND request_id > ?))
		ORDER BY created_at_ms, request_id LIMIT ?`
	page.Items = []store.UseRecord{}
	err = s.db.Query(ctx, query, []any{req.SessionID, afterMS, afterMS, afterID, req.Limit + 1}, func(r Rows) error {
		var rec store.UseRecord
		var tools, detail string
		var ms int64
		if err := r.Scan(&rec.RequestID, &tools, &rec.Outcome, &detail, &ms); err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(tools), &rec.Tools); err != nil {
			return fmt.Errorf("%w: use record tools: %w", store.ErrCorrupt, err)
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
		page.Items = append(page.Items, rec)
		return nil
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
