package main

// Maintenance of runtime sessions: export and import (the session's
// fields, its model overrides and its uploads with their content), stats.
// gc leaves them alone: they have no idle expiry.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

var rtOps = facetOps{
	one: "runtime session", many: "runtime sessions",
	count:     func(c *facetCounts) *int64 { return &c.Runtime },
	section:   "runtime_sessions",
	export:    exportRuntimeSessions,
	parse:     parseRuntime,
	prepare:   prepareRuntime,
	restore:   restoreRuntime,
	stats:     statsRuntime,
	statsRows: statsRuntimeRows,
	gcNone:    "runtime sessions: they have no idle expiry and stay until removed",
}

// exportRuntimeSessions adds every runtime session, or those of x.ids.
func exportRuntimeSessions(ctx context.Context, x *exportRun) error {
	x.doc.Runtime = []rtExport{}
	add := func(id string) error {
		r, err := exportRuntime(ctx, x.st, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // removed since it was listed, or not a runtime session
		}
		if err != nil {
			return err
		}
		x.doc.Runtime = append(x.doc.Runtime, r)
		x.counts.Runtime++
		x.found[id] = true
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

// parseRuntime validates the runtime sessions of an export document.
func parseRuntime(doc *exportDoc, _ int, f *importFile) error {
	seen := map[string]bool{}
	for i := range doc.Runtime {
		imp, err := doc.Runtime[i].validate(fmt.Sprintf("runtime_sessions[%d]", i))
		if err != nil {
			return err
		}
		if seen[imp.req.ID] {
			return store.Invalid("runtime_sessions", "id "+imp.req.ID+" appears twice")
		}
		seen[imp.req.ID] = true
		f.runtime = append(f.runtime, imp)
	}
	return nil
}

// prepareRuntime fails on a runtime session id that exists, or drops it
// with --skip-existing.
func prepareRuntime(ctx context.Context, x *importRun) error {
	var keep []rtImport
	for _, r := range x.file.runtime {
		_, err := x.st.Runtime().Get(ctx, r.req.ID)
		switch {
		case err == nil && !x.skip:
			return fmt.Errorf("%w: runtime session %s exists (use --skip-existing)", store.ErrConflict, r.req.ID)
		case err == nil:
			x.doc.Skipped++
		case errors.Is(err, store.ErrNotFound):
			keep = append(keep, r)
		default:
			return err
		}
	}
	x.file.runtime = keep
	return nil
}

// restoreRuntime inserts the runtime sessions.
func restoreRuntime(ctx context.Context, x *importRun) error {
	for _, r := range x.file.runtime {
		if err := importRuntime(ctx, x.st.Runtime(), x.clock, r); err != nil {
			return fmt.Errorf("runtime session %s: %w", r.req.ID, err)
		}
		x.doc.Runtime++
	}
	return nil
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

// rtExport is one runtime session in an export file. Its turn state is
// informative: an import starts the session without a turn (a turn
// belongs to the process that ran it, and generations come from the
// destination's own counter). Its times and its uploads' times are
// restored.
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

// rtImport is a validated runtime session to import.
type rtImport struct {
	req        store.NewRuntimeSession
	overrides  store.Overrides
	uploads    []store.PutUploadRequest
	uploadedAt []time.Time // of each upload; zero: unknown
	createdAt  time.Time   // zero: unknown
	lastActive time.Time
}

// validate checks x as the store would on import (uploads against their
// SHA-256), without writing. The error is an *InvalidInputError.
func (x *rtExport) validate(field string) (rtImport, error) {
	s := x.Session
	imp := rtImport{
		req:        store.NewRuntimeSession{ID: s.ID, AgentAlias: s.AgentAlias, WorkspaceDir: s.WorkspaceDir, ChatMode: s.ChatMode, OwnerID: s.OwnerID},
		overrides:  s.Overrides,
		createdAt:  s.CreatedAt,
		lastActive: s.LastActive,
	}
	if s.ID == "" {
		return imp, store.Invalid(field+".session.id", "must not be empty")
	}
	if err := imp.req.Validate(); err != nil {
		return imp, prefixInvalid(field+".session", err)
	}
	if err := s.Overrides.Validate(); err != nil {
		return imp, prefixInvalid(field+".session.overrides", err)
	}
	for i, u := range x.Uploads {
		f := fmt.Sprintf("%s.uploads[%d]", field, i)
		if u.SessionID != "" && u.SessionID != s.ID {
			return imp, store.Invalid(f+".session_id", "is not the session's id")
		}
		content, err := base64.StdEncoding.DecodeString(u.ContentBase64)
		if err != nil {
			return imp, store.Invalid(f+".content_base64", "not valid base64")
		}
		req := store.PutUploadRequest{SessionID: s.ID, RefID: u.RefID, Marker: u.Marker,
			WorkspacePath: u.WorkspacePath, Content: content, SHA256: u.SHA256}
		if err := req.Validate(); err != nil {
			return imp, prefixInvalid(f, err)
		}
		if _, err := req.CheckContent(sqlstore.MaxUploadLimit); err != nil {
			return imp, prefixInvalid(f, err)
		}
		imp.uploads = append(imp.uploads, req)
		imp.uploadedAt = append(imp.uploadedAt, u.CreatedAt)
	}
	return imp, nil
}

// importRuntime inserts the session, sets its overrides and stores its
// uploads (the store verifies each against its SHA-256). The store stamps
// the session's creation and last-active times and each upload's time
// with its clock, so the clock reads the exported times meanwhile.
func importRuntime(ctx context.Context, rt store.Runtime, clock *importClock, imp rtImport) error {
	defer clock.pin(time.Time{})
	clock.pin(imp.createdAt)
	if _, err := rt.Insert(ctx, imp.req); err != nil {
		return err
	}
	o := imp.overrides
	if o.Model != nil || o.Provider != nil || o.Temperature != nil {
		if _, err := rt.SetOverrides(ctx, imp.req.ID, o); err != nil {
			return err
		}
	}
	for i, u := range imp.uploads {
		clock.pin(imp.uploadedAt[i])
		if _, err := rt.PutUpload(ctx, u); err != nil {
			return fmt.Errorf("upload %s: %w", u.RefID, err)
		}
	}
	if imp.lastActive.After(imp.createdAt) {
		clock.pin(imp.lastActive)
		if err := rt.Touch(ctx, imp.req.ID); err != nil {
			return err
		}
	}
	return nil
}
