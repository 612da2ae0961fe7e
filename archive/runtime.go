package archive

// Runtime sessions: the session's fields, its model overrides, its turn's
// generation, and its uploads with their content.

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/agentstore/sessionstore/store"
)

var runtimeSection = section{
	key:     "runtime_sessions",
	export:  exportRuntimeSessions,
	restore: restoreRuntime,
}

// RuntimeSession is one runtime session in an export document. Its times,
// its uploads' times and its turn's generation, start and owner are
// restored; the turn is not running after an import (a turn belongs to
// the process that ran it; the destination's generation counter moves
// past it).
type RuntimeSession struct {
	Session store.RuntimeSession `json:"session"`
	Uploads []UploadContent      `json:"uploads"`
	// DataKey names the data key that seals an encrypted session's
	// content (sealed_runtime.go); empty for a plaintext session.
	DataKey string `json:"data_key,omitempty"`
}

// UploadContent is one upload with its content in base64.
type UploadContent struct {
	store.Upload
	ContentBase64 string `json:"content_base64"`
}

// exportRuntimeSessions writes every runtime session, or those of x.ids.
func exportRuntimeSessions(ctx context.Context, x *exporter) error {
	rt := x.st.Runtime()
	list := func(cursor string) (store.Page[string], error) {
		return rt.ListIDs(ctx, store.ListIDsRequest{After: cursor, Limit: store.MaxPageSize})
	}
	return items(ctx, x, "runtime_sessions", list, func(ctx context.Context, id string) (RuntimeSession, error) {
		r, err := readRuntime(ctx, rt, id)
		if err == nil && r.Session.DataKeyID != "" { // sealed_runtime.go: never in plaintext
			err = r.seal(ctx, x.keys, r.Session.DataKeyID)
		}
		return r, err
	})
}

// readRuntime reads runtime session id with its uploads' content.
func readRuntime(ctx context.Context, rt store.Runtime, id string) (RuntimeSession, error) {
	var x RuntimeSession
	var err error
	if x.Session, err = rt.Get(ctx, id); err != nil {
		return x, err
	}
	x.Uploads = []UploadContent{}
	for u, err := range store.AllUploads(ctx, rt, id) {
		if err != nil {
			return x, err
		}
		u, content, err := rt.ReadUpload(ctx, id, u.RefID)
		if err != nil {
			return x, err
		}
		x.Uploads = append(x.Uploads, UploadContent{Upload: u, ContentBase64: base64.StdEncoding.EncodeToString(content)})
	}
	return x, nil
}

// restoreRuntime reads the runtime sessions of a document and restores
// each with its times, overrides, turn generation and uploads.
func restoreRuntime(ctx context.Context, x *importer, in *jsonIn, _ int) error {
	seen := map[string]bool{}
	return in.array(func(i int) error {
		var r RuntimeSession
		if err := in.decode(&r); err != nil {
			return err
		}
		if err := r.open(ctx, x.keys); err != nil { // sealed_runtime.go
			return err
		}
		rec, err := r.Record(fmt.Sprintf("runtime_sessions[%d]", i))
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

// Record checks r as the store would on import (uploads against their
// SHA-256), without writing, and returns it as a record to restore. field
// names r in errors; the error is an *InvalidInputError.
func (r *RuntimeSession) Record(field string) (store.RuntimeRecord, error) {
	s := r.Session
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
	for i, u := range r.Uploads {
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
		if _, err := put.CheckContent(store.MaxUploadLimit); err != nil {
			return rec, prefixInvalid(f, err)
		}
		rec.Uploads = append(rec.Uploads, store.UploadRecord{Upload: u.Upload, Content: content})
	}
	return rec, nil
}
