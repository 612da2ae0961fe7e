package main

// Export and import of runtime sessions: the session's fields, its model
// overrides and its uploads with their content.

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/agentstore/sessionstore/sqlstore"
	"github.com/agentstore/sessionstore/store"
)

// rtExport is one runtime session in an export file. The session's times
// and turn state are informative: an import starts the session afresh
// (a turn belongs to the process that ran it).
type rtExport struct {
	Session store.RuntimeSession `json:"session"`
	Uploads []uploadContentJSON  `json:"uploads"`
}

// exportRuntime reads runtime session id with its uploads' content.
func exportRuntime(ctx context.Context, st *sqlstore.Store, id string) (rtExport, error) {
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
	req       store.NewRuntimeSession
	overrides store.Overrides
	uploads   []store.PutUploadRequest
}

// validate checks x as the store would on import (uploads against their
// SHA-256), without writing. The error is an *InvalidInputError.
func (x *rtExport) validate(field string) (rtImport, error) {
	s := x.Session
	imp := rtImport{
		req:       store.NewRuntimeSession{ID: s.ID, AgentAlias: s.AgentAlias, WorkspaceDir: s.WorkspaceDir, ChatMode: s.ChatMode, OwnerID: s.OwnerID},
		overrides: s.Overrides,
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
	}
	return imp, nil
}

// importRuntime inserts the session, sets its overrides and stores its
// uploads (the store verifies each against its SHA-256).
func importRuntime(ctx context.Context, rt store.Runtime, imp rtImport) error {
	if _, err := rt.Insert(ctx, imp.req); err != nil {
		return err
	}
	o := imp.overrides
	if o.Model != nil || o.Provider != nil || o.Temperature != nil {
		if _, err := rt.SetOverrides(ctx, imp.req.ID, o); err != nil {
			return err
		}
	}
	for _, u := range imp.uploads {
		if _, err := rt.PutUpload(ctx, u); err != nil {
			return fmt.Errorf("upload %s: %w", u.RefID, err)
		}
	}
	return nil
}
