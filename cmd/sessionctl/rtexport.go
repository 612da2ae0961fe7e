package main

// Maintenance of runtime sessions: export and import (the session's
// fields, its model overrides and its uploads with their content), stats.
// gc leaves them alone: they have no idle expiry.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var rtOps = facetOps{
	one: "runtime session", many: "runtime sessions",
	count:     func(c *facetCounts) *int64 { return &c.Runtime },
	section:   "runtime_sessions",
	export:    exportRuntimeSessions,
	restore:   restoreRuntime,
	stats:     statsRuntime,
	statsRows: statsRuntimeRows,
	gcNone:    "runtime sessions: they have no idle expiry and stay until removed",
}

// exportRuntimeSessions writes every runtime session, or those of x.ids.
func exportRuntimeSessions(ctx context.Context, x *exportRun) error {
	x.out.open("runtime_sessions", '[')
	defer x.out.close(']')
	add := func(id string) error {
		r, err := exportRuntime(ctx, x.st, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // removed since it was listed, or not a runtime session
		}
		if err != nil {
			return err
		}
		x.out.value("", r)
		x.counts.Runtime++
		x.tick()
		return nil
	}
	if x.ids != nil {
		for _, id := range x.ids {
			if err := add(id); err != nil {
				return err
			}
		}
		return nil
	}
	req := store.ListIDsRequest{Limit: store.MaxPageSize}
	for {
		page, err := x.st.Runtime().ListIDs(ctx, req)
		if err != nil {
			return err
		}
		for _, id := range page.Items {
			if err := add(id); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		req.After = page.Next
	}
}

// restoreRuntime reads the runtime sessions of an export document and
// restores each with its times, overrides, turn generation and uploads.
func restoreRuntime(ctx context.Context, x *importRun, in *jsonIn, _ int) error {
	seen := map[string]bool{}
	return in.array(func(i int) error {
		var r rtExport
		if err := in.decode(&r); err != nil {
			return err
		}
		rec, err := r.record(fmt.Sprintf("runtime_sessions[%d]", i))
		if err != nil {
			return err
		}
		id := rec.Session.ID
		if seen[id] {
			return store.Invalid("runtime_sessions", "id "+id+" appears twice")
		}
		seen[id] = true
		return x.put(&x.counts.Runtime, "runtime session "+id, func(w store.RecordWriter) (bool, error) {
			return w.PutRuntimeSession(rec)
		})
	})
}

func statsRuntime(ctx context.Context, _ *globals, st cliStore, doc *statsJSON) error {
	var err error
	doc.Runtime, err = countRuntime(ctx, st)
	return err
}

func statsRuntimeRows(doc *statsJSON) [][2]string {
	return [][2]string{
		{"runtime sessions", rtCountsText(doc.Runtime)},
		{"uploads", fmt.Sprintf("%d, %s", doc.Runtime.Uploads, humanBytes(doc.Runtime.UploadBytes))},
	}
}

// rtExport is one runtime session in an export file. Its times, its
// uploads' times and its turn's generation and start are restored; the
// turn is not running after an import (a turn belongs to the process that
// ran it; the destination's generation counter moves past it).
type rtExport struct {
	Session store.RuntimeSession `json:"session"`
	Uploads []uploadContentJSON  `json:"uploads"`
}

// exportRuntime reads runtime session id with its uploads' content.
func exportRuntime(ctx context.Context, st cliStore, id string) (rtExport, error) {
	rt := st.Runtime()
	var x rtExport
	var err error
	if x.Session, err = rt.Get(ctx, id); err != nil {
		return x, err
	}
	ups, err := allUploads(ctx, st, id)
	if err != nil {
		return x, err
	}
	x.Uploads = []uploadContentJSON{}
	for _, u := range ups {
		u, content, err := rt.ReadUpload(ctx, id, u.RefID)
		if err != nil {
			return x, err
		}
		x.Uploads = append(x.Uploads, uploadContentJSON{Upload: u, ContentBase64: base64.StdEncoding.EncodeToString(content)})
	}
	return x, nil
}

// record checks x as the store would on import (uploads against their
// SHA-256), without writing, and returns it as a record to restore. The
// error is an *InvalidInputError.
func (x *rtExport) record(field string) (store.RuntimeRecord, error) {
	s := x.Session
	rec := store.RuntimeRecord{Session: s}
	req := store.NewRuntimeSession{ID: s.ID, AgentAlias: s.AgentAlias, WorkspaceDir: s.WorkspaceDir, ChatMode: s.ChatMode, OwnerID: s.OwnerID}
	if s.ID == "" {
		return rec, store.Invalid(field+".session.id", "must not be empty")
	}
	if err := req.Validate(); err != nil {
		return rec, prefixInvalid(field+".session", err)
	}
	if err := s.Overrides.Validate(); err != nil {
		return rec, prefixInvalid(field+".session.overrides", err)
	}
	for i, u := range x.Uploads {
		f := fmt.Sprintf("%s.uploads[%d]", field, i)
		if u.SessionID != "" && u.SessionID != s.ID {
			return rec, store.Invalid(f+".session_id", "is not the session's id")
		}
		content, err := base64.StdEncoding.DecodeString(u.ContentBase64)
		if err != nil {
			return rec, store.Invalid(f+".content_base64", "not valid base64")
		}
		put := store.PutUploadRequest{SessionID: s.ID, RefID: u.RefID, Marker: u.Marker,
			WorkspacePath: u.WorkspacePath, Content: content, SHA256: u.SHA256}
		if err := put.Validate(); err != nil {
			return rec, prefixInvalid(f, err)
		}
		if _, err := put.CheckContent(sqlstore.MaxUploadLimit); err != nil {
			return rec, prefixInvalid(f, err)
		}
		rec.Uploads = append(rec.Uploads, store.UploadRecord{Upload: u.Upload, Content: content})
	}
	return rec, nil
}
